"""The diarization with the changes redrawn and with local speakers read (``speakers.local``), from
one pass over a recording, with the cues a per-recording choice reads (issue 45, item 3).

:func:`read` runs what ``speakers.diarize`` runs (VAD, CAM++ windows, clustering, closer look,
changes redrawn by segmentation-3.0) and what its local-speakers step adds (the model's
window-local speakers embedded and given global speakers, a second voice added where the model
counts two), sharing every step they have in common; ``sets.py`` picks between the two per
recording by the pipeline's own rule (``local.hears_overlap``). The segmentation model is run on
every file here, one speaker found or not (the service runs it only where clustering finds two or
more), so that the cues exist for every file; its CPU is counted only where the service runs it.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers import closer  # noqa: E402
from transcription.pipeline.speakers import local as local_speakers  # noqa: E402
from transcription.pipeline.speakers.closer import closer_turns, turn_centroids, unsure_spans  # noqa: E402
from transcription.pipeline.speakers.encoding.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.encoding.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoding.encoders import SpeakerEncoder  # noqa: E402
from transcription.pipeline.speakers.segmentation import (  # noqa: E402
    POWERSET_SPEAKERS,
    SpeakerActivity,
    default_segmentation,  # noqa: E402
)
from transcription.pipeline.speakers.speech import find_speech  # noqa: E402
from transcription.pipeline.types import SpeakerTurn  # noqa: E402

FRAME_STEP_S = 270 / 16000
LOCAL_TALK_S = 1.0  # a window's local speaker "is heard" when it talks this long in the window


@dataclass
class Readings:
    """One recording's outputs and cues."""

    service: list[SpeakerTurn]
    local: list[SpeakerTurn]
    cues: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)  # process seconds: service, local (each whole)


def cues(activity: SpeakerActivity) -> dict[str, float]:
    """What the segmentation windows hear, independent of the windows' numbering: the share of
    windows with three local speakers each talking LOCAL_TALK_S or more, the windows' mean number
    of such speakers, and the share of the model's speech frames it hears two voices in."""
    talking = POWERSET_SPEAKERS[activity.probabilities.argmax(axis=2)] > 0  # (windows, frames, 3)
    heard = (talking.sum(axis=1) * FRAME_STEP_S >= LOCAL_TALK_S).sum(axis=1)  # per window
    classes = activity.frame_classes()
    speech = classes.speech >= 0.5
    overlap = (classes.overlap >= 0.5) & speech
    return {
        "three_local": round(float((heard >= 3).mean()), 4),
        "mean_local": round(float(heard.mean()), 4),
        "overlap_share": round(float(overlap.sum() / max(1, speech.sum())), 4),
    }


def read(
    wav_path: Path,
    encoder: SpeakerEncoder,
    reading: local_speakers.LocalReading | None = None,
    speakers_given: int | None = None,
) -> Readings:
    """The turns with the changes redrawn ("service") and with local speakers read too ("local",
    ``reading``, default the pipeline's) of one recording, with the cues; ``speakers_given``: the
    clustering told the count (an oracle)."""
    reading = reading or local_speakers.LocalReading()
    cpu = time.process_time()
    with single_threaded_blas():
        activity = find_speech(wav_path)
        regions, extent = activity.for_diarization(), activity.for_turns()
        segmentation = default_segmentation()
        assert segmentation is not None
        if not regions:
            return Readings([], [], cues(segmentation.activity_of_wav(wav_path)), {"service": 0.0, "local": 0.0})
        emb, windows, pieces = embed_regions(wav_path, regions, encoder)
        turns = speakers.turns_from_embeddings(
            emb,
            windows,
            pieces,
            extent,
            merge_similarity=encoder.merge_similarity,
            small_split_similarity=encoder.small_split_similarity,
            between_similarity=encoder.between_similarity,
            speakers=speakers_given,
        )
        base_cpu = time.process_time() - cpu
        seg_cpu = time.process_time()
        speaking = segmentation.activity_of_wav(wav_path)
        seg_cpu = time.process_time() - seg_cpu
        found = cues(speaking)
        if len({t.speaker for t in turns}) < 2:
            return Readings(turns, turns, found, {"service": base_cpu, "local": base_cpu})
        cpu = time.process_time()
        centres = turn_centroids(emb, windows, turns)
        looked_at = unsure_spans(emb, windows, centres)
        short_emb, short_windows, _ = embed_regions(
            wav_path, regions, encoder, size=closer.SIZE_FRAMES, hop=closer.HOP_FRAMES, only=looked_at
        )
        clustered = turns  # the local speakers redraw these, without the closer look first
        turns = closer_turns(turns, centres, emb, windows, pieces, short_emb, short_windows, extent)
        service = local_speakers.refine_turns(turns, emb, windows, speaking, None, extent, None)
        shared_cpu = base_cpu + seg_cpu + time.process_time() - cpu
        cpu = time.process_time()
        local = local_speakers.local_speakers(wav_path, speaking, encoder)
        with_local = local_speakers.refine_turns(clustered, emb, windows, speaking, local, extent, reading)
        local_cpu = time.process_time() - cpu
    return Readings(service, with_local, found, {"service": shared_cpu, "local": shared_cpu + local_cpu})


def overlap_frames(
    reference: list[tuple[float, float, str]], hypothesis: list[SpeakerTurn], step: float = 0.01
) -> dict[str, float]:
    """Frame counts (10 ms): reference frames with two voices or more, how many of them the
    hypothesis gives two speakers or more; reference frames with one voice, how many of them it
    gives two or more (overlap heard where there is none)."""
    end = max([e for _, e, _ in reference] + [t.end for t in hypothesis] + [0.0])
    n = int(end / step) + 2
    ref, hyp = np.zeros(n, dtype=np.int32), np.zeros(n, dtype=np.int32)
    for s, e, _ in reference:
        ref[int(round(s / step)) : int(round(e / step))] += 1
    for t in hypothesis:
        hyp[int(round(t.start / step)) : int(round(t.end / step))] += 1
    return {
        "ref_overlap": int((ref >= 2).sum()),
        "given_two": int(((ref >= 2) & (hyp >= 2)).sum()),
        "ref_single": int((ref == 1).sum()),
        "false_two": int(((ref == 1) & (hyp >= 2)).sum()),
    }
