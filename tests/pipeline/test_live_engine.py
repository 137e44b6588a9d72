"""The live engine (transcription/pipeline/live/): formats, events, and the transcriber with the
real `base` model, Silero VAD and espeak-ng speech (no mocks)."""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support import wer
from transcription.pipeline.live import events as ev
from transcription.pipeline.live.formats import AudioFormat, BadAudio, Resampler, to_16k
from transcription.pipeline.live.transcriber import LiveOptions, LiveTranscriber
from transcription.pipeline.media import audio
from transcription.pipeline.media.wav import read_slice
from transcription.pipeline.recognition.whisper_model import load_model

RATE = 16000
FOX = "The quick brown fox jumps over the lazy dog. Then it runs away into the forest."


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return load_model("base", tmp_path_factory.mktemp("models"), device="cpu")


def spoken(folder: Path, text: str, voice: str = "en", speed: int = 160) -> np.ndarray:
    """espeak-ng saying `text`, as 16 kHz float samples."""
    raw, converted = folder / "raw.wav", folder / f"{voice}-{speed}-{abs(hash(text))}.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-s", str(speed), "-w", str(raw), text], check=True, timeout=30)
    audio.to_wav(raw, converted, timeout=30)
    return read_slice(converted)


def silence(seconds: float) -> np.ndarray:
    return np.zeros(round(seconds * RATE), dtype=np.float32)


def stream(t: LiveTranscriber, samples: np.ndarray, chunk_s: float = 0.1) -> list[ev.LiveEvent]:
    step = round(chunk_s * RATE)
    out: list[ev.LiveEvent] = []
    for i in range(0, len(samples), step):
        out.extend(t.feed(samples[i : i + step]))
    return out + t.finish()


def ids():
    counter = itertools.count()
    return lambda: f"item_{next(counter)}"


def texts(events: list[ev.LiveEvent]) -> dict[str, tuple[str, str | None]]:
    """item -> (its deltas joined, its Completed transcript or None)."""
    out: dict[str, list] = {}
    for e in events:
        if isinstance(e, ev.Delta):
            out.setdefault(e.item_id, ["", None])[0] += e.text
        elif isinstance(e, ev.Completed):
            out.setdefault(e.item_id, ["", None])[1] = e.transcript
    return {k: (v[0], v[1]) for k, v in out.items()}


# ---------------------------------------------------------------------------- formats


def test_pcm16_at_24k_becomes_16k_float_samples_without_a_click_at_chunk_borders():
    t = np.arange(24000) / 24000
    pcm = (np.sin(2 * np.pi * 440 * t) * 16000).astype("<i2").tobytes()
    whole = to_16k(pcm, AudioFormat("pcm16", 24000))
    assert whole.dtype == np.float32 and abs(len(whole) - 16000) <= 1
    r = Resampler(AudioFormat("pcm16", 24000))
    pieces = np.concatenate([r.convert(pcm[i : i + 960]) for i in range(0, len(pcm), 960)] + [r.flush()])
    assert len(pieces) == len(whole)
    assert np.max(np.abs(pieces - whole)) < 1e-3  # chunked == one piece: no border artefacts
    assert np.max(np.abs(np.diff(pieces[100:-100]))) < 2 * np.pi * 440 / RATE * 0.5 * 1.05  # a tone's steepest step


def test_pcm16_at_16k_is_read_as_is():
    pcm = np.array([0, 16384, -32768, 32767], dtype="<i2").tobytes()
    assert to_16k(pcm, AudioFormat("pcm16", 16000)).tolist() == pytest.approx([0, 0.5, -1, 32767 / 32768])


@pytest.mark.parametrize("kind", ["pcmu", "pcma"])
def test_g711_at_8k_is_decoded_and_resampled(kind):
    silent = {"pcmu": b"\xff", "pcma": b"\xd5"}[kind] * 8000  # G.711's zero
    samples = to_16k(silent, AudioFormat(kind, 8000))
    assert abs(len(samples) - 16000) <= 1 and np.max(np.abs(samples)) < 0.01
    loud = to_16k(bytes(range(256)) * 32, AudioFormat(kind, 8000))
    assert np.max(np.abs(loud)) > 0.5


@pytest.mark.parametrize(
    "kind,rate,payload,message",
    [
        ("pcm16", 24000, b"\x00\x01\x02", "3 bytes"),
        ("pcm16", 24000, b"", "empty"),
        ("pcm16", 44100, None, "44100"),
        ("pcmu", 16000, None, "8000"),
        ("opus", 48000, None, "Unknown audio format"),
    ],
)
def test_bad_audio_says_why(kind, rate, payload, message):
    with pytest.raises(BadAudio, match=message):
        to_16k(payload, AudioFormat(kind, rate))


# ---------------------------------------------------------------------------- events


@pytest.mark.parametrize(
    "event",
    [
        ev.SpeechStarted("item_1", 300),
        ev.SpeechStopped("item_1", 2300),
        ev.Committed("item_1", None),
        ev.Committed("item_2", "item_1"),
        ev.Delta("item_1", " fox"),
        ev.Completed("item_1", "The fox"),
        ev.Failed("item_1", "the model ran out of memory"),
    ],
)
def test_events_cross_as_json_and_back(event):
    import json

    data = json.loads(json.dumps(ev.to_json(event)))
    assert ev.from_json(data) == event


def test_from_json_refuses_what_is_no_event():
    with pytest.raises(ValueError):
        ev.from_json({"type": "shout", "item_id": "x"})
    with pytest.raises(ValueError):
        ev.from_json({"type": "delta", "item_id": "x"})


# ---------------------------------------------------------------------------- the transcriber


def test_speech_gives_deltas_while_it_goes_on_and_completed_text_equal_to_them(model, tmp_path):
    speech = spoken(tmp_path, FOX)
    samples = np.concatenate([silence(1), speech, silence(1.5)])
    t = LiveTranscriber(model, LiveOptions(language="en"), ids())
    step = RATE // 10
    events: list[tuple[float, ev.LiveEvent]] = []
    for i in range(0, len(samples), step):
        events.extend(((i + step) / RATE, e) for e in t.feed(samples[i : i + step]))
    events.extend((len(samples) / RATE, e) for e in t.finish())
    kinds = [type(e).__name__ for _, e in events]
    # the item's last words may follow its Committed (decoded ahead, before two partials agreed)
    tail = [kind for kind in kinds[kinds.index("SpeechStopped") :] if kind != "Delta"]
    assert kinds[0] == "SpeechStarted" and tail == ["SpeechStopped", "Committed", "Completed"], kinds
    assert kinds.count("SpeechStopped") == 1 and kinds[-1] == "Completed", kinds
    speech_end = 1 + len(speech) / RATE
    early = [e for at, e in events if isinstance(e, ev.Delta) and at < speech_end - 1.0]
    assert early, f"no delta before the speech ended: {events}"
    (item,) = texts([e for _, e in events])
    joined, final = texts([e for _, e in events])[item]
    assert final == joined
    assert wer(FOX, final) <= 0.15, final
    started = next(e for _, e in events if isinstance(e, ev.SpeechStarted))
    assert 600 <= started.audio_start_ms <= 1100


def test_silence_gives_no_events_and_no_text(model):
    t = LiveTranscriber(model, LiveOptions(language="en"), ids())
    assert stream(t, silence(10)) == []
    assert t.decodings == 0


def noise_and_music(seconds: float) -> np.ndarray:
    """White noise, then chords with a beat: no words in either."""
    rng = np.random.default_rng(52)
    half = round(seconds * RATE / 2)
    noise = rng.normal(0, 0.1, half).astype(np.float32)
    t = np.arange(half) / RATE
    chords = sum(np.sin(2 * np.pi * f * t) for f in (220, 277, 330, 440)) * 0.08
    beat = (np.sin(2 * np.pi * 2 * t) > 0.9) * rng.normal(0, 0.3, half)
    return np.concatenate([noise, (chords + beat).astype(np.float32)])


def test_noise_and_music_give_no_text(model):
    t = LiveTranscriber(model, LiveOptions(language="en"), ids())
    events = stream(t, noise_and_music(10))
    assert [e for e in events if isinstance(e, ev.Delta)] == []
    assert all(e.transcript == "" for e in events if isinstance(e, ev.Completed))


def test_deltas_are_append_only_over_several_items_and_a_long_one(model, tmp_path):
    """Every item's deltas joined are its Completed text; items follow one another; a 20 s item
    (past the bounded window) loses no words and says none twice."""
    short = spoken(tmp_path, "Good morning everyone.")
    long_text = " ".join([FOX, "After that the fox sleeps under a tall tree until the sun goes down.", FOX])
    samples = np.concatenate([silence(0.5), short, silence(1.2), spoken(tmp_path, long_text, speed=150), silence(1)])
    t = LiveTranscriber(model, LiveOptions(language="en"), ids())
    events = stream(t, samples, chunk_s=0.25)
    done = texts(events)
    assert len(done) == 2, done
    for joined, final in done.values():
        assert final == joined
    committed = [e for e in events if isinstance(e, ev.Committed)]
    assert [c.previous_item_id for c in committed] == [None, committed[0].item_id]
    assert wer("Good morning everyone.", done[committed[0].item_id][1]) <= 0.34
    assert wer(long_text, done[committed[1].item_id][1]) <= 0.15, done[committed[1].item_id][1]


def test_without_server_vad_the_clients_commit_ends_the_item(model, tmp_path):
    t = LiveTranscriber(model, LiveOptions(language="en", server_vad=False), ids())
    events: list[ev.LiveEvent] = []
    samples = np.concatenate([silence(0.5), spoken(tmp_path, FOX), silence(1.5)])
    for i in range(0, len(samples), RATE // 10):
        events.extend(t.feed(samples[i : i + RATE // 10]))
    assert not any(isinstance(e, (ev.SpeechStarted, ev.SpeechStopped, ev.Committed)) for e in events)
    events.extend(t.commit())
    assert [type(e).__name__ for e in events[-2:]] == ["Delta", "Completed"] or isinstance(events[-1], ev.Completed)
    (joined, final) = texts(events)[events[-1].item_id]
    assert final == joined and wer(FOX, final) <= 0.25  # espeak's "jumps" is often heard "dumps"


def test_a_commit_with_nothing_spoken_is_committed_and_empty_and_clear_drops_speech(model, tmp_path):
    t = LiveTranscriber(model, LiveOptions(language="en", server_vad=False), ids())
    t.feed(silence(1))
    assert t.commit() == [ev.Committed("item_0", None), ev.Completed("item_0", "")]
    t.feed(spoken(tmp_path, "Good morning everyone."))
    assert t.clear() == []
    assert t.commit() == [ev.Committed("item_2", "item_0"), ev.Completed("item_2", "")]
    assert t.finish() == []


def test_an_items_last_decoding_is_made_while_the_silence_that_ends_it_runs(model, tmp_path):
    """END_PAD_MS into the silence after speech, the audio an item's last decoding reads is all
    there: it is decoded then, so the feed that closes the item (silence_ms in) decodes nothing and
    its Completed follows at once; a pause too short to end the item leaves it whole."""
    said = ["Good morning everyone.", "The meeting starts at nine o'clock."]
    samples = np.concatenate(
        [silence(0.5), spoken(tmp_path, said[0]), silence(0.15), spoken(tmp_path, said[1]), silence(1.0)]
    )
    t = LiveTranscriber(model, LiveOptions(language="en"), ids())
    events: list[ev.LiveEvent] = []
    decoded_by_closing_feeds = []
    for i in range(0, len(samples), RATE // 10):
        before = t.decodings
        fed = t.feed(samples[i : i + RATE // 10])
        if any(isinstance(e, ev.Completed) for e in fed):
            decoded_by_closing_feeds.append(t.decodings - before)
        events.extend(fed)
    assert decoded_by_closing_feeds and set(decoded_by_closing_feeds) == {0}, decoded_by_closing_feeds
    finals = [e.transcript for e in events if isinstance(e, ev.Completed)]
    assert all(final == joined for joined, final in texts(events).values())
    # one item: the pause between the sentences (0.15 s and espeak's own) ended none
    assert len(finals) == 1 and "morning everyone" in finals[0] and "clock" in finals[0], finals
