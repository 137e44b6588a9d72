"""The MCP tools' schemas: the OpenAPI document's, with its references inlined, so an agent sees the
names, types and defaults a REST client sees; and the tools' annotations (reading, queueing)."""

from __future__ import annotations

import functools

from mcp_types import ToolAnnotations


@functools.lru_cache(maxsize=1)
def openapi_document() -> dict:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


def _inline(node, components: dict):
    if isinstance(node, dict):
        if "$ref" in node:
            target = _inline(components[node["$ref"].rsplit("/", 1)[-1]], components)
            rest = {key: value for key, value in node.items() if key != "$ref"}
            return {**target, **_inline(rest, components)}
        if len(node.get("allOf", ())) == 1:
            # drf-spectacular wraps a reference that has siblings (a default) in allOf: flatten it.
            rest = {key: value for key, value in node.items() if key != "allOf"}
            return {**_inline(node["allOf"][0], components), **_inline(rest, components)}
        return {key: _inline(value, components) for key, value in node.items()}
    if isinstance(node, list):
        return [_inline(item, components) for item in node]
    return node


def component(name: str) -> dict:
    components = openapi_document()["components"]["schemas"]
    return _inline(components[name], components)


def id_schema(what: str) -> dict:
    return {
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid", "description": f"The {what}'s id, as the queueing tool gave it."}
        },
        "required": ["id"],
    }


def preview_input_schema() -> dict:
    from transcription.api.wire import serializers as s

    parameters = openapi_document()["paths"]["/v1/api/playlist"]["get"]["parameters"]
    components = openapi_document()["components"]["schemas"]
    fields = s.PlaylistQuerySerializer().fields
    properties = {}
    for parameter in parameters:
        schema = _inline(parameter["schema"], components)
        default = fields[parameter["name"]].default
        if default is not None and not callable(default) and repr(default) != "<class 'rest_framework.fields.empty'>":
            schema["default"] = str(default)
        properties[parameter["name"]] = {**schema, "description": parameter.get("description", "")}
    return {"type": "object", "properties": properties, "required": ["url"]}


BALANCE_SCHEMA = {
    "type": "object",
    "properties": {
        "remaining_seconds": {"type": "integer", "description": "Seconds of video length left on the account"},
        "pricing": {"type": "string", "description": "What each kind of job costs, in plain words"},
    },
    "required": ["remaining_seconds", "pricing"],
}


def rename_schema() -> dict:
    schema = id_schema("job")
    body = component("SpeakerNamesRequest")
    schema["properties"]["names"] = body["properties"]["names"]
    schema["required"] = ["id", "names"]
    return schema


def segments_schema() -> dict:
    schema = id_schema("job")
    schema["properties"]["version"] = {
        "type": "string",
        "enum": ["current", "original"],
        "default": "current",
        "description": "`original`: the recognition as it was before any edit",
    }
    return schema


def edit_schema() -> dict:
    schema = id_schema("job")
    body = component("SegmentEditsRequest")
    schema["properties"]["if_match"] = {
        "type": "string",
        "description": "The `etag` of the document the edits were made on (from get_transcript_segments)",
    }
    schema["properties"]["edits"] = body["properties"]["edits"]
    schema["properties"]["dry_run"] = body["properties"]["dry_run"]
    schema["required"] = ["id", "if_match", "edits"]
    return schema


EDITING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
RENAMING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
QUEUEING = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
READING = ToolAnnotations(read_only_hint=True, open_world_hint=False)
