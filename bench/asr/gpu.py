"""The speech stage's work vs bare recognition, without Django: for a machine that has no PostgreSQL,
Redis or ffmpeg, such as the GPU machine lent to some sessions (issue 20, point 5).

``bench/asr/pipeline.py`` times the whole service (POST -> done through a real worker) on this VM.
A device machine has none of the servers that needs, and nothing can be installed there, so this
bench times the part of the pipeline that a GPU changes: what ``stages/transcribing._recognise`` and the
steps after it run, in the same order, on a WAV carried there (the one pipeline.py transcribes):

    DiarizationApart (child process, CPU) started -> find_speech (one VAD pass) -> the child diarizes beside
    asr.transcribe of each planned chunk -> turns -> assign_speakers -> clean_words -> captions

against a bare ``asr.transcribe(model, wav)`` with the same model, alternating ABBA. The media
stages before it (download, convert, upload: about 0.6 s for 5 minutes on the VM, see
results-pipeline.json) do not touch the model and are left out.

    python bench/asr/gpu.py --wav speech.wav --model base --device cuda --device cpu --out FILE

``--device cuda`` loads float16, ``--device cpu`` int8 on every core (whisper_model.load_model).
ratio = median stage seconds / median bare seconds, per device.

``--jobs 1 --jobs 4 --jobs 16`` measures several jobs sharing one device instead (issue 44, item 3),
as an asr worker of ``ASR_JOBS_AT_ONCE`` = N runs them: one model loaded with N replicas that share
its weights (a CUDA stream each), N threads each running the whole stage above on the WAV (its own
diarization child included), all started at once. Reported per N: the aggregate times real time
(N x audio / wall until the last ends) and each job's latency (the median is one job's beside N - 1
others).

    python bench/asr/gpu.py --wav speech.wav --device cuda --jobs 1 --jobs 4 --jobs 16 --out FILE
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from rtf import abba, wer, without_paragraph_heads  # noqa: E402

from transcription.pipeline import speakers  # noqa: E402
from transcription.pipeline.media import audio  # noqa: E402
from transcription.pipeline.media.wav import wav_duration  # noqa: E402
from transcription.pipeline.recognition import asr, whisper_model  # noqa: E402
from transcription.pipeline.transcripts.results import build_results  # noqa: E402

CHUNK_SECONDS = 600.0  # settings.RECOGNITION_CHUNK_SECONDS' default
GRAPHS = ROOT / "var" / "models" / "speakers"  # settings.MODEL_CACHE_DIR / "speakers", as the stage


def recognise_like_the_stage(model, wav: Path, weights: str | None, threads: int | None) -> tuple[dict, dict]:
    """What the speech stage runs for a job (stages/transcribing._recognise), minus its database writes."""
    parts: dict[str, float | None] = {}
    t = time.perf_counter()
    chunks = audio.plan_chunks(wav, max_chunk=CHUNK_SECONDS)
    with speakers.DiarizationApart(
        wav, options=speakers.SpeakerOptions(weights=weights, graphs=GRAPHS, threads=threads)
    ) as diarization:
        activity = speakers.speech.find_speech(wav)  # the child gets ready meanwhile
        diarization.diarize(regions=activity.for_diarization(), extent=activity.for_turns())
        parts["plan_and_vad_s"] = time.perf_counter() - t
        t = time.perf_counter()
        cpu = _process_cpu_s()
        transcript = asr.merge(
            [asr.transcribe(model, wav, start=s, end=e, speech=activity.for_recognition()) for s, e in chunks]
        )
        parts["recognition_s"] = time.perf_counter() - t
        # how much CPU recognition took beside the GPU, and how far the child got meanwhile (it runs
        # at the lowest priority until turns() hurries it)
        parts["recognition_cpu_s"] = _process_cpu_s() - cpu
        parts["child_cpu_s_at_recognition_end"] = _child_cpu_s(diarization.process)
        t = time.perf_counter()
        turns = diarization.turns(timeout=speakers.diarization_timeout(chunks[-1][1]))
        parts["diarization_wait_s"] = time.perf_counter() - t
    t = time.perf_counter()
    results = build_results(transcript.segments, turns, language=transcript.language)
    parts["captions_s"] = time.perf_counter() - t
    parts["speakers"] = len({turn.speaker for turn in turns})
    return results, parts


def _process_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _child_cpu_s(process: subprocess.Popen | None) -> float | None:
    """CPU seconds the child (all its threads) has used so far, from /proc."""
    if process is None:
        return None
    try:
        fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def bench_device(device: str, args, wav: Path, audio_s: float, reference: str | None) -> dict:
    t = time.perf_counter()
    model = whisper_model.load_model(args.model, args.cache_dir, device, cpu_threads=args.cpu_threads)
    load_s = time.perf_counter() - t
    asr.transcribe(model, wav, end=30.0)  # warm-up: the worker's model is warm too
    # and so are the speaker models' ONNX graphs: built under GRAPHS once (graph_cache), as a
    # worker's first job builds them
    recognise_like_the_stage(model, wav, args.weights, args.speaker_threads)
    order = abba(args.rounds, "stage", "bare")
    runs: dict[str, list[dict]] = {"stage": [], "bare": []}
    for name in order:
        t = time.perf_counter()
        if name == "bare":
            transcript = asr.transcribe(model, wav)
            run: dict[str, Any] = {"text": " ".join(s.text for s in transcript.segments)}
        else:
            results, parts = recognise_like_the_stage(model, wav, args.weights, args.speaker_threads)
            run = {"text": results["txt"], "parts": {k: round(v, 2) for k, v in parts.items()}}
        run["seconds"] = time.perf_counter() - t
        run["loadavg_1m"] = round(os.getloadavg()[0], 2)
        runs[name].append(run)
        print(f"{device} {name}: {run['seconds']:.2f} s {run.get('parts', '')}", flush=True)
    stage_s = statistics.median(r["seconds"] for r in runs["stage"])
    bare_s = statistics.median(r["seconds"] for r in runs["bare"])
    result = {
        "compute_type": "float16" if device == "cuda" else "int8",
        "model_load_s": round(load_s, 2),
        "order": order,
        "stage_runs_s": [round(r["seconds"], 2) for r in runs["stage"]],
        "bare_runs_s": [round(r["seconds"], 2) for r in runs["bare"]],
        "stage_parts": [r["parts"] for r in runs["stage"]],
        "loadavg_1m": {name: [r["loadavg_1m"] for r in runs[name]] for name in runs},
        "stage_s": round(stage_s, 2),
        "bare_s": round(bare_s, 2),
        "ratio": round(stage_s / bare_s, 3),
        "bare_times_real_time": round(audio_s / bare_s, 1),
        "stage_times_real_time": round(audio_s / stage_s, 1),
    }
    if device == "cuda":  # while this process still holds the model and CTranslate2's cache
        result["gpu_memory_used"] = _nvidia_smi("memory.used")
    if reference:
        result["wer_stage"] = round(wer(reference, without_paragraph_heads(runs["stage"][-1]["text"])), 4)
        result["wer_bare"] = round(wer(reference, runs["bare"][-1]["text"]), 4)
    return result


def bench_jobs_at_once(device: str, args, wav: Path, audio_s: float, reference: str | None) -> dict:
    """N whole speech stages at once on one model loaded for N (the worker's threads), per N."""
    found: dict[str, Any] = {"compute_type": "float16" if device == "cuda" else "int8"}
    for jobs in args.jobs:
        model = whisper_model.load_model(
            args.model, args.cache_dir, device, cpu_threads=args.cpu_threads, jobs_at_once=jobs
        )
        recognise_like_the_stage(model, wav, args.weights, args.speaker_threads)  # warm, as a worker is
        wall, latencies, texts = _stages_at_once(model, jobs, wav, args)
        run: dict[str, Any] = {
            "wall_s": round(wall, 2),
            "aggregate_times_real_time": round(jobs * audio_s / wall, 1),
            "latency_s": {
                "median": round(statistics.median(latencies), 2),
                "max": round(max(latencies), 2),
                "min": round(min(latencies), 2),
            },
            "loadavg_1m": round(os.getloadavg()[0], 2),
        }
        if device == "cuda":
            run["gpu_memory_used"] = _nvidia_smi("memory.used")
        if reference:
            run["wer_max"] = round(max(wer(reference, without_paragraph_heads(text)) for text in texts), 4)
        found[str(jobs)] = run
        print(f"{device} {jobs} jobs at once: {run}", flush=True)
    return found


def _stages_at_once(model, jobs: int, wav: Path, args) -> tuple[float, list[float], list[str]]:
    """`jobs` threads, released together, each running the whole stage once: the wall time until the
    last ends, each one's latency and transcript."""
    latencies: list[float] = [0.0] * jobs
    texts: list[str] = [""] * jobs
    errors: list[BaseException] = []
    start = threading.Barrier(jobs + 1)

    def one_job(index: int) -> None:
        start.wait()
        t = time.perf_counter()
        try:
            results, _ = recognise_like_the_stage(model, wav, args.weights, args.speaker_threads)
            texts[index] = results["txt"]
        except BaseException as exc:  # raised below: a bench run must not hide a failed job
            errors.append(exc)
        latencies[index] = time.perf_counter() - t

    threads = [threading.Thread(target=one_job, args=(index,)) for index in range(jobs)]
    for thread in threads:
        thread.start()
    start.wait()
    t = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - t
    if errors:
        raise RuntimeError(f"{len(errors)} of {jobs} jobs failed") from errors[0]
    return wall, latencies, texts


def _nvidia_smi(fields: str) -> str | None:
    try:
        return subprocess.check_output(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"], text=True
        ).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wav", type=Path, required=True, help="16 kHz mono s16le WAV (pipeline.py's bare.wav)")
    parser.add_argument("--reference", type=Path, help="reference transcript (plain text) for WER")
    parser.add_argument("--model", default="base", help="WHISPER_MODEL value: base, tiny.en or a folder")
    parser.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--weights", help="speaker encoder weights (SPEAKER_ENCODER_WEIGHTS)")
    parser.add_argument("--device", action="append", choices=["cuda", "cpu"], help="repeat for several")
    parser.add_argument(
        "--speaker-threads", type=int, help="SPEAKER_THREADS (default: the service's, one per core up to 16)"
    )
    parser.add_argument(
        "--cpu-threads", type=int, help="CTranslate2's CPU threads (default: the service's, whisper_model.load_model)"
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--jobs", type=int, action="append", help="N jobs at once on one model (repeat: 1, 4, 16) instead of ABBA"
    )
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("results-gpu.json"))
    args = parser.parse_args()

    audio_s = wav_duration(args.wav)
    reference = args.reference.read_text() if args.reference else None
    result = {
        "model": args.model,
        "wav": args.wav.name,
        "speaker_threads": args.speaker_threads,
        "cpu_threads": args.cpu_threads,
        "audio_s": round(audio_s, 1),
        "machine": {
            "cpu_count": os.cpu_count(),
            "processor": platform.processor(),
            "gpu": _nvidia_smi("name,driver_version,memory.total"),
        },
        "summary": "median of each side's runs; stage = stages/transcribing._recognise's work without its database writes",
        "devices": {},
    }
    for device in args.device or ["cuda"]:
        bench = bench_jobs_at_once if args.jobs else bench_device
        result["devices"][device] = bench(device, args, args.wav, audio_s, reference)
        args.out.write_text(json.dumps(result, indent=2) + "\n")  # what is done survives a later failure
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
