"""OpenAI's Realtime transcription events, as /v1/realtime speaks them (api/doors/realtime.py): the
client's events read into a `Session` and commands, the server's events written in OpenAI's shapes.
Nothing here waits or writes; the door does.

Two dialects of one protocol, both spoken:
- GA (the `openai` SDK's `client.realtime`): `session.update` with `session.type = "transcription"`
  and `session.audio.input.{format, transcription, turn_detection}`; the server answers
  `session.created` / `session.updated` with the session in the same shape.
- beta (`client.beta.realtime`, older SDKs; they send `OpenAI-Beta: realtime=v1`):
  `transcription_session.update` with flat `input_audio_format` ("pcm16", "g711_ulaw", "g711_alaw"),
  `input_audio_transcription` and `turn_detection`; answered by `transcription_session.created` /
  `.updated`.

Audio: PCM16 at 24 kHz (OpenAI's) or 16 kHz (`rate: 16000`, for clients that say so), G.711 u-law and
A-law at 8 kHz. Any transcription model name is taken (a client written for OpenAI names theirs) and
the server's one model runs; `semantic_vad` is served as server VAD. Ours, in both dialects:
`session.keep_recording` (false: the stream's audio is not kept as a job) and the server event
`transcription_session.job` naming the job it becomes. Every refusal is an `error` event in
OpenAI's shape (`{"type": "error", "error": {"type", "code", "message", "param", "event_id"}}`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

from transcription.job_options import PROMPT_MAX_LENGTH
from transcription.pipeline.recognition.languages import UnknownLanguage, whisper_language

GA, BETA = "ga", "beta"

# (kind, rate) of each format a client may name, in each dialect
GA_FORMATS = {"audio/pcm": "pcm16", "audio/pcmu": "pcmu", "audio/pcma": "pcma"}
BETA_FORMATS = {"pcm16": ("pcm16", 24000), "g711_ulaw": ("pcmu", 8000), "g711_alaw": ("pcma", 8000)}
PCM_RATES = (24000, 16000)
BYTES_PER_SAMPLE = {"pcm16": 2, "pcmu": 1, "pcma": 1}
DEFAULT_MODEL = "whisper-1"


class ProtocolError(Exception):
    """A client event refused: answered with an `error` event, the socket kept open."""

    def __init__(self, message: str, code: str = "invalid_value", param: str | None = None):
        super().__init__(message)
        self.message, self.code, self.param = message, code, param


@dataclass(frozen=True)
class TurnDetection:
    threshold: float = 0.5
    silence_ms: int = 500
    prefix_padding_ms: int = 300


@dataclass(frozen=True)
class Session:
    """What the client asked for: its dialect, the audio's format, the transcription's options,
    server VAD (None: the client commits each utterance itself), and whether its recording is kept
    as a job (`keep_recording`, our extension of both shapes: true unless the client says false)."""

    dialect: str = GA
    kind: str = "pcm16"
    rate: int = 24000
    model: str = DEFAULT_MODEL
    language: str | None = None
    prompt: str = ""
    turn_detection: TurnDetection | None = TurnDetection()
    id: str = ""
    keep_recording: bool = True

    def options(self) -> dict[str, Any]:
        """The engine's options (transcription.pipeline.live LiveOptions), as they cross to the worker."""
        vad = self.turn_detection
        return {
            "language": self.language,
            "prompt": self.prompt or None,
            "server_vad": vad is not None,
            "vad_threshold": vad.threshold if vad else 0.5,
            "silence_ms": vad.silence_ms if vad else 500,
            "prefix_padding_ms": vad.prefix_padding_ms if vad else 300,
        }


def new_session(dialect: str) -> Session:
    return Session(dialect=dialect, id="sess_" + secrets.token_hex(12))


def event_id() -> str:
    return "event_" + secrets.token_hex(10)


# --- The client's events ------------------------------------------------------------------------


def _object(value: Any, param: str) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ProtocolError(f"{param} must be an object.", param=param)
    return value


def _turn_detection(value: Any, param: str, current: TurnDetection | None) -> TurnDetection | None:
    if value is None:
        return None
    value = _object(value, param)
    kind = value.get("type", "server_vad")
    if kind not in ("server_vad", "semantic_vad"):
        raise ProtocolError(f"{param}.type must be 'server_vad', 'semantic_vad' or null.", param=f"{param}.type")
    base = current or TurnDetection()
    threshold = value.get("threshold", base.threshold)
    silence = value.get("silence_duration_ms", base.silence_ms)
    padding = value.get("prefix_padding_ms", base.prefix_padding_ms)
    if not isinstance(threshold, int | float) or isinstance(threshold, bool) or not 0.0 <= threshold <= 1.0:
        raise ProtocolError(f"{param}.threshold must be a number from 0 to 1.", param=f"{param}.threshold")
    for name, number in (("silence_duration_ms", silence), ("prefix_padding_ms", padding)):
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= 10000:
            raise ProtocolError(f"{param}.{name} must be whole milliseconds, 0 to 10000.", param=f"{param}.{name}")
    return TurnDetection(float(threshold), silence, padding)


def _transcription(value: Any, param: str, session: Session) -> Session:
    if value is None:
        return session
    value = _object(value, param)
    model = value.get("model") or session.model
    language = value.get("language", session.language) or None
    prompt = value.get("prompt", session.prompt) or ""
    if not isinstance(model, str) or len(model) > 100:
        raise ProtocolError(f"{param}.model must be a model's name.", param=f"{param}.model")
    if language is not None:
        try:
            if not isinstance(language, str):
                raise UnknownLanguage("not a string")
            whisper_language(language)
        except UnknownLanguage:
            raise ProtocolError(
                f"{param}.language: '{language}' is no language this server knows (an ISO-639-1 code: 'en').",
                param=f"{param}.language",
            ) from None
    if not isinstance(prompt, str) or len(prompt) > PROMPT_MAX_LENGTH:
        raise ProtocolError(
            f"{param}.prompt must be text of at most {PROMPT_MAX_LENGTH} characters.", param=f"{param}.prompt"
        )
    return replace(session, model=model, language=language, prompt=prompt)


def _keep_recording(body: dict, session: Session) -> Session:
    """`session.keep_recording` (ours, in both dialects): false, and the stream's audio is not kept
    as a job."""
    if "keep_recording" not in body:
        return session
    keep = body["keep_recording"]
    if not isinstance(keep, bool):
        raise ProtocolError(
            "session.keep_recording must be true (the stream's audio becomes a job) or false (nothing is kept).",
            param="session.keep_recording",
        )
    return replace(session, keep_recording=keep)


def _ga_format(value: Any, session: Session) -> Session:
    param = "session.audio.input.format"
    value = _object(value, param)
    if not value:
        return session
    kind = GA_FORMATS.get(value.get("type", "audio/pcm"))
    if kind is None:
        raise ProtocolError(
            f"{param}.type must be one of 'audio/pcm', 'audio/pcmu', 'audio/pcma'.", param=f"{param}.type"
        )
    if kind != "pcm16":
        return replace(session, kind=kind, rate=8000)
    rate = value.get("rate", 24000)
    if rate not in PCM_RATES:
        raise ProtocolError(
            f"{param}.rate must be 24000 (or 16000 for 16 kHz PCM); {rate!r} is not taken.",
            code="unsupported_rate",
            param=f"{param}.rate",
        )
    return replace(session, kind=kind, rate=rate)


def update_ga(event: dict, session: Session) -> Session:
    """`session.update` (GA): the session with what it changed."""
    body = _object(event.get("session"), "session")
    if body.get("type", "transcription") != "transcription":
        raise ProtocolError(
            "This server transcribes: session.type must be 'transcription' (connect with ?intent=transcription).",
            param="session.type",
        )
    audio_input = _object(_object(body.get("audio"), "session.audio").get("input"), "session.audio.input")
    session = _keep_recording(body, replace(session, dialect=GA))
    if "format" in audio_input:
        session = _ga_format(audio_input["format"], session)
    if "transcription" in audio_input:
        session = _transcription(audio_input["transcription"], "session.audio.input.transcription", session)
    if "turn_detection" in audio_input:
        vad = _turn_detection(
            audio_input["turn_detection"], "session.audio.input.turn_detection", session.turn_detection
        )
        session = replace(session, turn_detection=vad)
    return session


def update_beta(event: dict, session: Session) -> Session:
    """`transcription_session.update` (beta): the session with what it changed."""
    body = _object(event.get("session"), "session")
    session = _keep_recording(body, replace(session, dialect=BETA))
    if "input_audio_format" in body:
        known = BETA_FORMATS.get(body["input_audio_format"])
        if known is None:
            raise ProtocolError(
                "session.input_audio_format must be 'pcm16', 'g711_ulaw' or 'g711_alaw'.",
                param="session.input_audio_format",
            )
        session = replace(session, kind=known[0], rate=known[1])
    if "input_audio_transcription" in body:
        session = _transcription(body["input_audio_transcription"], "session.input_audio_transcription", session)
    if "turn_detection" in body:
        vad = _turn_detection(body["turn_detection"], "session.turn_detection", session.turn_detection)
        session = replace(session, turn_detection=vad)
    return session


# --- The server's events --------------------------------------------------------------------------


def _vad_shape(vad: TurnDetection | None) -> dict | None:
    if vad is None:
        return None
    return {
        "type": "server_vad",
        "threshold": vad.threshold,
        "prefix_padding_ms": vad.prefix_padding_ms,
        "silence_duration_ms": vad.silence_ms,
    }


def session_shape(session: Session) -> dict:
    transcription = {"model": session.model, "language": session.language, "prompt": session.prompt}
    if session.dialect == BETA:
        beta_format = next(name for name, (kind, _) in BETA_FORMATS.items() if kind == session.kind)
        return {
            "id": session.id,
            "object": "realtime.transcription_session",
            "input_audio_format": beta_format,
            "input_audio_transcription": transcription,
            "turn_detection": _vad_shape(session.turn_detection),
            "modalities": ["text"],
            "include": [],
            "keep_recording": session.keep_recording,
        }
    audio_format: dict[str, Any] = {"type": next(t for t, kind in GA_FORMATS.items() if kind == session.kind)}
    if session.kind == "pcm16":
        audio_format["rate"] = session.rate
    return {
        "type": "transcription",
        "id": session.id,
        "object": "realtime.transcription_session",
        "audio": {
            "input": {
                "format": audio_format,
                "transcription": transcription,
                "turn_detection": _vad_shape(session.turn_detection),
                "noise_reduction": None,
            }
        },
        "include": [],
        "keep_recording": session.keep_recording,
    }


def session_event(session: Session, created: bool) -> dict:
    prefix = "transcription_session" if session.dialect == BETA else "session"
    kind = f"{prefix}.{'created' if created else 'updated'}"
    return {"type": kind, "event_id": event_id(), "session": session_shape(session)}


JOB_EVENT = "transcription_session.job"


def job_event(job_id: str, url: str) -> dict:
    """Ours, in both dialects: the job the stream's recording becomes, read by id at `url` (GET
    /v1/api/transcription/{id}) once the stream has ended. A client that knows no such event
    ignores it (the `openai` SDK hands it on as an event of an unknown type)."""
    return {"type": JOB_EVENT, "event_id": event_id(), "job": {"id": job_id, "url": url}}


def error_event(
    message: str,
    code: str | None = None,
    kind: str = "invalid_request_error",
    param: str | None = None,
    client_event_id: str | None = None,
) -> dict:
    return {
        "type": "error",
        "event_id": event_id(),
        "error": {"type": kind, "code": code, "message": message, "param": param, "event_id": client_event_id},
    }


def server_event(kind: str, **fields: Any) -> dict:
    return {"type": kind, "event_id": event_id(), **fields}


TRANSCRIPTION = "conversation.item.input_audio_transcription"


def engine_event(event: dict, spans: dict[str, list[int]]) -> dict | None:
    """An engine event (transcription.pipeline.live.events.to_json's dict) in OpenAI's shape; None
    for one the client never sees. `spans` keeps each item's start and end (ms) for its usage."""
    kind, item_id = event.get("type"), str(event.get("item_id"))
    if kind == "speech_started":
        spans.setdefault(item_id, [event["audio_start_ms"], event["audio_start_ms"]])
        return server_event(
            "input_audio_buffer.speech_started", item_id=item_id, audio_start_ms=event["audio_start_ms"]
        )
    if kind == "speech_stopped":
        spans.setdefault(item_id, [event["audio_end_ms"], event["audio_end_ms"]])[1] = event["audio_end_ms"]
        return server_event("input_audio_buffer.speech_stopped", item_id=item_id, audio_end_ms=event["audio_end_ms"])
    if kind == "committed":
        return server_event(
            "input_audio_buffer.committed", item_id=item_id, previous_item_id=event.get("previous_item_id")
        )
    if kind == "delta":
        return server_event(f"{TRANSCRIPTION}.delta", item_id=item_id, content_index=0, delta=event["text"])
    if kind == "completed":
        start, end = spans.pop(item_id, [0, 0])
        usage = {"type": "duration", "seconds": round(max(end - start, 0) / 1000, 3)}
        return server_event(
            f"{TRANSCRIPTION}.completed", item_id=item_id, content_index=0, transcript=event["transcript"], usage=usage
        )
    if kind == "failed":
        spans.pop(item_id, None)
        error = {"type": "server_error", "code": "transcription_failed", "message": event.get("message"), "param": None}
        return server_event(f"{TRANSCRIPTION}.failed", item_id=item_id, content_index=0, error=error)
    return None
