"""Diarization in a process of its own, at the lowest priority, while the caller recognises speech.

In a thread beside recognition, diarization slowed it by 0.7-1.4 s of about 20 (bench/asr/pipeline.py):
the encoder's numpy LSTM runs its steps in Python and the two threads queue for one GIL, whatever
their nice values. A child process shares no GIL and, at nice 19, takes only the CPU recognition
leaves idle (at nice 10 it still cost recognition about 0.9 s); under SCHED_IDLE as well, a
recognition thread that wakes up takes its CPU back at once (docs/decisions.md, "Performance").
The child is a plain ``python -m`` of ``apart_child`` (a Celery pool process is daemonic and may not
start multiprocessing children): the request goes in as two lines of JSON on stdin (a pipe), the
turns come back as JSON on stdout, and its messages go to a file, so no pipe fills up while nobody
reads it. The first line (the WAV, the weights) goes in at once; the second (where the speech is)
with ``diarize()``: the child starts before the caller's VAD pass, which runs on one core, and
imports and loads its encoder on the other meanwhile instead of in the CPU recognition leaves idle.

Once recognition is done, nothing is left to protect: ``turns()`` first tries to give the child
back the caller's policy and priority. A worker that may not lower a nice value (not root, no
CAP_SYS_NICE, RLIMIT_NICE 0) leaves it where it was, where it still runs on any idle CPU.

    with DiarizationApart(wav) as apart:
        activity = find_speech(wav)  # meanwhile the child gets ready
        apart.diarize(regions=..., extent=...)
        ...  # recognition
        turns = apart.turns(timeout=600)
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from transcription.pipeline.speakers.encoding import weight_files
from transcription.pipeline.speakers.encoding.weight_files import SpeakerWeightsMissing

from ..types import SpeakerTurn
from .options import NO_OPTIONS, SpeakerOptions

logger = logging.getLogger(__name__)
# The child's entry point: a module of its own, since it imports the package, which imports this one.
CHILD_MODULE = f"{__package__}.apart_child"

NICE = 19  # while recognition runs: only the CPU it leaves idle
PROJECT_ROOT = Path(__file__).resolve().parents[3]  # where `transcription` is imported from


def diarization_timeout(audio_seconds: float) -> float:
    """How long ``turns()`` may wait. Diarization alone runs at about 1/150 of real time on 2 cores
    (bench/asr/pipeline.py): what is left of it once recognition is done gets far more than it
    needs."""
    return 120 + audio_seconds / 4


class DiarizationFailed(RuntimeError):
    """The speakers could not be told apart. The message is written for the client (the job's
    error); ``detail`` holds the child's own last messages, which also go to the worker's log."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


class DiarizationApart:
    """Starts ``speakers.diarize`` in a child process; ``turns()`` waits for its answer. Leaving the
    ``with`` block kills a child that is still running (an error in recognition, a stopping worker).
    ``options``: the encoder's weights, the models' threads, and ``graphs``: a directory where the
    child keeps the models' ONNX graphs (:mod:`.graph_cache`), so that only the first child builds them."""

    def __init__(
        self,
        wav_path: str | os.PathLike[str],
        *,
        regions: Sequence[tuple[float, float]] | None = None,
        extent: Sequence[tuple[float, float]] | None = None,
        options: SpeakerOptions = NO_OPTIONS,
    ):
        weights, graphs = options.weights, options.graphs
        self.setup = json.dumps(
            {
                "wav": os.fspath(wav_path),
                "weights": os.fspath(weights) if weights else None,
                "weights_dir": os.fspath(weight_files.weights_dir()),  # the child has no Django
                "threads": options.threads,
                "graphs": os.fspath(graphs) if graphs else None,
            }
        ).encode()
        # given here: sent as soon as the child starts; else by diarize()
        self.speech = None if regions is None else (regions, regions if extent is None else extent)
        self.process: subprocess.Popen[bytes] | None = None  # while inside the with block
        self.messages: IO[bytes] | None = None

    def __enter__(self) -> DiarizationApart:
        self.messages = tempfile.TemporaryFile()
        path = os.pathsep.join(filter(None, [str(PROJECT_ROOT), os.environ.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [*_idle_policy(), "nice", "-n", str(NICE), sys.executable, "-m", CHILD_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.messages,
            env={**os.environ, "PYTHONPATH": path},
            process_group=0,  # its own group: one setpriority reaches all its threads (hurry)
        )
        self._send(self.setup + b"\n", close=False)
        if self.speech is not None:
            self.diarize(regions=self.speech[0], extent=self.speech[1])
        return self

    def diarize(self, *, regions: Sequence[tuple[float, float]], extent: Sequence[tuple[float, float]]) -> None:
        """Where the child's encoder listens (``regions``) and where it draws the turns (``extent``);
        it starts diarizing then."""
        speech = {"regions": [list(r) for r in regions], "extent": [list(r) for r in extent]}
        self._send(json.dumps(speech).encode() + b"\n", close=True)

    def _send(self, line: bytes, *, close: bool) -> None:
        process = self._child()[0]
        stdin = process.stdin
        if stdin is None:
            raise RuntimeError("the speech was given already")
        try:  # a long line blocks until the child, ready, reads it
            stdin.write(line)
            stdin.flush()
        except BrokenPipeError:  # the child has ended: turns() says why
            close = True
        if close:
            process.stdin = None  # told: communicate() in turns() has no stdin to flush
            try:
                stdin.close()
            except BrokenPipeError:  # closed all the same
                pass

    def _child(self) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
        """The child and the file of its messages, which exist inside the ``with`` block only."""
        if self.process is None or self.messages is None:
            raise RuntimeError("DiarizationApart is used inside a with block")
        return self.process, self.messages

    def hurry(self) -> bool:
        """Give the child (every thread of it) this process's policy and priority; False where not
        allowed."""
        pid = self._child()[0].pid
        policy = os.sched_getscheduler(0)
        try:
            for task in _threads(pid):  # a policy is per thread and has no process-group form
                try:
                    os.sched_setscheduler(task, policy, os.sched_param(0))
                except ProcessLookupError:  # that thread has just ended
                    pass
            os.setpriority(os.PRIO_PGRP, pid, os.getpriority(os.PRIO_PROCESS, 0))
        except PermissionError:
            return False
        except ProcessLookupError:  # the child has ended
            pass
        return True

    def turns(self, timeout: float) -> list[SpeakerTurn]:
        """The child's answer, waited for at most `timeout` seconds at the caller's priority."""
        process, messages = self._child()
        if process.stdin is not None:  # let go by diarize()
            raise RuntimeError("diarize() first: the child has not been told where the speech is")
        if process.poll() is None and not self.hurry():
            logger.info("diarization goes on at nice %d: this worker may not raise its priority", NICE)
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise DiarizationFailed(
                f"Telling the speakers apart took more than {timeout:.0f} s and was stopped. Please try again."
            ) from None
        if process.returncode != 0:
            messages.seek(0)
            tail = messages.read()[-2000:].decode(errors="replace")
            logger.error("diarization exited with %s: %s", process.returncode, tail)
            raise DiarizationFailed(f"The speakers could not be told apart. {_why(tail)}", detail=tail)
        return [SpeakerTurn(start=s, end=e, speaker=k) for s, e, k in json.loads(out)]

    def __exit__(self, *exc: object) -> None:
        process, messages = self._child()
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):  # closed here
            if pipe is not None and not pipe.closed:
                try:
                    pipe.close()
                except BrokenPipeError:  # a line the killed child never read
                    pass
        messages.close()


def _why(messages: str) -> str:
    """Why, for the client: the child's own words where its weights are missing (they are written
    for a client, :class:`.weight_files.SpeakerWeightsMissing`); else no traceback, only that the
    operator has it."""
    lines = messages.strip().splitlines()
    last = lines[-1] if lines else ""
    kind, _, message = last.partition(": ")
    if kind.endswith(SpeakerWeightsMissing.__name__):
        return message
    return "This server's speaker models failed; its operator has the details in the worker's log. Please try again."


@functools.cache
def _idle_policy() -> list[str]:
    """``chrt --idle 0`` where it works: the SCHED_IDLE policy is below nice 19, and a recognition
    thread that wakes up takes its CPU back at once instead of after the child's time slice. A
    machine without util-linux's chrt, or whose kernel or sandbox refuses the policy, gets nice 19
    alone rather than a child that cannot start."""
    chrt = shutil.which("chrt")
    if chrt is None:
        return []
    try:
        subprocess.run([chrt, "--idle", "0", "true"], check=True, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        logger.info("diarization runs at nice %d only: chrt --idle 0 does not work here", NICE)
        return []
    return [chrt, "--idle", "0"]


def _threads(pid: int) -> list[int]:
    try:
        return [int(task) for task in os.listdir(f"/proc/{pid}/task")]
    except FileNotFoundError:  # ended
        return []
