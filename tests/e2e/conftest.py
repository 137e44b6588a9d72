"""Videos built once per session for the end-to-end tests, served by the session's media server."""

import re
import subprocess
from pathlib import Path

import pytest

from harness.speaker_audio import clips, conversation

LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox")
FILLETS = Path("/usr/share/games/fillets-ng/sound")


def _mux(audio: Path, dest: Path) -> Path:
    """Put audio into an MP4 with a small video track, as a video site would serve it."""
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
            "color=c=navy:s=320x180:r=10",
            "-i",
            str(audio),
            "-shortest",
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-c:a",
            "aac",
            "-b:a",
            "96k",
            str(dest),
        ],
        check=True,
        timeout=120,
    )
    return dest


def _telephone(source: Path, dest: Path) -> Path:
    """What a phone line leaves of a recording: 300-3400 Hz, 8 kHz, mu-law, back to 16 kHz WAV."""
    mulaw = dest.with_suffix(".mulaw.wav")
    ffmpeg = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i"]
    band = ["-af", "highpass=f=300,lowpass=f=3400", "-ar", "8000", "-c:a", "pcm_mulaw"]
    subprocess.run([*ffmpeg, str(source), *band, str(mulaw)], check=True, timeout=60)
    subprocess.run([*ffmpeg, str(mulaw), "-ar", "16000", "-c:a", "pcm_s16le", str(dest)], check=True, timeout=60)
    return dest


@pytest.fixture(scope="session")
def videos(media_server, tmp_path_factory):
    """Builds the test videos once and serves them; returns {name: url} plus the reference text."""
    work = tmp_path_factory.mktemp("speech")
    names = sorted(p.stem for p in LIBRIVOX.glob("*.wav"))
    listing = work / "list.txt"
    listing.write_text("".join(f"file '{LIBRIVOX / name}.wav'\n" for name in names))
    joined = work / "librivox.wav"
    subprocess.run(
        [
            "ffmpeg",
            "-nostdin",
            "-v",
            "error",
            "-y",
            "-f",
            "concat",
            "-safe",
            "0",
            "-i",
            str(listing),
            "-ar",
            "16000",
            "-ac",
            "1",
            str(joined),
        ],
        check=True,
        timeout=60,
    )
    lines = {
        m.group(2): m.group(1)
        for m in re.finditer(r"<s> (.*?) </s> \((.*?)\)", (LIBRIVOX / "transcription").read_text())
    }
    reference = " ".join(lines[name] for name in names)

    cache = work / "cache"
    cache.mkdir()
    dialogue = conversation(
        work / "dialogue.wav", {"m": clips("nl", "m"), "v": clips("nl", "v")}, n_clips=16, cache=cache
    )
    monologue = conversation(work / "monologue.wav", {"v": clips("nl", "v")}, n_clips=12, cache=cache)
    # the two Dutch actors on the phone: short turns, some overlapping, band-limited to 300-3400 Hz,
    # 8 kHz and a mu-law round trip (voices bench/speakers never uses, so its thresholds never saw them)
    call = conversation(
        work / "call-16k.wav",
        {"m": clips("nl", "m"), "v": clips("nl", "v")},
        n_clips=12,
        min_len=0.4,
        max_len=5.0,
        gap=(-0.3, 0.8),
        cache=cache,
    )
    telephone = _telephone(call.path, work / "call.wav")
    # a two-minute lecture by one actor, with pauses up to 2.5 s
    lecture = conversation(
        work / "lecture.wav", {"v": clips("cs", "v")}, n_clips=26, max_len=8.0, gap=(0.4, 2.5), cache=cache
    )

    # Three sentences of Dutch from the game's voice actor (the text is the game's level script):
    # under 15 s of speech, so the language is decided over several windows.
    dutch_lines = [FILLETS / "airplane/nl/let-m-divna.ogg", FILLETS / "airplane/nl/let-m-oko.ogg"]
    dutch_list = work / "dutch.txt"
    dutch_list.write_text("".join(f"file '{line}'\n" for line in dutch_lines))
    dutch = work / "dutch.wav"
    subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "concat", "-safe", "0", "-i", str(dutch_list)]
        + ["-ar", "16000", "-ac", "1", str(dutch)],
        check=True,
        timeout=60,
    )

    folder = media_server.folder
    _mux(dutch, folder / "dutch.mp4")
    _mux(joined, folder / "librivox.mp4")
    _mux(dialogue.path, folder / "dialogue.mp4")
    _mux(monologue.path, folder / "monologue.mp4")
    _mux(telephone, folder / "telephone.mp4")
    _mux(lecture.path, folder / "lecture.mp4")
    return {
        "librivox": media_server.url("/files/librivox.mp4"),
        "dialogue": media_server.url("/files/dialogue.mp4"),
        "monologue": media_server.url("/files/monologue.mp4"),
        "telephone": media_server.url("/files/telephone.mp4"),
        "telephone_turns": len(call.turns),
        "lecture": media_server.url("/files/lecture.mp4"),
        "reference": reference,
        "dutch": media_server.url("/files/dutch.mp4"),
        "dutch_sentences": [
            "Wat is dit voor raar schip?",
            "Dit is geen glazen oog, maar een gyroscoop.",
            "In ieder geval in dit veld.",
        ],
    }
