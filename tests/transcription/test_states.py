import pytest

from tests.factories import JobFactory
from transcription import states
from transcription.models import Job
from transcription.writes import services


@pytest.fixture
def job(account):
    return JobFactory(account=account)


def test_a_job_moves_forward_and_its_progress_never_goes_down(job):
    services.job_advance(job.id, states.PREPARING)
    services.job_advance(job.id, states.DOWNLOADING, 0.5)
    high = Job.objects.get(pk=job.id).progress
    services.job_advance(job.id, states.DOWNLOADING, 0.1)  # a retried stage re-enters its state
    services.job_progress(job.id, 0.0)
    assert Job.objects.get(pk=job.id).progress == high
    services.job_advance(job.id, states.PROCESSING)
    assert Job.objects.get(pk=job.id).progress == states.PROGRESS_RANGE[states.PROCESSING][0]


def test_a_job_cannot_go_back(job):
    services.job_advance(job.id, states.PROCESSING)
    with pytest.raises(states.InvalidTransition):
        services.job_advance(job.id, states.DOWNLOADING)


def test_a_finished_job_never_moves_again(job):
    services.job_advance(job.id, states.ALIGNING)
    services.job_finish(job.id, txt="hello")
    done = Job.objects.get(pk=job.id)
    assert (done.state, done.progress) == ("done", 100)
    with pytest.raises(states.InvalidTransition):
        services.job_advance(job.id, states.PROCESSING)
    assert services.job_fail(job.id, "late failure") is None
    assert Job.objects.get(pk=job.id).state == "done"


def test_any_running_state_may_fail_with_a_reason(job):
    services.job_advance(job.id, states.CONVERTING)
    failed = services.job_fail(job.id, "The file has no audio track.")
    assert failed.state == "failed" and failed.error == "The file has no audio track."


def test_progress_within_a_state_stays_inside_its_range(job):
    services.job_advance(job.id, states.PROCESSING)
    services.job_progress(job.id, 5.0)
    assert Job.objects.get(pk=job.id).progress == states.PROGRESS_RANGE[states.PROCESSING][1]


def test_the_timeline_records_each_state_once_in_order(job):
    for state in (states.PREPARING, states.DOWNLOADING, states.DOWNLOADING, states.CONVERTING):
        services.job_advance(job.id, state)
    assert [entry[0] for entry in Job.objects.get(pk=job.id).timeline] == ["preparing", "downloading", "converting"]


def test_translations_follow_their_own_machine(job):
    translation = job.translations.create(language="Spanish", language_code="es")
    with pytest.raises(states.InvalidTransition):
        services.translation_advance(translation.id, states.TRANSLATION_DONE)
    services.translation_advance(translation.id, states.TRANSLATION_TRANSLATING)
    services.translation_advance(translation.id, states.TRANSLATION_DONE, srt="1\n")
    with pytest.raises(states.InvalidTransition):
        services.translation_advance(translation.id, states.TRANSLATION_BURNING)


@pytest.mark.parametrize("table", [states.PROGRESS_RANGE, states.BURNED_PROGRESS_RANGE])
def test_progress_ranges_cover_0_to_100_in_order(table):
    ranges = [table[s] for s in states.STATE_ORDER]
    assert ranges[0] == (0, 0) and ranges[-1] == (100, 100)
    for (low, high), (next_low, _) in zip(ranges, ranges[1:]):
        assert low <= high < next_low


def test_a_done_job_goes_back_only_for_work_made_again(job):
    """The one way back from `done` (a re-burn) is open to the rework services alone."""
    job = services.job_finish(job.id, txt="hello")
    with pytest.raises(states.InvalidTransition):
        services.job_move(job, states.BURNING)
    with pytest.raises(states.InvalidTransition):  # no other way back, even for rework
        services.job_move(job, states.TRANSLATING, rework=True)
    services.job_move(job, states.BURNING, rework=True)
    again = Job.objects.get(pk=job.id)
    assert (again.state, again.progress) == ("burning", states.PROGRESS_RANGE[states.BURNING][0])
    services.job_advance(job.id, states.DONE, 1.0)
    assert [entry[0] for entry in Job.objects.get(pk=job.id).timeline][-3:] == ["done", "burning", "done"]


def test_a_made_translation_is_reopened_only_for_work_made_again(job):
    translation = job.translations.create(language="Spanish", language_code="es", state=states.TRANSLATION_DONE)
    for state in (states.TRANSLATION_TRANSLATING, states.TRANSLATION_BURNING, states.TRANSLATION_DONE):
        with pytest.raises(states.InvalidTransition):
            services.translation_advance(translation.id, state)
    services.translation_move(translation, states.TRANSLATION_TRANSLATING, rework=True, redo={"plan": []})
    assert job.translations.get().state == "translating"
    with pytest.raises(states.InvalidTransition):  # a failed one stays failed, rework or not
        services.translation_move(
            services.translation_move(translation, states.TRANSLATION_FAILED, rework=True),
            states.TRANSLATION_TRANSLATING,
            rework=True,
        )


def test_every_way_back_leaves_a_final_state_and_says_why():
    for table, final in (
        (states.JOB_REWORK, states.FINAL_STATES),
        (states.TRANSLATION_REWORK, {states.TRANSLATION_DONE, states.TRANSLATION_FAILED}),
    ):
        for (current, _new), why in table.items():
            assert current in final and len(why) > 40
