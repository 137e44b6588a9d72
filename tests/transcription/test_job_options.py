"""A job option is declared once (transcription.job_options) and every door takes it from there: a
dummy option added to the declaration reaches the REST request, the MCP tool, the website form,
the OpenAI-compatible mapping, a retry and the admin, or the test names the door that missed it."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from transcription import job_options
from transcription.job_options import OPTIONS, JobOption, Kind

DUMMY = JobOption(
    "dummy_choice_flag",
    Kind.BOOLEAN,
    job_options.ALL_TYPES,
    label="A dummy flag",
    help="Only in this test",
    default=False,
    in_playlists=True,
    openai_name="dummy_choice_flag",
)
WITH_DUMMY = (*OPTIONS, DUMMY)


def _rest(job_type: str) -> set[str]:
    from transcription.api.wire import serializers

    if job_type == "playlist":
        return set(serializers.playlist_request_serializer(WITH_DUMMY)().fields)
    return set(serializers.job_request_serializer("Dummy", job_type, WITH_DUMMY)().fields)


def _mcp(job_type: str) -> set[str]:
    from transcription.api.doors.mcp_server import request_tool
    from transcription.api.wire import serializers

    serializer = (
        serializers.playlist_request_serializer(WITH_DUMMY)
        if job_type == "playlist"
        else serializers.job_request_serializer("Dummy", job_type, WITH_DUMMY)
    )
    from transcription.api.front import operations

    tool = request_tool(operations.transcribe, serializer, str)
    return set(inspect.signature(tool).parameters) - {"ctx"}


def _website(job_type: str) -> set[str]:
    from website.forms import JobForm

    data = {"url": "https://example.com/v", "type": "transcript" if job_type == "playlist" else job_type}
    data["dummy_choice_flag"] = "on"
    if job_type == "playlist":
        data["playlist"] = "on"
    form = JobForm(data, options=WITH_DUMMY)
    assert form.is_valid(), form.errors
    _, body = form.api_request()
    return {name for name, value in body.items() if value is not None} & {"dummy_choice_flag"}


def _openai(job_type: str) -> set[str]:
    return set(job_options.openai_options({"dummy_choice_flag": True}, WITH_DUMMY))


def _retry(job_type: str) -> set[str]:
    job = SimpleNamespace(type="transcript" if job_type == "playlist" else job_type, dummy_choice_flag=True)
    for option in OPTIONS:
        setattr(job, option.job_field, option.default)
    return set(job_options.retried_options(job, WITH_DUMMY))


DOORS = {"REST request": _rest, "MCP tool": _mcp, "website form": _website, "OpenAI mapping": _openai, "retry": _retry}


@pytest.mark.parametrize("job_type", ["transcript", "subtitles", "burned", "playlist"])
def test_a_new_option_reaches_every_door(db, job_type):
    missed = [door for door, names in DOORS.items() if "dummy_choice_flag" not in names(job_type)]
    assert not missed, f"the dummy option did not reach: {', '.join(missed)}"


TERMS_DUMMY = JobOption(
    "dummy_terms", Kind.TERMS, job_options.ALL_TYPES, label="Dummy terms", default=(), max_length=20, in_playlists=True
)


@pytest.mark.parametrize("job_type", ["transcript", "subtitles", "burned", "playlist"])
def test_a_list_of_terms_reaches_every_door_as_a_list(db, job_type):
    """A Kind.TERMS option (key_terms is one): a list at REST and MCP, one term a line on the
    website, the same list on a retried job."""
    from transcription.api.doors.mcp_server import request_tool
    from transcription.api.front import operations
    from transcription.api.wire import serializers
    from website.forms import JobForm

    options = (*OPTIONS, TERMS_DUMMY)
    serializer = (
        serializers.playlist_request_serializer(options)
        if job_type == "playlist"
        else serializers.job_request_serializer("Terms", job_type, options)
    )
    body = {"url": "https://example.com/v", "dummy_terms": ["Zorvex", "Mr. Okonkwe-Laddis"]}
    checked = serializer(data=body)
    assert checked.is_valid(), checked.errors
    assert checked.validated_data["dummy_terms"] == ["Zorvex", "Mr. Okonkwe-Laddis"]
    assert not serializer(data={**body, "dummy_terms": ["x" * 21]}).is_valid()  # its own max_length
    assert "dummy_terms" in inspect.signature(request_tool(operations.transcribe, serializer, str)).parameters

    data = {"url": "https://example.com/v", "type": "transcript" if job_type == "playlist" else job_type}
    data["dummy_terms"] = "Zorvex\r\n\n  Mr. Okonkwe-Laddis  \n"
    if job_type == "playlist":
        data["playlist"] = "on"
    form = JobForm(data, options=options)
    assert form.is_valid(), form.errors
    assert form.api_request()[1]["dummy_terms"] == ["Zorvex", "Mr. Okonkwe-Laddis"]

    job = SimpleNamespace(type="transcript" if job_type == "playlist" else job_type, dummy_terms=["Zorvex"])
    for option in OPTIONS:
        setattr(job, option.job_field, option.default)
    assert job_options.retried_options(job, options)["dummy_terms"] == ["Zorvex"]


def test_an_option_of_another_type_stays_out_of_its_requests():
    only_burned = JobOption("dummy_only_burned", Kind.BOOLEAN, ("burned",), label="x", default=False)
    options = (*OPTIONS, only_burned)
    from transcription.api.wire import serializers

    assert "dummy_only_burned" in serializers.job_request_serializer("A", "burned", options)().fields
    assert "dummy_only_burned" not in serializers.job_request_serializer("B", "subtitles", options)().fields


def test_every_declared_option_is_kept_on_the_job_and_shown_to_support():
    from transcription.admin import JobAdmin
    from transcription.models import Job

    columns = {field.name for field in Job._meta.get_fields()}
    missing = [option.name for option in OPTIONS if option.job_field not in columns]
    assert not missing, f"options without a Job field to keep them: {missing}"
    shown = {name for _, section in JobAdmin.fieldsets for name in section["fields"]}
    assert {option.job_field for option in OPTIONS} <= shown


def test_the_published_requests_are_the_declarations(db):
    """The OpenAPI document (and so the MCP tools' schemas) lists exactly each type's options."""
    from transcription.api.doors.mcp_schemas import component

    for schema, job_type in [
        ("TranscribeRequest", "transcript"),
        ("SubtitlesRequest", "subtitles"),
        ("BurnSubtitlesRequest", "burned"),
    ]:
        published = set(component(schema)["properties"]) - {"url", "upload_id"}
        assert published == {option.name for option in job_options.options_for(job_type)}, schema
    published = set(component("TranscribePlaylistRequest")["properties"]) - {"url", "type"}
    assert published == {option.name for option in job_options.playlist_options()}
