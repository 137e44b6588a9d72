"""One live stream's recogniser: 16 kHz samples in as they come, :mod:`events` out.

Server VAD (Silero, :mod:`vad`) opens an item when speech begins (with ``prefix_padding_ms`` of the
audio before it) and closes it after ``silence_ms`` of silence; without server VAD the client's
:meth:`LiveTranscriber.commit` closes it. While an item is open its audio (the *window*) is decoded
again every :data:`DECODE_STEP_S` of new audio at the most, and the words two decodings in a row
agree on are sent as deltas (LocalAgreement-2, whisper_streaming's ``HypothesisBuffer``: Macháček,
Dabre and Bojar 2023). A delta is never taken back: when the item closes, its last words come from
one more decoding of its window, and its ``Completed`` text is its deltas joined, exactly. Under
server VAD that decoding is made ahead, ``END_PAD_MS`` into the silence (the audio it reads is all
there by then) and on the window alone, while the rest of ``silence_ms`` runs: the item's Completed
follows its close at once instead of a decoding later. A client's commit decodes then, Whisper's
whole 30 s. The window is bounded: past :data:`MAX_WINDOW_S` it is cut at
the end of a sent word, and the words sent before the cut become the decoding's prompt.

Silence never yields text: nothing is decoded for an item in which VAD heard no speech, and
segments Whisper itself takes for no speech, or that are only a tag such as "[Music]", are dropped.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from transcription.pipeline.live.events import (
    Committed,
    Completed,
    Delta,
    LiveEvent,
    SpeechStarted,
    SpeechStopped,
)
from transcription.pipeline.live.formats import RATE
from transcription.pipeline.live.vad import FRAME, StreamingVad
from transcription.pipeline.recognition.languages import whisper_language

if TYPE_CHECKING:  # pragma: no cover
    from faster_whisper import WhisperModel

__all__ = ["DECODE_STEP_S", "MAX_WINDOW_S", "LiveOptions", "LiveTranscriber"]

# decode an open item again once this much new audio came (a caller that fell behind feeds more
# per call and so decodes less often)
DECODE_STEP_S = 0.5
# an item is first decoded once its window is this long: two decodings of half a second agree on
# words Whisper guessed from too little (bench/live: "Das dürfen wir" for "Das Treffen beginnt")
FIRST_DECODE_S = 1.0
# an item's window is cut at a sent word past this length; past HARD_WINDOW_S, what is not agreed
# on yet but lies more than FORCE_BEHIND_S behind is sent anyway (Whisper reads 30 s at the most)
MAX_WINDOW_S = 12.0
HARD_WINDOW_S = 24.0
FORCE_BEHIND_S = 2.0
# hysteresis of the VAD: speech goes on while the probability stays above threshold - this
VAD_HYSTERESIS = 0.15
# audio kept after the last speech frame when server VAD closes an item
END_PAD_MS = 200
# an item's language, when the client gave none, is settled once Whisper is this sure of it, or
# the window is this long
LANGUAGE_SURE = 0.8
LANGUAGE_AFTER_S = 2.0
PROMPT_CHARS = 200
# how far apart in time the words of two decodings may be and still be the same words
_TIME_SLACK_S = 0.1
# mel frames: Whisper's input is 3000 of them (30 s, one per 160 samples); the encoder reads the
# window's and this many more (1 s)
_WHISPER_FRAMES = 3000
_HOP = 160
ENCODER_MARGIN_FRAMES = 100
# and never fewer than this (3 s): a second and a half of speech read alone came back "Go to the
# morning everyone."
MIN_ENCODER_FRAMES = 300
# and a whole number of these (1 s): CTranslate2 keeps buffers for every input length it was given,
# so windows of every length made a stream's worker grow without end (bench/live/memory.py)
ENCODER_FRAMES_STEP = 100
_TAG = re.compile(r"^\s*(\[[^\]]*\]|\([^)]*\)|[♪♫\s]+|\W*)\s*$")


@dataclass(frozen=True)
class LiveOptions:
    """What the session asked for: ``language`` (None: detected per item), a ``prompt`` (names,
    spellings), server VAD on or off and its threshold, the silence that ends an item and the
    audio kept before speech began; ``beam_size`` of the decodings."""

    language: str | None = None
    prompt: str | None = None
    server_vad: bool = True
    vad_threshold: float = 0.5
    silence_ms: int = 500
    prefix_padding_ms: int = 300
    beam_size: int = 1


@dataclass(frozen=True)
class _Word:
    start: float  # seconds since the stream's first sample
    end: float
    text: str

    @property
    def key(self) -> str:
        return re.sub(r"[^\w']", "", self.text.casefold())


def _ms(sample: int) -> int:
    return round(sample * 1000 / RATE)


class LiveTranscriber:
    """One stream: :meth:`feed` its samples in order, :meth:`commit`/:meth:`clear` as the client
    asks, :meth:`finish` at its end. Not thread-safe: one thread per stream."""

    def __init__(self, model: WhisperModel, options: LiveOptions, new_item_id: Callable[[], str]) -> None:
        self.model = model
        # the model as this stream calls it: its encoder reads the window and a second more, not
        # the 30 s Whisper pads every input to (faster-whisper's transcribe pads the features,
        # then calls self.encode): 0.4-0.6 s against 3 s a decoding on the loaded 2-core machine,
        # the same words (LibriVox 0870-0920, WER equal); with no margin at all Whisper repeats
        self._short = copy.copy(model)
        self._encoder_frames = _WHISPER_FRAMES
        self._short.encode = self._encode
        self.options = options
        self._new_item_id = new_item_id
        self._language = whisper_language(options.language) if options.language else None
        self._vad = StreamingVad()
        self._threshold = options.vad_threshold
        self._neg_threshold = max(0.01, options.vad_threshold - VAD_HYSTERESIS)
        self._prefix = round(options.prefix_padding_ms * RATE / 1000)
        self._silence = round(options.silence_ms * RATE / 1000)
        self._end_pad = round(END_PAD_MS * RATE / 1000)
        self._buf = np.zeros(0, dtype=np.float32)
        self._buf_start = 0  # the stream's sample at _buf[0]
        self._fed = 0  # samples fed so far
        self._vad_pos = 0  # the stream's sample the next VAD frame starts at
        self._in_speech = False
        self._speech_end = 0  # end of the last frame heard as speech
        self._last_item: str | None = None
        self._reset_item()
        #: seconds of decoding so far, and how many decodings (for benches and logs)
        self.decode_seconds = 0.0
        self.decodings = 0

    # ------------------------------------------------------------------ the client's calls

    def feed(self, samples: npt.NDArray[np.float32]) -> list[LiveEvent]:
        """Take the next samples (16 kHz float32 mono); the events they bring."""
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        events: list[LiveEvent] = []
        self._buf = np.concatenate([self._buf, samples])
        self._fed += len(samples)
        for p in self._vad.probabilities(samples):
            start, end = self._vad_pos, self._vad_pos + FRAME
            self._vad_pos = end
            if p >= self._threshold:
                if self._item is None:
                    self._open(max(self._buf_start, start - self._prefix), events)
                self._in_speech = True
                self._item_speech = True
                self._speech_end = end
            elif self._in_speech and p >= self._neg_threshold:
                self._speech_end = end
            elif self._in_speech and end - self._speech_end < self._silence:
                self._decode_ahead(end)
            elif self._in_speech:
                self._in_speech = False
                if self.options.server_vad and self._item is not None:
                    close = min(self._speech_end + self._end_pad, end)
                    events.append(SpeechStopped(self._item, _ms(close)))
                    events.extend(self._close(close))
        if self._item is None:  # keep only the audio that may become an item's prefix
            self._drop_before(max(self._buf_start, self._vad_pos - self._prefix))
        elif (
            self._item_speech
            and self._fed - self._decoded_to >= DECODE_STEP_S * RATE
            and self._fed - self._buf_start >= FIRST_DECODE_S * RATE
        ):
            events.extend(self._partial())
        return events

    def commit(self) -> list[LiveEvent]:
        """The client's ``input_audio_buffer.commit``: the item ends here (Committed, its last
        deltas, Completed); with nothing spoken, Committed and an empty Completed."""
        events: list[LiveEvent] = []
        if self._item is None:
            self._open(self._buf_start, events, announce=False)
        if self.options.server_vad and self._in_speech:
            events.append(SpeechStopped(self._item or "", _ms(self._fed)))
        self._in_speech = False
        events.extend(self._close(self._fed))
        return events

    def clear(self) -> list[LiveEvent]:
        """The client's ``input_audio_buffer.clear``: the audio not committed is dropped, no text
        comes of it (an item that sent deltas is abandoned: it gets no Completed)."""
        self._drop_before(self._fed)
        self._in_speech = False
        self._reset_item()
        return []

    def finish(self) -> list[LiveEvent]:
        """The end of the stream: as :meth:`commit` when an item with speech is open, else nothing."""
        if self._item is not None and self._item_speech:
            return self.commit()
        return []

    # ------------------------------------------------------------------ items

    def _reset_item(self) -> None:
        self._item: str | None = None
        self._item_speech = False
        self._sent: list[_Word] = []  # the item's words sent as deltas
        self._text = ""  # their text, joined
        self._hypothesis: list[_Word] = []  # the last decoding's words after the sent ones
        self._decoded_to = 0  # the stream's sample the last decoding heard up to
        # the final decoding made ahead, while the silence that may end the item runs: (its end
        # sample, its words)
        self._ahead: tuple[int, list[_Word]] | None = None
        self._item_language: str | None = self._language

    def _open(self, at: int, events: list[LiveEvent], announce: bool = True) -> None:
        self._drop_before(at)
        self._item = self._new_item_id()
        self._decoded_to = at
        if announce and self.options.server_vad:
            events.append(SpeechStarted(self._item, _ms(at)))

    def _close(self, at: int) -> list[LiveEvent]:
        """Committed, the last deltas and Completed for the open item, its audio ending at ``at``."""
        item = self._item or self._new_item_id()
        events: list[LiveEvent] = [Committed(item, self._last_item)]
        if self._item_speech:
            # always one more decoding: the last partial one may have heard the item's last word
            # cut short and said nothing of it ("Good morning everyone." came back empty)
            if self._ahead is not None and self._ahead[0] == at:
                words = self._ahead[1]
            else:
                words = self._decode(self._buf[: at - self._buf_start], self._buf_start, final=True)
            rest = self._fresh(words)
            events.extend(self._send(rest))
        events.append(Completed(item, self._text))
        self._last_item = item
        self._drop_before(at)
        self._reset_item()
        return events

    def _decode_ahead(self, end: int) -> None:
        """Once the silence after speech is END_PAD_MS long, the audio the item's final decoding
        reads is all here: decode it now, while the rest of ``silence_ms`` runs, so that the item's
        Completed follows its close at once (speech that resumes makes it moot: its end moves)."""
        close = self._speech_end + self._end_pad
        if not self.options.server_vad or self._item is None or not self._item_speech or end < close:
            return
        if self._ahead is None or self._ahead[0] != close:
            # the encoder on the window and its margin, as the partial decodings: Whisper's whole
            # 30 s made the item's Completed 1.2 s late instead of 0.75 s (bench/live, English),
            # its words no better (German WER 0.58 against 0.35-0.50)
            words = self._decode(self._buf[: close - self._buf_start], self._buf_start)
            self._ahead = (close, words)

    def _partial(self) -> list[LiveEvent]:
        words = self._fresh(self._decode(self._buf, self._buf_start))
        agreed = 0
        for new, old in zip(words, self._hypothesis):
            if new.key != old.key:
                break
            agreed += 1
        self._hypothesis = words[agreed:]
        return self._send(words[:agreed]) + self._bound_window()

    def _send(self, words: list[_Word]) -> list[LiveEvent]:
        if not words or self._item is None:
            return []
        text = "".join(w.text for w in words)
        if not self._text:
            text = text.lstrip()
        if not text:
            return []
        self._sent.extend(words)
        self._text += text
        return [Delta(self._item, text)]

    def _bound_window(self) -> list[LiveEvent]:
        """Cut a long window at the end of a sent word (a sentence's end when there is one);
        past HARD_WINDOW_S send what lies FORCE_BEHIND_S behind first, agreed on or not."""
        length = (self._fed - self._buf_start) / RATE
        if length <= MAX_WINDOW_S:
            return []
        events: list[LiveEvent] = []
        if length > HARD_WINDOW_S:
            behind = self._fed / RATE - FORCE_BEHIND_S
            forced = [w for w in self._hypothesis if w.end <= behind]
            self._hypothesis = self._hypothesis[len(forced) :]
            events = self._send(forced)
        inside = [w for w in self._sent if w.end * RATE > self._buf_start]
        if inside:
            ends = [w for w in inside if re.search(r"[.?!。？！]\s*$", w.text)] or inside
            self._drop_before(min(round(ends[-1].end * RATE), self._fed))
        return events

    def _drop_before(self, sample: int) -> None:
        if sample > self._buf_start:
            self._buf = self._buf[sample - self._buf_start :]
            self._buf_start = sample

    # ------------------------------------------------------------------ decoding

    def _prompt(self) -> str | None:
        before = "".join(w.text for w in self._sent if w.end * RATE <= self._buf_start + FRAME).strip()
        parts = [(self.options.prompt or "").strip(), before[-PROMPT_CHARS:]]
        return " ".join(p for p in parts if p) or None

    def _encode(self, features: Any) -> Any:
        return self.model.encode(features[..., : self._encoder_frames])

    def _decode(self, audio: npt.NDArray[np.float32], offset: int, final: bool = False) -> list[_Word]:
        """Whisper's words for ``audio`` (which starts at the stream's sample ``offset``)."""
        self._decoded_to = offset + len(audio)
        if len(audio) < FRAME:
            return []
        began = time.perf_counter()
        # an item's last decoding after a client's commit reads Whisper's whole 30 s, as the file path does
        # the margin rounded to the nearest whole step: ENCODER_MARGIN_FRAMES on average, as tuned
        heard = len(audio) // _HOP + ENCODER_MARGIN_FRAMES - ENCODER_FRAMES_STEP // 2
        short = max(MIN_ENCODER_FRAMES, -(-heard // ENCODER_FRAMES_STEP) * ENCODER_FRAMES_STEP)
        self._encoder_frames = _WHISPER_FRAMES if final else min(_WHISPER_FRAMES, short)
        segments, info = self._short.transcribe(
            audio,
            language=self._item_language,
            initial_prompt=self._prompt(),
            beam_size=self.options.beam_size,
            word_timestamps=True,
            vad_filter=False,
            condition_on_previous_text=False,
            temperature=0.0,
        )
        # a tag ("[Music]"), a segment said again, and words placed past the audio's end are what
        # Whisper reads into silence: the encoder's margin invites a repetition there
        length = len(audio) / RATE
        words: list[_Word] = []
        said: set[str] = set()
        for seg in segments:
            key = re.sub(r"[^\w']", "", seg.text.casefold())
            if _TAG.match(seg.text) or key in said:
                continue
            said.add(key)
            words.extend(
                _Word(round(offset / RATE + float(w.start), 3), round(offset / RATE + float(w.end), 3), w.word)
                for w in self._segment_words(seg)
                if float(w.start) < length - _TIME_SLACK_S
            )
        self.decode_seconds += time.perf_counter() - began
        self.decodings += 1
        if self._item_language is None and (
            (info.language_probability or 0) >= LANGUAGE_SURE or len(audio) >= LANGUAGE_AFTER_S * RATE
        ):
            self._item_language = info.language
        return words

    @staticmethod
    def _segment_words(seg: Any) -> list[Any]:
        return [w for w in seg.words or [] if w.word.strip()]

    def _fresh(self, words: list[_Word]) -> list[_Word]:
        """The words of a decoding that come after those sent (by time, then by their text: the
        last few sent words heard again at the window's start are not sent twice)."""
        if not self._sent:
            return words
        last = self._sent[-1].end
        words = [w for w in words if w.start > last - _TIME_SLACK_S]
        if words and abs(words[0].start - last) < 1.0:
            for n in range(min(5, len(words), len(self._sent)), 0, -1):
                if [w.key for w in self._sent[-n:]] == [w.key for w in words[:n]]:
                    return words[n:]
        return words
