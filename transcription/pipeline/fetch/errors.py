"""Everything that goes wrong while fetching ends as a FetchError whose message can be shown to
the client as it is: the messages, and the mapping of yt-dlp's and the network's errors to them."""

from __future__ import annotations

import re
import socket
from typing import Protocol

from yt_dlp.networking.exceptions import HTTPError as YtHTTPError
from yt_dlp.utils import GeoRestrictedError, UnsupportedError


class FetchError(Exception):
    """Fetching failed; ``str(error)`` is a sentence for the user."""


class _Failing(Protocol):
    """What map_error needs of guard.Session (guard.py imports this module, not the other way)."""

    failure: FetchError | None


# --------------------------------------------------------------------------- messages

MSG_SCHEME = "Only http and https addresses are accepted."
MSG_INVALID = "The address is not valid."
MSG_PRIVATE = "The address points to a private network address, which is not allowed."
MSG_LIVE = "Live broadcasts cannot be transcribed; try again when the broadcast has ended."
MSG_UPCOMING = "This broadcast has not started yet; try again when it has ended."
MSG_POST_LIVE = "The broadcast has just ended and the site is still processing it; try again later."
MSG_PRIVATE_VIDEO = "This video is private."
MSG_REMOVED = "This video has been removed."
MSG_UNAVAILABLE = "This video is unavailable."
MSG_AGE = "This video is age-restricted and cannot be downloaded without signing in."
MSG_MEMBERS = "This video is available to members only."
MSG_LOGIN = "This video requires signing in to the site."
MSG_GEO = "This video is not available in the country the server is in."
MSG_DRM = "This video is protected by DRM and cannot be downloaded."
MSG_BOT_CHECK = "The site refused to serve this server (it asks to prove it is not a bot); try again later."
MSG_UNSUPPORTED = "This site is not supported."
MSG_NO_MEDIA = "No video or audio was found at this address."
MSG_PLAYLIST = "This address is a playlist or a channel; please submit the address of a single video."
MSG_NOT_FOUND = "The page was not found (HTTP 404)."
MSG_GONE = "The page has been removed (HTTP 410)."
MSG_FORBIDDEN = "Access to the page was refused (HTTP 403)."
MSG_TIMEOUT_PROBE = "The site took too long to answer."
MSG_NO_FILE = "The download finished without producing a file."


def _fmt_duration(seconds: float) -> str:
    """13 h 20 min, 45 min, 30 s."""
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    if h:
        return f"{h} h {m} min" if m else f"{h} h"
    if m:
        return f"{m} min"
    return f"{s} s"


def _fmt_limit(seconds: float) -> str:
    """12 hours, 1 hour, 90 minutes, 45 seconds."""
    seconds = int(round(seconds))
    if seconds % 3600 == 0:
        h = seconds // 3600
        return f"{h} hour" + ("s" if h != 1 else "")
    if seconds % 60 == 0:
        m = seconds // 60
        return f"{m} minute" + ("s" if m != 1 else "")
    return f"{seconds} seconds"


def _fmt_bytes(n: float) -> str:
    if n >= 1024**3:
        return f"{n / 1024**3:.1f} GB".replace(".0 GB", " GB")
    if n >= 1024**2:
        return f"{round(n / 1024**2)} MB"
    return f"{max(1, round(n / 1024))} KB"


def too_long_message(duration: float, limit: float) -> str:
    return f"The video is {_fmt_duration(duration)} long; the limit is {_fmt_limit(limit)}."


def decoded_too_long_message(limit: float, claimed: float) -> str:
    """The audio decoded ran past the limit although the file's header claimed `claimed` seconds."""
    return f"The audio runs longer than the limit of {_fmt_limit(limit)} (the file's header said {claimed:.0f} s)."


def picture_too_long_message(limit: float, claimed: float) -> str:
    """A burned job's picture ran past the limit (its audio may be shorter) although the file's
    header claimed `claimed` seconds."""
    return f"The video runs longer than the limit of {_fmt_limit(limit)} (the file's header said {claimed:.0f} s)."


def too_big_message(limit: int) -> str:
    return f"The file is larger than the limit of {_fmt_bytes(limit)}."


def listing_timeout_message(limit: float) -> str:
    return (
        f"The playlist could not be listed in time (the limit is {_fmt_limit(limit)}): the site answered too slowly "
        "or not at all. Try again later, or queue its videos one by one."
    )


def download_timeout_message(limit: float) -> str:
    return f"The download took longer than {_fmt_limit(limit)} and was stopped."


def stalled_message(seconds: float) -> str:
    return f"The download stalled: no data arrived for {_fmt_limit(seconds)}."


def _chain(exc: BaseException | None) -> list[BaseException]:
    seen: list[BaseException] = []
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or any(e is s for s in seen) or len(seen) > 20:
            continue
        seen.append(e)
        exc_info = getattr(e, "exc_info", None)
        if isinstance(exc_info, tuple) and len(exc_info) > 1:
            todo.append(exc_info[1])
        for attr in ("cause", "__cause__", "__context__", "reason"):
            nxt = getattr(e, attr, None)
            if isinstance(nxt, BaseException):
                todo.append(nxt)
    return seen


_PATTERNS: list[tuple[str, str]] = [
    (r"not a bot|captcha|rate.limit", MSG_BOT_CHECK),
    (r"private video|video is private|this video has been made private|is a private", MSG_PRIVATE_VIDEO),
    (r"will begin in|premieres in|scheduled to start|is_upcoming|live event will", MSG_UPCOMING),
    (r"known to use drm|drm protect", MSG_DRM),
    (r"will not be supported|is not supported|site is not supported", MSG_UNSUPPORTED),
    (r"confirm your age|age.restricted|inappropriate for some users", MSG_AGE),
    (r"members.only|join this channel", MSG_MEMBERS),
    (r"not available (?:in|from) your (?:country|location)|geo.?restrict", MSG_GEO),
    (r"been removed|removed by|terminated|copyright claim|no longer available|deleted", MSG_REMOVED),
    (r"unavailable|not available|does not exist", MSG_UNAVAILABLE),
    (r"sign in|log ?in to|login required|requires? (?:an )?account|authentication", MSG_LOGIN),
]


def _clean_ytdlp_message(msg: str) -> str:
    msg = re.sub(r"^\s*ERROR:\s*", "", msg)
    msg = re.sub(r"^\[[^\]]+\]\s*(?:[^:\s]+:\s*)?", "", msg)
    msg = re.sub(r";?\s*please report this issue.*$", "", msg, flags=re.S | re.I)
    msg = re.sub(r"\s*\(caused by .*\)\s*$", "", msg, flags=re.S)
    return msg.strip().rstrip(".") + "."


def _transport_reason(chain: list[BaseException]) -> str | None:
    for e in chain:
        if isinstance(e, socket.gaierror):
            return "the host name could not be resolved"
        if isinstance(e, ConnectionRefusedError):
            return "the connection was refused"
        if isinstance(e, (socket.timeout, TimeoutError)):
            return "the connection timed out"
        if isinstance(e, ConnectionResetError):
            return "the connection was reset"
        if e.__class__.__name__ in ("SSLCertVerificationError", "CertificateVerifyError"):
            return "its security certificate is not valid"
        if e.__class__.__name__ in ("SSLError",):
            return "the secure connection failed"
    for e in chain:
        if e.__class__.__name__ in ("TransportError", "IncompleteRead", "URLError") or isinstance(e, OSError):
            return "the connection failed"
    return None


def map_error(exc: BaseException, session: _Failing) -> FetchError:
    """The FetchError for what `exc` says; the session's own failure (policy, watchdog) wins."""
    if session.failure is not None:
        return session.failure
    if isinstance(exc, FetchError):
        return exc
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain)
    status = _http_status(chain, text)
    reason = _transport_reason(chain)
    found = (
        _error_in_chain(chain)
        or _message_from_text(text.lower(), status)
        or (_status_error(status) if status is not None else None)
        or (FetchError(f"The address could not be reached: {reason}.") if reason else None)
    )
    return found or FetchError("The video could not be fetched: " + _clean_ytdlp_message(str(exc)))


def _error_in_chain(chain: list[BaseException]) -> FetchError | None:
    """A FetchError raised inside yt-dlp, or what one of yt-dlp's own error classes means."""
    for e in chain:
        if isinstance(e, FetchError):
            return e
    for e in chain:
        if isinstance(e, GeoRestrictedError):
            return FetchError(MSG_GEO)
        if isinstance(e, UnsupportedError):
            return FetchError(MSG_NO_MEDIA)
    return None


def _http_status(chain: list[BaseException], text: str) -> int | None:
    """The HTTP status the site answered with, from an exception or from yt-dlp's message."""
    for e in chain:
        if isinstance(e, YtHTTPError):
            status: int = e.status  # yt-dlp ships no types; its HTTPError.status is the int code
            return status
        code = getattr(e, "code", None)
        if isinstance(code, int) and 400 <= code < 600:
            return code
    m = re.search(r"HTTP Error (\d{3})", text)
    return int(m.group(1)) if m else None


def _message_from_text(low: str, status: int | None) -> FetchError | None:
    """The sentence yt-dlp's (lower-cased) message means, if it says something we know."""
    if re.search(r"redirection to url .* is not allowed", low):  # urllib refuses e.g. file:// targets
        return FetchError(MSG_SCHEME)
    if re.search(r"requested format is not available|no video formats found", low):
        return FetchError(MSG_NO_MEDIA)
    for pattern, message in _PATTERNS:
        if re.search(pattern, low):
            # A bare HTTP status says nothing about privacy; do not read "private" into "403".
            if status is not None and message in (MSG_UNAVAILABLE, MSG_LOGIN):
                return None
            return FetchError(message)
    return None


def _status_error(status: int) -> FetchError:
    if status == 404:
        return FetchError(MSG_NOT_FOUND)
    if status == 410:
        return FetchError(MSG_GONE)
    if status in (401, 403):
        return FetchError(f"Access to the page was refused (HTTP {status}).")
    if status == 429:
        return FetchError("The site is refusing requests for now (HTTP 429); try again later.")
    return FetchError(f"The site answered with an error (HTTP {status}).")
