"""Speech recognition with faster-whisper: a slice of a 16 kHz mono WAV -> Transcript.

Nothing here knows about Django. Get the model from
``transcription.pipeline.recognition.whisper_model.load_model``.
"""

from __future__ import annotations

import logging
import math
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from transcription.pipeline.media.wav import SAMPLE_RATE, read_slice
from transcription.pipeline.recognition import language_id, repetition
from transcription.pipeline.recognition.languages import whisper_language
from transcription.pipeline.recognition.words import ends_sentence
from transcription.pipeline.types import Segment, Transcript, Word

if TYPE_CHECKING:  # pragma: no cover
    from faster_whisper import WhisperModel

__all__ = [
    "DEFAULT_BATCHED",
    "KEY_TERMS_BY",
    "VERBATIM_PROMPT",
    "RecognitionOptions",
    "merge",
    "transcribe",
]

# Chosen by bench/asr/rtf.py (base, int8, 2-core CPU, 5.4 min of speech): batched
# RTF 0.087 vs plain 0.219 (CPU s/audio s 0.082 vs 0.121), same WER. See bench/asr/README.md.
DEFAULT_BATCHED = True
DEFAULT_BATCH_SIZE = 8

# Prompt that makes Whisper keep fillers and disfluencies instead of cleaning them up.
VERBATIM_PROMPT = "Umm, let me think like, hmm... Okay, here's what I'm, like, thinking."

ProgressCallback = Callable[[float], None]


@dataclass(frozen=True)
class RecognitionOptions:
    """What a job asks of recognition, handed to :func:`transcribe` whole (the service builds it
    once per job: transcription.stages.pipeline_options.recognition_of).

    ``language``: None (detect), or an ISO 639-1/639-3 code (see ``languages.whisper_language``).
    ``verbatim`` asks Whisper to keep fillers ("um", "uh"). ``prompt`` is the client's text the
    recogniser should lean towards (names, jargon, spellings): Whisper's initial prompt, after the
    verbatim prompt when both are given. ``key_terms``: names and terms the customer's recording is
    full of, which recognition is biased towards (``KEY_TERMS_BY``). ``task``: "transcribe", or
    "translate" (to English)."""

    language: str | None = None
    verbatim: bool = False
    prompt: str = ""
    key_terms: tuple[str, ...] = ()
    task: str = "transcribe"


# How a job's key terms reach the decoder: "hotwords" (faster-whisper's hotwords: the terms before
# the prompt of every window), "prompt" (the terms after the initial prompt, which Whisper keeps the
# last 223 tokens of) or "both". The prompt, measured by bench/asr/key_terms.py (held out: terms
# right 90% of sentences against 5% without; the other words no worse, where hotwords made them
# worse; docs/decisions/speech-and-text.md, "Key terms").
KEY_TERMS_BY = "prompt"
KEY_TERMS_WAYS = ("hotwords", "prompt", "both")


def key_term_decoding(options: RecognitionOptions, by: str = KEY_TERMS_BY) -> dict[str, Any]:
    """The decoder's ``initial_prompt`` and ``hotwords`` for a job's verbatim, prompt and key terms."""
    if by not in KEY_TERMS_WAYS:
        raise ValueError(f"key terms go by one of {KEY_TERMS_WAYS}, not {by!r}")
    terms = ", ".join(term.strip() for term in options.key_terms if term.strip())
    parts = [VERBATIM_PROMPT if options.verbatim else "", options.prompt.strip()]
    if terms and by in ("prompt", "both"):
        parts.append(terms + ".")
    return {
        "initial_prompt": " ".join(part for part in parts if part) or None,
        "hotwords": terms if terms and by in ("hotwords", "both") else None,
    }


logger = logging.getLogger(__name__)

# Recovery of dropped speech (bench/asr/multilingual.py): a stretch of VAD speech this long with no
# recognised word in it (words widened by WORD_PAD_S each side), or a segment whose text compresses
# better than Whisper's own repetition limit, is decoded again plainly.
MIN_UNCOVERED_S = 1.0
WORD_PAD_S = 0.4
MAX_COMPRESSION_RATIO = 2.4
# a lost stretch is decoded again with this much of the audio around it, and only the words inside
# it are kept: a second of speech alone often gives Whisper too little to read anything
RECOVERY_CONTEXT_S = 1.0
# the seed of the recovery's sampled fallback decodings: the same job decodes the same way twice
RECOVERY_SEED = 54
# a run of this many turns is decoded again (the decoding that says more is kept, so a real "no, no,
# no" costs a decoding and stays); only more than repetition.MAX_TURNS is a loop that is cut
LOOK_AGAIN_TURNS = 2
# the pauses a looping stretch is cut at for its third decoding (between sentences, read or spoken)
RECOVERY_PAUSE_S = 0.5
PROMPT_CHARS = 200  # of the text before a stretch decoded again, given as its prompt
RECOVERY_PIECE_S = 2.0  # and joined into pieces this long at least: Whisper reads little in less
# Where the recovery looks for speech without words when no speech is handed in: Silero's regions
# split at pauses from this long, as the job's VAD pass reads them (speakers.speech.RECOGNITION_REGIONS).
# Not Whisper's own regions (joined over pauses under 2 s, and run on to the end of a file that ends
# in a shorter pause): their pauses, wordless, were decoded again with the text before as the prompt,
# and Whisper, given silence and a prompt, says the prompt again (bench/live: a sentence repeated
# after the last pause of every recording; docs/decisions/speech-and-text.md, "Nothing dropped").
SPEECH_PAUSE_S = 0.16


def _convert(seg: Any, offset: float) -> Segment:
    words = []
    last = None
    for w in seg.words or []:
        ws = round(float(w.start) + offset, 3)
        we = round(float(w.end) + offset, 3)
        if last is not None and ws < last:  # keep words monotonic
            ws = last
        we = max(we, ws)
        words.append(Word(start=ws, end=we, text=w.word, probability=round(float(w.probability), 4)))
        last = we
    s = round(float(seg.start) + offset, 3)
    e = round(float(seg.end) + offset, 3)
    if words:  # make the segment cover its words
        s = min(s, words[0].start)
        e = max(e, words[-1].end)
    return Segment(start=s, end=e, text=seg.text.strip(), words=words)


def _split_sentences(seg: Segment) -> list[Segment]:
    """Split a long segment after words that end a sentence (using word timestamps)."""
    pieces: list[list[Word]] = [[]]
    for i, w in enumerate(seg.words):
        pieces[-1].append(w)
        if ends_sentence(w.text) and i < len(seg.words) - 1:
            pieces.append([])
    if len(pieces) < 2:
        return [seg]
    return [
        Segment(start=ws[0].start, end=ws[-1].end, text="".join(w.text for w in ws).strip(), words=ws) for ws in pieces
    ]


# Speech handed in (``transcribe(speech=...)``) is read in clips of at most one Whisper window; a
# clip runs on over pauses shorter than faster-whisper's own min_silence_duration_ms (2 s).
MAX_CLIP_SECONDS = 29.9
MAX_CLIP_PAUSE = 2.0


def _speech_clips(speech: Sequence[tuple[float, float]], offset: float, duration: float) -> list[tuple[float, float]]:
    """The speech regions (absolute seconds) that fall in the slice, relative to it, joined over
    short pauses into clips of at most MAX_CLIP_SECONDS (a longer region is cut evenly)."""
    clips: list[tuple[float, float]] = []
    for region_start, region_end in sorted(speech):
        start, end = max(0.0, region_start - offset, clips[-1][1] if clips else 0.0), min(duration, region_end - offset)
        if end <= start:
            continue
        if clips and start - clips[-1][1] <= MAX_CLIP_PAUSE and end - clips[-1][0] <= MAX_CLIP_SECONDS:
            clips[-1] = (clips[-1][0], end)
            continue
        pieces = math.ceil((end - start) / MAX_CLIP_SECONDS)
        step = (end - start) / pieces
        clips.extend((start + k * step, start + (k + 1) * step) for k in range(pieces))
    # To the millisecond, never past the slice's last whole millisecond nor overlapping: faster-whisper
    # 1.2.1's BatchedInferencePipeline logs "VAD filter removed %s of audio" with
    # format_timestamp(duration - the clips' summed lengths), which asserts that it is not negative,
    # so a clip ending 0.4 ms after the audio (4.8646 s rounded up to 4.865) failed the job with an
    # AssertionError (issue 41). For upstream (faster_whisper/transcribe.py, both transcribe
    # methods): that log line should clamp at zero, or sum the audio each clip actually holds.
    last = math.floor(duration * 1000) / 1000
    rounded = [(min(round(s, 3), last), min(round(e, 3), last)) for s, e in clips]
    return [(s, e) for s, e in rounded if e > s]


def transcribe(
    model: WhisperModel,
    wav_path: str | os.PathLike[str],
    *,
    start: float = 0.0,
    end: float | None = None,
    options: RecognitionOptions = RecognitionOptions(),
    batched: bool = DEFAULT_BATCHED,
    batch_size: int = DEFAULT_BATCH_SIZE,
    beam_size: int = 5,
    on_progress: ProgressCallback | None = None,
    recover_dropped: bool = True,
    speech: Sequence[tuple[float, float]] | None = None,
    key_terms_by: str = KEY_TERMS_BY,
) -> Transcript:
    """Transcribe (or, with ``options.task="translate"``, translate to English) part of a WAV.

    ``wav_path`` must be 16 kHz mono s16le. Only ``[start, end)`` seconds are read;
    timestamps in the result are absolute (relative to the start of the file).
    ``options`` (:class:`RecognitionOptions`): the job's language, verbatim, prompt and task.
    ``on_progress(fraction)`` is called as segments arrive with the fraction of the
    slice covered so far, and with 1.0 at the end.

    ``speech`` is where the job's one VAD pass found speech in the whole file (absolute seconds,
    ``speakers.speech.SpeechActivity.for_recognition``): only that is read, and Whisper's own VAD
    does not run again. None: Whisper's VAD finds the speech in the slice.

    ``Transcript.language`` is the language used (detected or given, Whisper code), with
    ``Transcript.language_probability`` when detected (``language_id.detect_language``: an unsure
    first look is followed by several windows); ``Transcript.duration`` is the length of the slice
    actually read, in seconds.

    ``recover_dropped`` decodes again, plainly, any stretch of speech that came back without words
    and any segment caught in a repetition loop: batched decoding reads each VAD chunk once, and
    when Whisper ends a chunk early (or loops) the rest of its speech is lost without a trace.

    ``key_terms_by``: how ``options.key_terms`` reach the decoder (:func:`key_term_decoding`); the
    bench compares the ways, the service keeps ``KEY_TERMS_BY``.
    """
    language, verbatim, task = options.language, options.verbatim, options.task
    if task not in ("transcribe", "translate"):
        raise ValueError(f"task must be 'transcribe' or 'translate', not {task!r}")
    lang = whisper_language(language) if language else None

    audio = read_slice(wav_path, start, end)
    offset = round(max(0.0, start) * SAMPLE_RATE) / SAMPLE_RATE  # as read_slice
    duration = len(audio) / SAMPLE_RATE
    clips = None if speech is None else _speech_clips(speech, offset, duration)
    if len(audio) == 0 or clips == []:
        if on_progress:
            on_progress(1.0)
        return Transcript(language=lang or "", duration=round(duration, 3), segments=[])

    probability = None
    if speech is not None:  # the job's one VAD pass already found the speech: its regions in this slice
        regions = heard = [
            (round(max(0.0, s - offset) * SAMPLE_RATE), round(min(duration, e - offset) * SAMPLE_RATE))
            for s, e in speech
            if min(duration, e - offset) > max(0.0, s - offset)
        ]
    else:  # Whisper's regions for the detection; the voice itself for the recovery (SPEECH_PAUSE_S)
        regions = language_id.speech_regions(audio) if not lang else []
        heard = language_id.speech_regions(audio, min_silence_s=SPEECH_PAUSE_S) if recover_dropped else []
    if not lang and model.model.is_multilingual:
        detection = language_id.detect_language(model, audio, regions=regions)
        lang, probability = detection.language, detection.probability
        logger.info(
            "Spoken language %s (probability %.2f) decided over %d window(s)", lang, probability, detection.windows
        )

    decoding: dict[str, Any] = dict(
        language=lang,
        task=task,
        beam_size=beam_size,
        word_timestamps=True,
        vad_filter=True,
        **key_term_decoding(options, key_terms_by),
    )
    if clips is not None:
        decoding["vad_filter"] = False
        if batched:
            decoding["clip_timestamps"] = [{"start": start, "end": end} for start, end in clips]
        else:
            decoding["clip_timestamps"] = [t for clip in clips for t in clip]
    if batched:
        from faster_whisper import BatchedInferencePipeline

        # Batched mode yields one segment per VAD chunk (up to 30 s); we split those
        # at sentence ends below. Do NOT pass without_timestamps=False here: with
        # faster-whisper 1.2.1 it silently drops the last sentence of every chunk.
        segments_iter, info = BatchedInferencePipeline(model).transcribe(audio, batch_size=batch_size, **decoding)
    else:
        segments_iter, info = model.transcribe(audio, **decoding)

    segments: list[Segment] = []
    done = 0.0
    for seg in segments_iter:
        converted = _convert(seg, offset)
        segments.extend(_split_sentences(converted) if batched else [converted])
        if on_progress:
            done = max(done, min(1.0, float(seg.end) / duration))
            on_progress(done)
    if recover_dropped:  # twice: a plain decoding of a lost stretch can itself leave a gap
        for _ in range(2):
            segments = _recover_dropped(model, audio, offset, segments, heard, decoding, verbatim)
    if on_progress:
        on_progress(1.0)

    return Transcript(
        language=info.language or lang or "",
        duration=round(duration, 3),
        segments=segments,
        language_probability=probability,
    )


def _compression_ratio(text: str) -> float:
    data = text.encode("utf-8")
    return len(data) / len(zlib.compress(data)) if data else 0.0


def uncovered_speech(
    regions: list[tuple[float, float]], segments: list[Segment], pad: float = WORD_PAD_S
) -> list[tuple[float, float]]:
    """Stretches of speech (seconds) that no recognised word, widened by ``pad``, touches."""
    words = sorted((w.start - pad, w.end + pad) for seg in segments for w in seg.words)
    gaps = []
    for start, end in regions:
        cursor = start
        for ws, we in words:
            if we <= cursor or ws >= end:
                continue
            if ws > cursor:
                gaps.append((cursor, ws))
            cursor = max(cursor, we)
        if cursor < end:
            gaps.append((cursor, end))
    return gaps


def _loops(seg: Segment, max_turns: int = repetition.MAX_TURNS) -> bool:
    """Whether a segment is caught in a repetition loop: its text compresses better than Whisper's
    own limit, or holds a run of more than ``max_turns`` turns (a short loop at the end of a long
    segment, "... 0-0-0-0-0-0", does not move the whole segment's compression ratio)."""
    return _compression_ratio(seg.text) > MAX_COMPRESSION_RATIO or repetition.has_loop(seg.text, max_turns)


def _confident_words(segments: Sequence[Segment]) -> float:
    """How much a decoding says once its loops are cut: its words' probabilities added up (the
    words it is likely right about; a loop, once cut, and garbage both add little). Cut from three
    turns on, as they are looked at again: "czy, co, jań" three times and a half must not outweigh
    the counting it replaced."""
    # a loop may run over segments ("Szyb! Szyb!"); a text that compresses like a loop says nothing,
    # even where its turns differ a little or are longer than the runs looked for (espeak Japanese)
    words = [w for seg in segments if _compression_ratio(seg.text) <= MAX_COMPRESSION_RATIO for w in seg.words]
    return sum(w.probability for w in repetition.cut_loops(words, max_turns=LOOK_AGAIN_TURNS))


def _pieces(regions: list[tuple[int, int]], shortest: float) -> list[float]:
    """The clips (seconds, flat) of speech regions joined until each is at least ``shortest`` long."""
    joined: list[list[int]] = []
    for start, end in regions:
        if joined and (joined[-1][1] - joined[-1][0]) / SAMPLE_RATE < shortest:
            joined[-1][1] = end
        else:
            joined.append([start, end])
    if len(joined) > 1 and (joined[-1][1] - joined[-1][0]) / SAMPLE_RATE < shortest:
        last = joined.pop()
        joined[-1][1] = last[1]
    return [t / SAMPLE_RATE for region in joined for t in region]


def _recover_dropped(
    model: Any,
    audio: Any,
    offset: float,
    segments: list[Segment],
    regions: Any,
    options: dict[str, Any],
    verbatim: bool = False,
) -> list[Segment]:
    """Decode again, plainly, the speech that came back without words or in a repetition loop."""
    import ctranslate2  # faster-whisper's own engine, loaded with the model

    speech = [(s / SAMPLE_RATE + offset, e / SAMPLE_RATE + offset) for s, e in regions]
    spans = [(a, b) for a, b in uncovered_speech(speech, segments) if b - a >= MIN_UNCOVERED_S]
    # three turns are decoded again (Polish: "czy, co, jań" three times and a half in place of the
    # counting); only more than three are cut below, where no decoding does better
    looping = [seg for seg in segments if _loops(seg, max_turns=LOOK_AGAIN_TURNS)]
    spans += [(seg.start, seg.end) for seg in looping]
    if not spans:
        return segments
    merged: list[list[float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])

    logger.info("Decoding again without batching: %s", ", ".join(f"{a:.1f}-{b:.1f} s" for a, b in merged))
    kept = list(segments)
    for start, end in merged:
        if end - start < 0.25:
            continue
        first = max(0, round((start - RECOVERY_CONTEXT_S - offset) * SAMPLE_RATE))
        last = min(len(audio), round((end + RECOVERY_CONTEXT_S - offset) * SAMPLE_RATE))
        # a short gap is all speech (VAD said so); a looping chunk may hold pauses
        vad = end - start > 5
        # the stretch and its surroundings, from their start: not the clips the first decoding was
        # given. Up to three decodings, and the one that says more (the most word probability once
        # loops are cut) is kept (docs/decisions/speech-and-text.md, "The recovery rule"):
        # - as the bare library decodes sequentially: temperature fallback where the text compresses
        #   too well, the previous text as the prompt. It is what escapes most loops (Polish: the
        #   pangram and the greeting that batched decoding and the decoding below both lost), and
        #   its sampled draws are seeded, so a job decodes the same each time on one machine;
        # - no three tokens twice, at temperature 0: a loop is cut where it starts instead of
        #   falling back to sampling, whose random draws left a lost second in one decoding of
        #   eight (tests/pipeline/test_multilingual_asr.py).
        plain = {name: value for name, value in options.items() if name != "clip_timestamps"}
        piece = audio[first:last]
        candidates = []
        # - each stretch between pauses of RECOVERY_PAUSE_S on its own, when there are several: a
        #   loop then cannot run on over the sentences after it (Polish with a long pause: the
        #   counting lost in both decodings above, kept here)
        pauses = language_id.speech_regions(piece, min_silence_s=RECOVERY_PAUSE_S, pad_s=0.1)
        pieces = _pieces(pauses, RECOVERY_PIECE_S)
        # the first, as the bare library would have it, with the text before the stretch as its prompt
        # (it reads a sentence better after the one before: Polish counting after a long pause)
        before = " ".join(seg.text for seg in kept if seg.end <= start and seg not in looping)[-PROMPT_CHARS:]
        prompt = " ".join(p for p in (plain.get("initial_prompt") or "", before.strip()) if p) or None
        variants: list[dict[str, Any]] = [
            {"vad_filter": vad, "initial_prompt": prompt},
            {"vad_filter": vad, "no_repeat_ngram_size": 3},
        ]
        variants[-1]["temperature"] = 0.0
        if len(pieces) > 2:
            variants.append({"vad_filter": False, "clip_timestamps": pieces, "condition_on_previous_text": False})
        for extra in variants:
            ctranslate2.set_random_seed(RECOVERY_SEED)
            found, _ = model.transcribe(piece, **{**plain, **extra})
            new = [_words_within(_convert(seg, offset + first / SAMPLE_RATE), start, end) for seg in found]
            candidates.append([seg for seg in new if seg and _compression_ratio(seg.text) <= MAX_COMPRESSION_RATIO])
        fresh = max(candidates, key=_confident_words)  # the first of equals: the bare library's way
        inside = [seg for seg in kept if seg in looping and start <= seg.start and seg.end <= end]
        # a looping segment gives way to the new decoding when that says more; never fewer words
        if fresh and _confident_words(fresh) >= _confident_words(inside):
            kept = [seg for seg in kept if seg not in inside] + fresh
    # what still loops (Whisper loops there in every mode) keeps one turn of each repetition
    # (from three turns where the text compresses like a loop, as before issue 54; else more than three)
    kept = [
        _without_repetition(seg, verbatim=verbatim, max_turns=LOOK_AGAIN_TURNS)
        if _compression_ratio(seg.text) > MAX_COMPRESSION_RATIO
        else _without_repetition(seg, verbatim=verbatim)
        if _loops(seg)
        else seg
        for seg in kept
    ]
    kept = sorted((seg for seg in kept if seg.words or seg.text), key=lambda seg: seg.start)
    return repetition.cut_segment_loops(kept, verbatim=verbatim)  # and a loop of whole segments


def _words_within(seg: Segment, start: float, end: float) -> Segment | None:
    """The part of ``seg`` whose words have their middle in [start, end]; None if no word has."""
    words = [w for w in seg.words if start <= (w.start + w.end) / 2 <= end]
    if not words:
        return None
    if len(words) == len(seg.words):
        return seg
    text = "".join(w.text for w in words).strip()
    return Segment(start=words[0].start, end=words[-1].end, text=text, words=words, speaker=seg.speaker)


def _without_repetition(seg: Segment, verbatim: bool = False, max_turns: int = repetition.MAX_TURNS) -> Segment:
    """The segment with each loop cut to its first turn ("4, 5, 4, 5, 4, 5, 4, 5" -> "4, 5"):
    a transcript must not carry a hundred copies of what Whisper could not read
    (``repetition.cut_loops``)."""
    kept = repetition.cut_loops(seg.words, verbatim=verbatim, max_turns=max_turns)
    if not kept:
        return seg
    text = "".join(w.text for w in kept).strip()
    return Segment(start=seg.start, end=max(kept[-1].end, seg.start), text=text, words=kept, speaker=seg.speaker)


def merge(parts: list[Transcript]) -> Transcript:
    """Join the transcripts of consecutive chunks of one file (timestamps are already absolute).

    The language is the one detected for most of the audio.
    """
    if not parts:
        return Transcript(language="", duration=0.0, segments=[])
    by_language: dict[str, float] = {}
    for part in parts:
        by_language[part.language] = by_language.get(part.language, 0.0) + part.duration
    language = max(by_language, key=lambda code: by_language[code])
    # its probability: the mean over the chunks that found it, weighted by their length
    found = [(p.language_probability, p.duration) for p in parts if p.language == language and p.language_probability]
    weight = sum(d for _, d in found)
    return Transcript(
        language=language,
        duration=round(sum(part.duration for part in parts), 3),
        segments=[segment for part in parts for segment in part.segments],
        language_probability=round(sum(p * d for p, d in found) / weight, 4) if weight else None,
    )
