"""A finished job's transcript as data, corrected by its owner (issue 46), for every door: REST
(`GET`/`PATCH /v1/api/transcription/{id}/segments`) and the MCP tools `get_transcript_segments` and
`edit_transcript`. Declared as operations.py declares its own, so front_door.perform runs them with
the same authentication, limits and ownership rule.

The document's version is its ETag (`"v3"`); a PATCH must send it back as If-Match (the MCP tool as
`if_match`): missing or stale is a 412 and nothing is written. The edits themselves
(pipeline.transcripts.transcript_edits) are plain functions; the text and subtitles are made again from the
edited segments by the speech stage's own functions, and the OpenAI door's formats read the same
segments. Editing is free of minutes; the translations made again for the changed cues are not
(retranslation_services), and a burned video is burned again only on request (api.front.reburning).
Every answer to a PATCH says what it charged (`charge`); with `dry_run` it is a quote: the edits
applied and checked, what a save would charge, nothing written (issue 56).
"""

from __future__ import annotations

import json
import logging
import re

from django.conf import settings

from transcription.api.front import edit_renders
from transcription.api.front.caller import Caller, operation
from transcription.api.front.operations import owned, validate, without_id
from transcription.api.front.ratelimit import JOBS, POLLS
from transcription.api.wire import serializers as s
from transcription.api.wire.error_bodies import NotDone, PreconditionFailed, RequestValidationError
from transcription.models import Job, JobSegments
from transcription.pipeline.transcripts import rerender, transcript_edits
from transcription.writes import edit_services, retranslation_services

logger = logging.getLogger(__name__)

_ETAG = re.compile(r'^\s*(?:W/)?"?v?(\d+)"?\s*$')


def etag(version: int) -> str:
    return f'"v{version}"'


def _editable(caller: Caller, raw_id) -> tuple[Job, JobSegments]:
    """The caller's done job and its kept segments; another account's job is a 404, a job not
    done (waiting, running, failed and refunded) a 409."""
    job = owned(Job.objects.only("id", "state", "detected_language", "duration"), caller.account_id, raw_id, "job")
    # the document and the original (megabytes for a long job) are read when used
    kept = (
        JobSegments.objects.defer("segments", "original").filter(job_id=job.id).first() if job.state == "done" else None
    )
    if kept is None:
        why = "it is done" if job.state != "done" else "it has segments (this job kept none)"
        raise NotDone(f"This job is {job.state}: its transcript can be corrected once {why}.")
    return job, kept


class EncodedSegments(list):
    """A document's segments with each one's JSON already written (edit_renders.encoded): the REST
    door writes the answer's document from them instead of encoding megabytes again."""

    def __init__(self, segments: list[dict], encoded: list[str]):
        super().__init__(segments)
        self.encoded = encoded

    def numbered(self) -> EncodedSegments:
        return EncodedSegments(transcript_edits.numbered(self), self.encoded)

    def json(self) -> str:
        """The numbered segments as JSON (as the REST door's renderer writes them)."""
        return (
            "["
            + ",".join(
                f'{{"index":{i}' + ("," + text[1:] if len(text) > 2 else "}") for i, text in enumerate(self.encoded)
            )
            + "]"
        )


def document(kept: JobSegments, segments: list[dict] | None = None) -> dict:
    current = kept.document() if segments is None else segments
    return {
        "segments": current.numbered() if isinstance(current, EncodedSegments) else transcript_edits.numbered(current),
        "version": kept.version,
        "etag": etag(kept.version),
        "edited": kept.version > 1,  # every edit raises the version and keeps the original
        "history": kept.history,
    }


@operation(POLLS)
def get_transcript_segments(caller: Caller, data: dict, request=None) -> dict:
    """GET /v1/api/transcription/{id}/segments (`?version=original`: the recognition as it was
    before any edit; the ETag is still the current version's, which a restore is sent with)."""
    which = data.get("version") or "current"
    if which not in ("current", "original"):
        raise RequestValidationError(
            [{"loc": ["query", "version"], "msg": "Either 'current' or 'original'.", "type": "enum"}]
        )
    _, kept = _editable(caller, data.get("id"))
    return document(kept, (kept.original or kept.segments) if which == "original" else None)


def _read_version(if_match, current: int) -> int:
    match = _ETAG.match(if_match) if isinstance(if_match, str) else None
    if match is None:
        raise PreconditionFailed(
            "If-Match is required: send the ETag of the document your edits were made on "
            f"(GET the segments; it is now {etag(current)}).",
            etag(current),
        )
    return int(match.group(1))


@operation(JOBS)
def edit_transcript(caller: Caller, data: dict, request=None) -> dict:
    """PATCH /v1/api/transcription/{id}/segments: {"edits": [...]} applied in order to the version
    named by `if_match`; answers the new document. A bad edit is a 422 naming edits[i] and its
    field, and nothing is applied."""
    _bounded(data.get("edits"))  # before the edits are read: their count and size bound the work
    options = validate(s.SegmentEditsRequestSerializer, without_id({k: v for k, v in data.items() if k != "if_match"}))
    job, kept = _editable(caller, data.get("id"))
    read = _read_version(data.get("if_match"), kept.version)
    if read != kept.version:
        raise PreconditionFailed(_stale(kept.version), etag(kept.version))
    edits = [dict(edit) for edit in options["edits"]]
    hit = edit_renders.kept(job.id, kept.version)
    current, segments, rendered = edited(job, kept, edits, hit)

    def source_cues() -> tuple[list, list]:
        # the cues of the version edited: this process's last render of it, or made from its segments
        before = (
            hit.rendered.cues() if hit is not None else transcript_edits.cues(current, language=job.detected_language)
        )
        return before, rendered.cues()

    if options.get("dry_run"):
        # the quote: what this save would charge, planned as the save plans it; nothing written
        quote = retranslation_services.retranslation_quote(job.id, source_cues)
        return {**document(kept, segments), "dry_run": True, "charge": quote.as_dict()}
    try:
        # the translations follow the edit: their changed cues planned, charged, sent to translate
        kept, charge = retranslation_services.segments_edit_with_translations(
            job.id,
            read_version=read,
            segments=segments,
            rendered=rendered.outputs(),
            source_cues=source_cues,
            who={"by": caller.user_id, "door": caller.transport},
            ops=[edit["op"] for edit in edits],
            changed=rerender.changed_segments(current, segments),
        )
    except edit_services.StaleVersion as stale:  # another editor saved while these edits were made
        raise PreconditionFailed(_stale(stale.version), etag(stale.version)) from None
    except edit_services.NotEditable as state:
        raise NotDone(f"This job is {state}: its transcript can no longer be corrected.") from None
    encoded = edit_renders.encoded(segments, hit)
    edit_renders.keep(job.id, kept.version, edit_renders.Kept(segments, rendered, encoded))
    return {**document(kept, EncodedSegments(segments, encoded)), "dry_run": False, "charge": charge.as_dict()}


def _too_large(message: str, kind: str, loc: tuple = ("body", "edits")) -> RequestValidationError:
    return RequestValidationError([{"loc": list(loc), "msg": message, "type": kind}])


def _bounded(edits) -> None:
    """One save's edits bounded in number and in size (EDITS_PER_SAVE, EDITS_MAX_BYTES), for every
    door alike (the body a door read is what it parsed into `edits`)."""
    if isinstance(edits, list) and len(edits) > settings.EDITS_PER_SAVE:
        raise _too_large(
            f"At most {settings.EDITS_PER_SAVE} edits in one save (EDITS_PER_SAVE); this one has {len(edits)}: "
            "save them in parts.",
            "too_many_edits",
        )
    try:
        size = len(json.dumps(edits, ensure_ascii=False, default=str).encode())
    except (RecursionError, ValueError):
        raise _too_large("The edits are nested too deeply to read.", "edits_too_large") from None
    if size > settings.EDITS_MAX_BYTES:
        raise _too_large(
            f"The edits of one save may take at most {settings.EDITS_MAX_BYTES} bytes as JSON (EDITS_MAX_BYTES); "
            f"these take {size}: save them in parts.",
            "edits_too_large",
        )


def size_limits() -> transcript_edits.SizeLimits:
    return transcript_edits.SizeLimits(
        words_per_second=settings.TRANSCRIPT_WORDS_PER_SECOND,
        chars_per_second=settings.TRANSCRIPT_CHARS_PER_SECOND,
        min_words=settings.TRANSCRIPT_MIN_WORDS,
        min_chars=settings.TRANSCRIPT_MIN_CHARS,
    )


def edited(
    job: Job, kept: JobSegments, edits: list[dict], hit: edit_renders.Kept | None
) -> tuple[list[dict], list[dict], rerender.Rendered]:
    """(the document edited, the document after `edits`, its txt/srt/webvtt), the texts made again
    only where the edits reached when this process rendered the version edited (edit_renders);
    ``Rendered.changed`` names the cues that changed. A bad edit is a 422 naming every one."""
    current = kept.document() if hit is None else hit.document  # the kept copy spares reading megabytes
    # the original is read only for a restore
    original = (kept.original or current) if any(edit.get("op") == "restore" for edit in edits) else []
    try:
        segments = transcript_edits.apply_edits(current, edits, duration=float(job.duration or 0), original=original)
    except transcript_edits.EditsRefused as refused:
        raise RequestValidationError(
            [
                {"loc": ["body", "edits", p.edit, p.field], "msg": p.message, "type": "edit_invalid"}
                for p in refused.problems
            ]
        ) from None
    try:  # a document's size is bounded by its recording (issue 56): what each later edit must render
        duration = float(job.duration or 0) or float(kept.duration or 0)
        transcript_edits.check_size(current, segments, duration=duration, limits=size_limits())
    except transcript_edits.TooLarge as large:
        raise _too_large(str(large), "transcript_too_large") from None
    if hit is not None:
        try:
            return (
                current,
                segments,
                rerender.after_edit(hit.rendered, current, segments, language=job.detected_language),
            )
        except Exception:  # a shortcut's fault costs a whole render (and a report), never the edit
            logger.exception("The incremental render of job %s failed; rendering it whole.", job.id)
    return current, segments, rerender.full(segments, language=job.detected_language)


def _stale(version: int) -> str:
    return (
        f"The transcript changed since you read it (it is now {etag(version)}): read it again, "
        "make your edits on that version and send its ETag as If-Match."
    )
