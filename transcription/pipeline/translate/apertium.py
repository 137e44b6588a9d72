"""Apertium, Debian's rule-based translator: offline, no model files. A pair it has is one mode
("eng-spa"); English to most Romance languages goes through Spanish (``PIVOT``), two modes chained,
where the words of the pivot language the second leg does not know are dropped."""

from __future__ import annotations

import functools
import html
import logging
import os
import re
import shutil
import signal
import subprocess

from transcription.pipeline.recognition.languages import short_code
from transcription.pipeline.recognition.words import ends_sentence

from .backend import DEFAULT_TIMEOUT, TranslationFailed, failed_message, pair_label

log = logging.getLogger(__name__)

PIVOT = "es"


@functools.lru_cache(maxsize=1)
def apertium_modes() -> dict[tuple[str, str], str]:
    """{(source, target): mode} from ``apertium -l``, codes normalised ("eng-spa" -> ("en", "es")).
    Variant modes ("eng-cat_valencia", "es-pt_BR", "eo-en-bytecode") are left out: the plain one
    is used. Empty when Apertium is not installed. Cached for the process."""
    if shutil.which("apertium") is None:
        log.warning("apertium is not installed: no Apertium translation")
        return {}
    try:
        listing = subprocess.run(["apertium", "-l"], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as error:
        log.warning("apertium -l failed: %s", error)
        return {}
    modes: dict[tuple[str, str], str] = {}
    for line in listing.stdout.splitlines():
        mode = line.strip()
        parts = mode.split("-")
        if len(parts) != 2 or not all(re.fullmatch(r"[a-z]{2,3}", part) for part in parts):
            continue
        pair = (short_code(parts[0]), short_code(parts[1]))
        modes.setdefault(pair, mode)
    return modes


# A mark Apertium puts before a word it could not handle: "*" unknown (dropped by -u), "#"
# generation error, "@" transfer error.
_MARK = re.compile(r"(?<![\w*#@])[*#@]+(?=[^\W\d_])")


_UNKNOWN = re.compile(r"(?<![\w*])\*([^\W\d_][\w'’-]*)")


def _unknown_first_word_capital(text: str, source: str) -> str:
    """Apertium gives a sentence's capital to the word after a first word it does not know
    ("Zorblat bought" -> "Zorblat Compró"): that word goes back to lower case, unless the source
    writes it with a capital too."""
    words = text.split(" ")
    source_words = set(source.split())
    for at in range(1, len(words)):
        first, word = words[at - 1], words[at]
        starts = at == 1 or ends_sentence(words[at - 2])
        if (
            starts
            and first in source_words
            and word[:1].isupper()
            and not (len(word) > 1 and word.isupper())  # not an acronym
            and word.strip(".,;:!?") not in {w.strip(".,;:!?") for w in source_words}
        ):
            words[at] = word[0].lower() + word[1:]
    return " ".join(words)


def _drop_pivot_words(text: str, source: str) -> str:
    """``text`` from a second Apertium leg run without ``-u``: each word marked unknown ("*cuantos")
    is dropped, unless the source has it too (a name or a word no leg knows, passed through as it
    is), in which case only the mark goes."""
    known = {word.lower() for word in re.findall(r"[^\W\d_][\w'’-]*", source)}
    return re.sub(r"\s+", " ", _UNKNOWN.sub(lambda m: m.group(1) if m.group(1).lower() in known else "", text)).strip()


def _run_killable(command: list[str], stdin: str, timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr). ``apertium`` is a shell script running a pipeline of
    programs: on timeout the whole process group is killed, not just the shell, so that nothing
    keeps running (or keeps the pipes open) after TimeoutExpired is raised."""
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.communicate()
        raise
    return process.returncode, stdout, stderr


def _kept_marks(keep: set[str], mark: re.Match[str]) -> str:
    """Of a run of Apertium's marks, the characters the customer wrote themselves."""
    return "".join(ch for ch in mark.group(0) if ch in keep)


class ApertiumTranslator:
    """One or more Apertium modes chained (``["eng-spa", "es-pt"]`` pivots through Spanish)."""

    def __init__(
        self,
        modes: list[str],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        source: str | None = None,
        target: str | None = None,
    ):
        if not modes:
            raise ValueError("at least one Apertium mode")
        self.modes = list(modes)
        self.timeout = timeout
        self.source, self.target = source, target
        self.name = "apertium " + " + ".join(self.modes)

    def translate(self, texts: list[str]) -> list[str]:
        clean = [re.sub(r"\s+", " ", text).strip() for text in texts]
        todo = [index for index, text in enumerate(clean) if text]
        out = [""] * len(texts)
        if not todo:
            return out
        current = [clean[index] for index in todo]
        for leg, mode in enumerate(self.modes):
            # Later legs keep their unknown-word marks: a word the pivot leg left unknown is a
            # pivot-language word (Spanish in French) unless the source itself has it (a name).
            current = self._run(mode, current, unknown_marks=leg > 0)
            if leg > 0:
                current = [_drop_pivot_words(text, source) for text, source in zip(current, (clean[i] for i in todo))]
        for index, text in zip(todo, current):
            # strip the marks, but not ones the customer wrote ("#hashtag", "@name")
            out[index] = _MARK.sub(functools.partial(_kept_marks, set(clean[index]) & set("*#@")), text)
            out[index] = _unknown_first_word_capital(re.sub(r"\s+", " ", out[index]).strip(), clean[index])
        return out

    def _run(self, mode: str, texts: list[str], *, unknown_marks: bool = False) -> list[str]:
        document = "".join(f"<p>{html.escape(text, quote=False)}</p>\n" for text in texts)
        command = ["apertium", "-f", "html", *([] if unknown_marks else ["-u"]), mode]
        try:
            returncode, stdout, stderr = _run_killable(command, document, self.timeout)
        except subprocess.TimeoutExpired:
            log.error("apertium %s: timed out after %s s on %d texts", mode, self.timeout, len(texts))
            raise TranslationFailed(
                f"{pair_label(self.source, self.target)} took longer than {self.timeout:g} seconds and was stopped."
            ) from None
        except OSError as error:
            log.error("apertium %s: could not run: %s", mode, error)
            raise TranslationFailed(failed_message(self.source, self.target)) from error
        if returncode != 0:
            log.error("apertium %s: exit %s: %s", mode, returncode, stderr[-2000:])
            raise TranslationFailed(failed_message(self.source, self.target))
        blocks = re.findall(r"<p>(.*?)</p>", stdout, flags=re.DOTALL)
        if len(blocks) != len(texts):
            log.error("apertium %s: %d blocks in, %d out: %r", mode, len(texts), len(blocks), stdout[:2000])
            raise TranslationFailed(failed_message(self.source, self.target))
        return [re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]*>", "", block))).strip() for block in blocks]
