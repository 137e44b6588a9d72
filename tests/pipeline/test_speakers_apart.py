"""Diarization in a process of its own (the speech stage's way): the same turns as diarize, at the
lowest priority, its errors reported, no child left behind, and nice 19 where SCHED_IDLE is refused."""

from __future__ import annotations

import os
import time
import wave
from pathlib import Path

import pytest

from harness import speaker_audio as sa
from tests.support import wait_until
from transcription.pipeline import speakers as sp
from transcription.pipeline.speakers import speech


def _nice_once_exec_done(pid: int) -> tuple[int, int]:
    # `chrt --idle 0 nice -n N python -m ...apart_child`: read (nice, policy) once that python runs (not
    # the forked copy of this process, nor chrt or nice, which set them before they exec)
    def exec_done() -> bool:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        return sp.apart.CHILD_MODULE.encode() in argv and Path(argv[0].decode()).name not in ("chrt", "nice")

    wait_until(exec_done, "python of the child after chrt and nice", timeout=10, interval=0.01)
    stat = Path(f"/proc/{pid}/stat")
    return _nice(stat), _policy(stat)


def _stat_fields(stat: Path) -> list[str]:
    return stat.read_text().rsplit(")", 1)[1].split()  # from field 3 (state) on


def _nice(stat: Path) -> int:
    return int(_stat_fields(stat)[16])


def _policy(stat: Path) -> int:
    return int(_stat_fields(stat)[38])


def _two_dutch_voices(audio_cache):
    """The two Dutch actors taking turns, and where the VAD hears speech (for the encoder, for the turns)."""
    fx = sa.conversation(
        audio_cache / "two-0.wav",
        {"m": sa.clips("nl", "m"), "v": sa.clips("nl", "v")},
        n_clips=24,
        seed=0,
        order="alternate",
        gap=(0.3, 1.0),
        cache=audio_cache / "clips",
    )
    activity = speech.find_speech(fx.path)
    regions, extent = activity.for_diarization(), activity.for_turns()
    return fx, regions, extent


def test_diarization_apart_gives_the_turns_of_diarize_in_a_lower_priority_child(encoder, audio_cache):
    fx, regions, extent = _two_dutch_voices(audio_cache)
    with sp.DiarizationApart(fx.path, regions=regions, extent=extent) as apart:
        child_nice, child_policy = _nice_once_exec_done(apart.process.pid)
        turns = apart.turns(timeout=300)
    assert child_nice == sp.apart.NICE == 19
    assert child_policy == os.SCHED_IDLE  # below any nice value while recognition runs
    assert turns == sp.diarize(fx.path, encoder=encoder, regions=regions, extent=extent)
    assert sa.score(fx.turns, turns)["n_speakers"] == 2


def test_diarization_apart_children_share_the_graphs_the_first_one_built(encoder, audio_cache, tmp_path):
    fx, regions, extent = _two_dutch_voices(audio_cache)
    graphs = tmp_path / "graphs"
    answers, written = [], []
    for _ in range(2):  # the first child builds both graphs (two voices: the segmentation model runs too)
        with sp.DiarizationApart(
            fx.path, options=sp.SpeakerOptions(graphs=graphs)
        ) as apart:  # as the speech stage: started first,
            with pytest.raises(RuntimeError, match="diarize"):
                apart.turns(timeout=1)
            time.sleep(0.5)  # (the stage's VAD pass)
            assert apart.process.poll() is None  # ready, waiting for the speech
            apart.diarize(regions=regions, extent=extent)  # told where the speech is once it is found
            answers.append(apart.turns(timeout=300))
        written.append({path.name: path.stat().st_mtime_ns for path in graphs.iterdir()})
    assert sorted(name.split("-")[0] for name in written[0]) == ["campplus", "segmentation"]
    assert written[1] == written[0]  # the second child read them
    assert answers[0] == answers[1] == sp.diarize(fx.path, encoder=encoder, regions=regions, extent=extent)


def test_diarization_apart_reports_the_childs_error_and_leaves_no_child_behind(tmp_path):
    with sp.DiarizationApart(tmp_path / "missing.wav", regions=[(0.0, 5.0)], extent=[(0.0, 5.0)]) as apart:
        with pytest.raises(sp.DiarizationFailed, match="operator has the details") as failed:
            apart.turns(timeout=120)
        assert "missing.wav" in failed.value.detail and "Traceback" not in str(failed.value)  # for the log only
    silence = tmp_path / "silence.wav"
    with wave.open(str(silence), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(b"\0" * 2 * 16000 * 600)
    with sp.DiarizationApart(silence, regions=[(0.0, 600.0)], extent=[(0.0, 600.0)]) as apart:
        pid = apart.process.pid
        assert _nice_once_exec_done(pid) == (19, os.SCHED_IDLE)
        assert apart.hurry()  # recognition is done: the worker's own policy and priority (root here)
        threads = list(Path(f"/proc/{pid}/task").iterdir())
        assert {_nice(task / "stat") for task in threads} == {os.nice(0)}
        assert {_policy(task / "stat") for task in threads} == {os.sched_getscheduler(0)} == {os.SCHED_OTHER}
    assert apart.process.returncode is not None  # left before its answer: killed, and reaped
    assert not Path(f"/proc/{pid}").exists()
    with sp.DiarizationApart(silence) as apart:  # left before it was told where the speech is
        pid = apart.process.pid
    assert apart.process.returncode is not None and not Path(f"/proc/{pid}").exists()
    with sp.DiarizationApart(
        silence, options=sp.SpeakerOptions(weights=tmp_path / "missing.pt")
    ) as apart:  # dies getting ready
        apart.process.wait(timeout=60)
        apart.diarize(regions=[(0.0, 5.0)] * 20000, extent=[(0.0, 5.0)])  # more than a pipe holds
        with pytest.raises(sp.DiarizationFailed) as failed:
            apart.turns(timeout=60)
        assert "missing.pt" in failed.value.detail


def test_diarization_apart_runs_at_nice_19_alone_where_the_idle_policy_is_refused(tmp_path, monkeypatch):
    # a sandbox that refuses SCHED_IDLE (its chrt fails) must still diarize, not fail every job
    refusing = tmp_path / "bin"
    refusing.mkdir()
    (refusing / "chrt").write_text(
        "#!/bin/sh\necho 'chrt: failed to set pid 0 policy: Operation not permitted' >&2\nexit 1\n"
    )
    (refusing / "chrt").chmod(0o755)
    monkeypatch.setenv("PATH", f"{refusing}{os.pathsep}{os.environ['PATH']}")
    sp.apart._idle_policy.cache_clear()
    silence = tmp_path / "silence.wav"
    with wave.open(str(silence), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(b"\0" * 2 * 16000 * 5)
    try:
        with sp.DiarizationApart(silence, regions=[(0.0, 5.0)], extent=[(0.0, 5.0)]) as apart:
            assert _nice_once_exec_done(apart.process.pid) == (19, os.SCHED_OTHER)
            assert apart.turns(timeout=120) == [sp.SpeakerTurn(start=0.0, end=5.0, speaker=1)]
    finally:
        sp.apart._idle_policy.cache_clear()  # the real chrt again for the tests after this one
