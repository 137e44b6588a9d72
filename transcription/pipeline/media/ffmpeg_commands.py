"""The one place ffmpeg's and ffprobe's command lines begin: quiet but for errors, never reading the
terminal, overwriting the output. Every caller adds its own filters and output.

A customer's file is read only through ``ffprobe_media`` / ``ffmpeg_media`` (a file on this
machine: an upload, a download) or ``ffprobe_relayed`` (a remote file through fetch's guarded
relay on 127.0.0.1). Each gives its one input two limits (issue 41):

- ``-protocol_whitelist``: ``file`` for a file here, ``http,tcp`` for the relay. ffmpeg's own default
  for a local file also allows ``crypto`` and ``data``, and a demuxer may open more URLs than its input.
- ``-format_whitelist`` of ``MEDIA_FORMATS``: containers that hold their own audio and video.
  ffmpeg's probe still decides what the file is, but a demuxer off the list is refused before it
  reads anything beyond the file's first bytes. Demuxers that follow references (HLS, DASH, concat
  and ffconcat, SDP and RTP, IMF, WebM DASH manifests, image sequences) would otherwise open other
  files on this machine that the protocol whitelist must allow (the input itself is a ``file``): an
  uploaded playlist naming a local path made a job transcribe a file the customer never sent.
  An allow-list rather than a list of those refused: a demuxer that follows references and is new
  in a later ffmpeg is refused until someone adds it here, instead of slipping past a deny-list.
  (``mov`` follows its data references only with ``-enable_drefs 1``, off by default.)

Standard library only: media_probe.py, which web processes import, builds its command here
(tests/test_web_processes.py keeps numpy out of them).
"""

from __future__ import annotations

import os
import re

# ffmpeg's demuxer names (``ffmpeg -demuxers``): formats people record, export and download.
MEDIA_FORMATS = (
    "mov,mp4,m4a,3gp,matroska,webm,mp3,ogg,wav,w64,flac,aac,loas,mpegts,mpeg,avi,flv,live_flv,asf,"
    "aiff,caf,amr,amrnb,amrwb,au,wv,ac3,eac3,dts,dtshd,truehd,mlp,ape,tta,tak,mpc,mpc8,dv,mxf,rm,nut,"
    "voc,gsm,sox,ircam,dsf"
)
# Demuxers that name other files, in the words a customer knows them by (what refused_format says).
_REFERENCING = {
    "hls": "an HLS playlist (.m3u8)",
    "dash": "a DASH manifest (.mpd)",
    "concat": "a concat list (ffconcat)",
    "sdp": "an SDP session description",
    "rtp": "an RTP session description",
    "rtsp": "an RTSP session description",
    "imf": "an IMF composition playlist",
    "webm_dash_manifest": "a WebM DASH manifest",
}
_REFUSED = re.compile(r"^\[([\w,]+) @ 0x[0-9a-f]+\] Format not on whitelist", re.MULTILINE)


def ffmpeg(*arguments: str) -> list[str]:
    """``ffmpeg`` that reads no stdin, prints errors only and overwrites its output, then ``arguments``.
    Only for media made here (the tests' own); a customer's file goes through ``ffmpeg_media``."""
    return ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *arguments]


def _ffprobe(*arguments: str) -> list[str]:
    return ["ffprobe", "-v", "error", *arguments]


def _local_input(path: str | os.PathLike[str]) -> list[str]:
    # "file:" so that a name with a colon is never read as another protocol
    return ["-protocol_whitelist", "file", "-format_whitelist", MEDIA_FORMATS, "-i", "file:" + os.fspath(path)]


def ffprobe_media(path: str | os.PathLike[str], *arguments: str) -> list[str]:
    """ffprobe of the customer's file ``path`` (on this machine), reading nothing else; ``arguments``
    say what to show."""
    return _ffprobe(*arguments, *_local_input(path))


def ffmpeg_media(path: str | os.PathLike[str], *arguments: str) -> list[str]:
    """ffmpeg with the customer's file ``path`` (on this machine) as its one input, reading nothing
    else; ``arguments`` are the maps, filters, codecs and the output."""
    return ffmpeg(*_local_input(path), *arguments)


def ffprobe_relayed(url: str, *arguments: str) -> list[str]:
    """ffprobe of a remote file through fetch's relay (``url`` is http://127.0.0.1:<port>/): plain
    http to the relay, no redirect, and the same formats as a local file."""
    return _ffprobe(
        "-max_redirects", "0", "-protocol_whitelist", "http,tcp", "-format_whitelist", MEDIA_FORMATS, *arguments, url
    )


def refused_format(stderr: bytes | str | None) -> str | None:
    """When ffmpeg refused the input's format (not in ``MEDIA_FORMATS``), a sentence for the customer
    saying so; else None."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode("utf-8", "replace")
    found = _REFUSED.search(stderr or "")
    if found is None:
        return None
    name = found.group(1)
    if name in _REFERENCING:
        return (
            f"The file is {_REFERENCING[name]}, which names other files instead of holding the recording; "
            "send the audio or video file itself."
        )
    return f"The file's format ({name}) is not one this service reads; send it as MP4, MKV, WebM, MP3, WAV or FLAC."
