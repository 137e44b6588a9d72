"""The ranges CAM++'s convolutions are run in 8-bit integers with, measured on the calibration half.

    nice -n 10 .venv/bin/python bench/speakers/calibrate_int8.py

The service quantizes CAM++'s convolutions (weights per channel, inputs per tensor) with
onnxruntime's own static quantizer (``onnxruntime.quantization.quantize_static``); the inputs'
ranges come from its calibration cache file, committed beside the encoder
(``campplus.INT8_RANGES``), so nothing is measured at run time. This script writes that file: it
runs ``speakers.diarize`` as the service does (local speakers too, ``overlap=True``) on the
calibration half of the two-voice set and of the meeting set, keeps every batch the encoder is
given (the 1.5 s windows, the closer look's 0.75 s ones, the local speakers' stretches: all the
shapes the service feeds it), and hands every fourth to onnxruntime's MinMax calibrator. The test
half is never read. Then it prints how close the 8-bit embeddings of the test half's windows are
to the float ones (cosine). bench/speakers/sets.py and speed.py score the result.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from bench.speakers.dataset import build  # noqa: E402
from bench.speakers.meeting import build_meeting  # noqa: E402
from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.speakers.encoding import campplus  # noqa: E402
from transcription.pipeline.speakers.encoding.weights import load_torch_state_dict  # noqa: E402

KEEP_EVERY = 4  # of the batches the encoder is given, the ones calibrated on


class Recorder:
    """An onnxruntime session's stand-in that runs the float graph and keeps the batches it is given."""

    def __init__(self, session):
        self.session = session
        self.batches: list[np.ndarray] = []

    def run(self, outputs, feeds):
        self.batches.append(np.array(feeds["fbank"]))
        return self.session.run(outputs, feeds)

    def __getattr__(self, name):
        return getattr(self.session, name)


def recorded_batches(wavs: list[Path]) -> list[np.ndarray]:
    encoder = campplus.CamPlusPlus(int8=False)
    recorder = Recorder(encoder.session)
    encoder.session = recorder
    for wav in wavs:
        # one thread: the batches come in one order every run, so every fourth is the same fourth
        speakers.diarize(wav, encoder=encoder, overlap=True, options=speakers.SpeakerOptions(threads=1))
        print(wav.name, len(recorder.batches), flush=True)
    return recorder.batches


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench-speakers"))
    parser.add_argument("--seed", type=int, default=12)
    args = parser.parse_args()

    from onnxruntime.quantization import CalibrationDataReader

    two = build(args.out / "calibration", half="calibration", seed=args.seed, per_condition=5, long_files=1)
    meetings = build_meeting(args.out / "meeting-calibration", half="calibration", seed=args.seed, files=16)
    batches = recorded_batches([item.wav for item in [*two, *meetings]])[::KEEP_EVERY]
    print(f"calibrating on {len(batches)} batches, {sum(len(b) for b in batches)} windows", flush=True)

    class Batches(CalibrationDataReader):
        def __init__(self) -> None:
            self.left = iter(batches)

        def get_next(self):
            batch = next(self.left, None)
            return None if batch is None else {"fbank": batch}

    campplus.INT8_RANGES.unlink(missing_ok=True)
    graph = campplus.build_campplus_graph(load_torch_state_dict(campplus.find_campplus_weights()))
    with tempfile.TemporaryDirectory() as tmp:
        campplus.quantize(graph.SerializeToString(), campplus.INT8_RANGES, Batches(), Path(tmp))
    print("wrote", campplus.INT8_RANGES)

    # how near the 8-bit embeddings are to the float ones, on the test half's meetings
    test = build_meeting(args.out / "meeting-test", half="test", seed=args.seed, files=16)
    grid = [b for b in recorded_batches([item.wav for item in test[:4]]) if b.shape[1] == 150]
    windows = np.concatenate(grid)[:400]
    fp32 = campplus.CamPlusPlus(int8=False).embed_frames(windows)
    int8 = campplus.CamPlusPlus(int8=True).embed_frames(windows)
    cosine = (fp32 * int8).sum(axis=1)
    print(
        f"test half, {len(windows)} windows: cosine of 8-bit to float embeddings min {cosine.min():.3f}, "
        f"5th percentile {np.percentile(cosine, 5):.3f}, median {np.median(cosine):.3f}"
    )


if __name__ == "__main__":
    main()
