"""What every translation backend is: the ``Translator`` protocol, the two errors a backend raises,
and the sentences they say to the customer."""

from __future__ import annotations

from typing import Protocol

from transcription.pipeline.recognition.languages import language_label, short_code

DEFAULT_TIMEOUT = 300.0  # seconds for one backend call over all of a job's cues


class TranslationUnavailable(Exception):
    """No backend on this server translates the pair. ``str(e)`` is a sentence for the customer:
    ``TranslationUnavailable("en", "ja")`` writes it (``unavailable_message``), and
    ``TranslationUnavailable(message)`` takes one as it is."""

    source: str | None
    target: str | None

    def __init__(self, *args: str):
        if len(args) == 2:
            self.source, self.target = args
            super().__init__(unavailable_message(*args))
        else:
            self.source = self.target = None
            super().__init__(*args)


class TranslationFailed(Exception):
    """A backend that should work did not (crash, timeout, broken model folder). ``str(e)`` is a
    sentence for the customer; details go to the log."""


class Translator(Protocol):
    name: str

    def translate(self, texts: list[str]) -> list[str]:
        """Exactly one output per input, in the same order; "" stays ""."""
        ...


def unavailable_message(source: str, target: str) -> str:
    """Names the pair and how the server's operator adds it."""
    pair = f"{short_code(source)}-{short_code(target)}"
    return (
        f"Translation from {language_label(source)} to {language_label(target)} is not available on this server"
        f" (pair {pair}); its operator can add it with: python manage.py translation_models install {pair}"
    )


def pair_label(source: str | None, target: str | None) -> str:
    """ "Translation from English to Spanish", or just "Translation"."""
    if source and target:
        return f"Translation from {language_label(source)} to {language_label(target)}"
    return "Translation"


def failed_message(source: str | None, target: str | None, why: str = "") -> str:
    return f"{pair_label(source, target)} failed on this server{': ' + why if why else ''}."
