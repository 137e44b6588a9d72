"""No stage reads the service's own output (issue 56, issue 55's "segments as the one source"): a
job's cues are made from its kept segments (transcript_edits.cues) and a translation's are kept with
it (Translation.cues). Reading subtitles back is left to the tests and benchmarks: no module of the
service but the one that holds those readers (pipeline.transcripts.captions) names them, or parses SRT/WebVTT."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("accounts", "audit", "billing", "config", "transcription", "webhooks", "website", "monitoring")
READERS = {"from_srt", "with_voices", "webvtt_voices"}  # pipeline.transcripts.captions' readers, for the tests
# a subtitle library's readers: pysubs2.load, SSAFile.from_string, srt.parse, webvtt.read, ...
LIBRARIES = {"pysubs2", "SSAFile", "srt", "webvtt"}
LIBRARY_READERS = {"load", "from_string", "from_file", "parse", "read", "read_buffer", "from_srt"}
HOME = ROOT / "transcription" / "pipeline" / "transcripts" / "captions.py"


def service_modules() -> list[Path]:
    return [
        path
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and path != HOME
    ]


def readers_named(path: Path) -> list[str]:
    """Every subtitle reader the module names (called, referred to or imported)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom):
            found += [alias.name for alias in node.names if alias.name in READERS]
        elif isinstance(node, ast.Name) and node.id in READERS:
            found.append(node.id)
        elif isinstance(node, ast.Attribute):
            owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
            if node.attr in READERS or (node.attr in LIBRARY_READERS and owner in LIBRARIES):
                found.append(f"{owner}.{node.attr}")
    return found


def test_no_module_of_the_service_reads_subtitles_back():
    named = {str(path.relative_to(ROOT)): readers_named(path) for path in service_modules()}
    assert {path: names for path, names in named.items() if names} == {}


def test_the_check_sees_a_reader():
    """The walk above finds what it looks for (a check that cannot fail proves nothing)."""
    assert {"SSAFile.from_string", "webvtt_voices"} <= set(readers_named(HOME))
    assert len(service_modules()) > 100
