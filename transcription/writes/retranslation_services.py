"""The writes that keep a done job's translations in step with its edited transcript (issue 46).

An edit (api.front.editing) is saved by edit_services.segments_edit; here, in the same transaction, each
translation gets the plan of what to translate again (pipeline.transcripts.retranslation: only the cues whose
text changed), the account is charged for those cues' seconds, 1x per language as the contract
prices a translated language, and the asr worker is sent `retranslate_job` after commit. The
worker (stages.retranslating) translates the marked cues and stores the translation
(retranslation_store); one that cannot be made fails alone and its retranslation is refunded.

When the balance does not cover the cues, the edit is still saved (editing is free) and the
translations it would have changed end `failed` with the figures in their `error`, as the
contract answers an empty balance: nothing is charged for them.

A change is charged once (issue 56): an edit made before the worker ran plans against the kept
plan, and what it charges is the seconds of every cue still to translate less what the waiting
retranslation was charged already, so a cue edited twice, three times before the worker runs is
paid for once (its seconds grown by a `times` edit, the difference). What a save will charge is
quoted by the same planning without writing (retranslation_quote: the editor's "this save will
charge", PATCH …/segments with `dry_run`), and each save says what it charged (RetranslationCharge).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from billing import pricing
from billing.models import LedgerEntry
from billing.rework_services import rework_charge, rework_refund
from billing.selectors import account_balance
from transcription import states
from transcription.models import Job, JobSegments, Translation
from transcription.pipeline.transcripts import captions, retranslation
from transcription.scheduling import dispatch
from transcription.writes import edit_services, services
from transcription.writes.services import RowId

SOURCE = LedgerEntry.Source.RETRANSLATION
# the translations an edit brings up to date: made ones, and ones whose earlier retranslation waits
KEPT_UP = (states.TRANSLATION_DONE, states.TRANSLATION_TRANSLATING)


# The transcript's cues before and after an edit (rerender.Rendered.cues: made from the segments),
# asked for only when the job has a translation to keep up
SourceCues = Callable[[], tuple[list[captions.Cue], list[captions.Cue]]]


@dataclass(frozen=True)
class RetranslationCharge:
    """What a save of an edit charges (or, quoted, would charge) for its translations made again:
    `seconds` in all (each translation's cues to translate, less what their waiting retranslation
    was charged already), over `cues` cues (the most of any language) into `languages`. `error`:
    the balance does not cover it (saved, the translations failed and nothing was charged)."""

    seconds: int = 0
    cues: int = 0
    languages: list[str] = field(default_factory=list)
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": self.seconds,
            "minutes": pricing.format_minutes(self.seconds),
            "cues": self.cues,
            "languages": self.languages,
            "error": self.error,
        }


@dataclass
class _Work:
    translation: Translation
    plan: retranslation.Plan
    owed: int  # what this edit adds to the translation's retranslation charge
    cues: int  # cues left to translate


def _planned(translations: list[Translation], source_cues: SourceCues) -> list[_Work]:
    """Each translation's plan after the edit whose cues before and after `source_cues` gives, with
    what it adds to the charge: the seconds of every cue it has to translate less what is charged
    already. What is compared is the cues the segments make, never the SRT read back (segments as
    the one source)."""
    old_source, new_source = source_cues()
    work = []
    for translation in translations:
        old = (
            translation.redo["plan"]
            if translation.redo
            else retranslation.current(captions.from_records(translation.cues))
        )
        plan, _ = retranslation.plan(old_source, old, new_source)
        pending = retranslation.pending(plan)
        charged = int((translation.redo or {}).get("charged", 0))
        work.append(_Work(translation, plan, max(0, retranslation.seconds_of(plan, pending) - charged), len(pending)))
    return work


def _charge_of(waiting: list[_Work]) -> RetranslationCharge:
    return RetranslationCharge(
        seconds=sum(w.owed for w in waiting),
        cues=max((w.cues for w in waiting), default=0),
        languages=[w.translation.language for w in waiting],
    )


def _kept_up(job_id: RowId, *, lock: bool) -> list[Translation]:
    query = Translation.objects.filter(job_id=job_id, state__in=KEPT_UP).exclude(srt=None).order_by("position")
    return list(query.select_for_update() if lock else query)


def retranslation_quote(job_id: RowId, source_cues: SourceCues) -> RetranslationCharge:
    """What saving the edit whose cues `source_cues` gives would charge now (nothing is written), with
    the balance's refusal in `error` when it would not cover it."""
    translations = _kept_up(job_id, lock=False)
    if not translations:
        return RetranslationCharge()
    quote = _charge_of([w for w in _planned(translations, source_cues) if retranslation.pending(w.plan)])
    account_id = Job.objects.values_list("account_id", flat=True).get(pk=job_id)
    balance = account_balance(account_id)
    if quote.seconds > balance:
        error = f"Not enough minutes: the account has {pricing.format_minutes(max(balance, 0))} left."
        return RetranslationCharge(quote.seconds, quote.cues, quote.languages, error)
    return quote


@transaction.atomic
def segments_edit_with_translations(
    job_id: RowId, *, rendered: dict[str, str], source_cues: SourceCues, **edit: Any
) -> tuple[JobSegments, RetranslationCharge]:
    """edit_services.segments_edit (same arguments), then each made translation planned again for
    the cues the edit changed, charged, and its worker sent; with what was charged."""
    # the job's row first, as every writer locks it (then its translations): no lock-order deadlock
    job = Job.objects.select_for_update().only("id", "account_id").get(pk=job_id)
    translations = _kept_up(job_id, lock=True)
    if not translations:  # most jobs: nothing read or parsed beyond the edit itself (issue 46's speed goal)
        return edit_services.segments_edit(job_id, rendered=rendered, **edit), RetranslationCharge()
    work = _planned(translations, source_cues)  # against the version edited, before the edit writes
    kept = edit_services.segments_edit(job_id, rendered=rendered, **edit)
    waiting = [w for w in work if retranslation.pending(w.plan)]
    for w in work:
        if not retranslation.pending(w.plan):  # nothing to translate: the cues keep their lines at new times
            cues = retranslation.complete(w.plan, lambda batch: batch)
            _store(w.translation, captions.to_srt(cues), captions.to_webvtt(cues), captions.cue_records(cues))
    if not waiting:
        return kept, RetranslationCharge()
    return kept, _charge_and_send(job, waiting, kept.version)


def _charge_and_send(job: Job, waiting: list[_Work], version: int) -> RetranslationCharge:
    quote = _charge_of(waiting)
    seconds, cues = quote.seconds, quote.cues
    what = f"translating the {cues} changed cue{'s' if cues != 1 else ''} again into {', '.join(quote.languages)}"
    charge = rework_charge(
        job.account_id,
        job.id,
        seconds,
        source=SOURCE,
        reason=f"Retranslation of edit v{version}: {what} ({seconds} s)",
        what=what,
    )
    for w in waiting:
        translation = w.translation
        before = int((translation.redo or {}).get("charged", 0))
        if not charge.ok:
            _fail(translation, f"{charge.error} This translation is of the transcript before the edit.", before)
            continue
        redo = {"plan": w.plan, "charged": before + w.owed, "version": version}
        services.translation_move(translation, states.TRANSLATION_TRANSLATING, rework=True, error=None, redo=redo)
    if not charge.ok:
        return RetranslationCharge(0, cues, quote.languages, charge.error)
    transaction.on_commit(lambda: dispatch.retranslation_send(job.id))
    return quote


def _store(translation: Translation, srt: str, webvtt: str, cues: list[dict[str, Any]]) -> None:
    services.translation_move(
        translation, states.TRANSLATION_DONE, rework=True, srt=srt, webvtt=webvtt, cues=cues, redo=None
    )


def _fail(translation: Translation, error: str, refund: int) -> None:
    services.translation_move(translation, states.TRANSLATION_FAILED, rework=True, error=error, redo=None)
    job = translation.job
    rework_refund(
        job.account_id,
        job.id,
        refund,
        source=SOURCE,
        reason=f"Retranslation into {translation.language} failed: {error}",
    )


def waiting_translations(job_id: RowId) -> list[Translation]:
    """The job's translations with cues to translate again (what the worker reads)."""
    return list(Translation.objects.filter(job_id=job_id, state=states.TRANSLATION_TRANSLATING).exclude(redo=None))


@transaction.atomic
def retranslation_store(
    translation_id: int, redo: dict[str, Any], *, srt: str, webvtt: str, cues: list[dict[str, Any]]
) -> bool:
    """Store a translation made again from `redo` (its subtitles and the cues they were written
    from); False (nothing written) when an edit planned it again meanwhile (that edit's own task
    stores it)."""
    translation = Translation.objects.select_for_update().get(pk=translation_id)
    if translation.redo != redo:
        return False
    _store(translation, srt, webvtt, cues)
    return True


@transaction.atomic
def retranslation_fail(translation_id: int, redo: dict[str, Any], error: str) -> bool:
    """Fail a translation that could not be made again, refunding what its retranslation was charged."""
    translation = Translation.objects.select_for_update().select_related("job").get(pk=translation_id)
    if translation.redo != redo:
        return False
    _fail(translation, error, int(redo.get("charged", 0)))
    return True


def retranslations_resend(cutoff, now) -> list:
    """The done jobs whose translations have waited for their retranslation since before `cutoff`
    (its message was lost: Redis here keeps nothing on disk), marked sent again at `now`, so the
    sweeper sends each once per period."""
    waiting = Translation.objects.filter(
        state=states.TRANSLATION_TRANSLATING, job__state=states.DONE, updated_at__lt=cutoff
    ).exclude(redo=None)
    jobs = sorted(set(waiting.values_list("job_id", flat=True)))
    Translation.objects.filter(pk__in=waiting.values("pk")).update(updated_at=now)
    return jobs
