"""The writes that keep a done job's translations in step with its edited transcript (issue 46).

An edit (api.editing) is saved by edit_services.segments_edit; here, in the same transaction, each
translation gets the plan of what to translate again (pipeline.retranslation: only the cues whose
text changed), the account is charged for those cues' seconds, 1x per language as the contract
prices a translated language, and the asr worker is sent `retranslate_job` after commit. The
worker (stages.retranslating) translates the marked cues and stores the translation
(retranslation_store); one that cannot be made fails alone and its retranslation is refunded.

When the balance does not cover the cues, the edit is still saved (editing is free) and the
translations it would have changed end `failed` with the figures in their `error`, as the
contract answers an empty balance: nothing is charged for them.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from billing.models import LedgerEntry
from billing.rework_services import rework_charge, rework_refund

from . import dispatch, edit_services, services, states
from .models import Job, JobSegments, Translation
from .pipeline import captions, retranslation
from .services import RowId

SOURCE = LedgerEntry.Source.RETRANSLATION
# the translations an edit brings up to date: made ones, and ones whose earlier retranslation waits
KEPT_UP = (states.TRANSLATION_DONE, states.TRANSLATION_TRANSLATING)


def _cues(srt: str | None, webvtt: str | None) -> list[captions.Cue]:
    return captions.with_voices(captions.from_srt(srt or ""), webvtt)


@transaction.atomic
def segments_edit_with_translations(job_id: RowId, *, rendered: dict[str, str], **edit: Any) -> JobSegments:
    """edit_services.segments_edit (same arguments), then each made translation planned again for
    the cues the edit changed, charged, and its worker sent."""
    # the job's row first, as every writer locks it (then its translations): no lock-order deadlock
    job = Job.objects.select_for_update().only("id", "account_id").get(pk=job_id)
    translations = list(job.translations.select_for_update().filter(state__in=KEPT_UP).exclude(srt=None))
    if not translations:  # most jobs: nothing read or parsed beyond the edit itself (issue 46's speed goal)
        return edit_services.segments_edit(job_id, rendered=rendered, **edit)
    before = Job.objects.only("srt", "webvtt").get(pk=job_id)
    old_source = _cues(before.srt, before.webvtt)
    kept = edit_services.segments_edit(job_id, rendered=rendered, **edit)
    new_source = _cues(rendered["srt"], rendered["webvtt"])
    work = []
    for translation in translations:
        old = translation.redo["plan"] if translation.redo else retranslation.current(_cues(translation.srt, None))
        plan, changed = retranslation.plan(old_source, old, new_source)
        work.append((translation, plan, retranslation.seconds_of(plan, changed), len(changed)))
    waiting = [w for w in work if retranslation.pending(w[1])]
    for translation, plan, _, _ in work:
        if not retranslation.pending(plan):  # nothing to translate: the cues keep their lines at new times
            cues = retranslation.complete(plan, lambda batch: batch)
            _store(translation, captions.to_srt(cues), captions.to_webvtt(cues))
    if waiting:
        _charge_and_send(job, waiting, kept.version)
    return kept


def _charge_and_send(job: Job, waiting: list, version: int) -> None:
    seconds = sum(w[2] for w in waiting)
    cues = max(w[3] for w in waiting)
    languages = ", ".join(w[0].language for w in waiting)
    what = f"translating the {cues} changed cue{'s' if cues != 1 else ''} again into {languages}"
    charge = rework_charge(
        job.account_id,
        job.id,
        seconds,
        source=SOURCE,
        reason=f"Retranslation of edit v{version}: {what} ({seconds} s)",
        what=what,
    )
    for translation, plan, charged, _ in waiting:
        before = (translation.redo or {}).get("charged", 0)
        if not charge.ok:
            _fail(translation, f"{charge.error} This translation is of the transcript before the edit.", before)
            continue
        redo = {"plan": plan, "charged": before + charged, "version": version}
        services.translation_move(translation, states.TRANSLATION_TRANSLATING, rework=True, error=None, redo=redo)
    if charge.ok:
        transaction.on_commit(lambda: dispatch.retranslation_send(job.id))


def _store(translation: Translation, srt: str, webvtt: str) -> None:
    services.translation_move(translation, states.TRANSLATION_DONE, rework=True, srt=srt, webvtt=webvtt, redo=None)


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
def retranslation_store(translation_id: int, redo: dict[str, Any], srt: str, webvtt: str) -> bool:
    """Store a translation made again from `redo`; False (nothing written) when an edit planned it
    again meanwhile (that edit's own task stores it)."""
    translation = Translation.objects.select_for_update().get(pk=translation_id)
    if translation.redo != redo:
        return False
    _store(translation, srt, webvtt)
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
