"""Count what makes translated subtitles hard to read, through every offline translation pair.

    .venv/bin/python bench/translation/defects.py            # every pair from English
    .venv/bin/python bench/translation/defects.py --pairs en-fr en-pt --show 5

The English text: the LibriVox reference sentences of Debian's pocketsphinx-testdata (punctuated
and capitalised as the book prints them) and ``conversation.txt`` (our own script: talk, a meeting,
a phone call, a tutorial, a news report; one sentence a line). The sentences are timed as speech
(0.3 s a word, a pause after each sentence), made into cues by ``captions.build_cues`` exactly as a
job's transcript is, then translated by ``translate.translate_cues`` with the backend the server
would choose. Each defect is counted per cue:

- ``too long``: a line longer than ``linebreaks.line_limit`` (42; 16 for CJK) or more than 2 lines;
- ``capital``: a cue continuing a sentence (the previous cue ends without . ? !) starts with a
  capital letter although the word is not written with one inside any sentence (names, "I");
- ``marks``: an Apertium mark (``*``, ``#``, ``@``) before a word;
- ``pivot words``: a word that the second Apertium leg (Spanish -> target) does not know (and
  never writes itself), found in the output although the English source does not have it (Spanish
  left in French);
- ``empty``: a cue with source text and no translation; ``shape``: cue count or times changed.

Prints a Markdown table; ``results.json`` keeps the latest figures with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from transcription.pipeline.recognition.words import ends_sentence  # noqa: E402
from transcription.pipeline.transcripts.captions import Cue, build_cues  # noqa: E402
from transcription.pipeline.transcripts.linebreaks import line_limit  # noqa: E402
from transcription.pipeline.translate import (  # noqa: E402
    PIVOT,
    ApertiumTranslator,
    apertium_modes,
    find_translator,
    translate_cues,
)
from transcription.pipeline.types import Segment, Word  # noqa: E402

HERE = Path(__file__).resolve().parent
LIBRIVOX = Path("/usr/share/pocketsphinx/test/data/librivox/transcription")
# The five LibriVox sentences as Sense and Sensibility prints them (the reference transcription is
# lower case without punctuation, as a recogniser's reference is).
LIBRIVOX_PRINTED = [
    "And Mr. John Dashwood had then leisure to consider how much there might be prudently in his power to do for them.",
    "He was not an ill-disposed young man, unless to be rather cold-hearted and rather selfish is to be ill-disposed.",
    "Had he married a more amiable woman, he might have been made still more respectable than he was.",
    "He might even have been made amiable himself.",
]
MARK = re.compile(r"(?<![\w*#@])[*#@][^\W\d_]")
WORD = re.compile(r"[^\W\d_][\w'’-]*")


def sentences() -> list[str]:
    """The LibriVox sentences (checked against the reference transcription) and our script."""
    reference = LIBRIVOX.read_text(encoding="utf-8").lower()
    for sentence in LIBRIVOX_PRINTED:
        words = re.sub(r"[^\w\s]", " ", sentence.lower().replace("mr.", "mister")).split()
        assert " ".join(words[:4]) in reference, sentence
    script = [line.strip() for line in (HERE / "conversation.txt").read_text(encoding="utf-8").splitlines()]
    return LIBRIVOX_PRINTED + [line for line in script if line and not line.startswith("#")]


def cues_for(texts: list[str]) -> list[Cue]:
    """Cues as a job would get them for these sentences spoken at 0.3 s a word."""
    segments, at = [], 0.0
    for text in texts:
        words = []
        for word in text.split():
            words.append(Word(at, at + 0.25, " " + word))
            at += 0.3
        segments.append(Segment(words[0].start, words[-1].end, text, words))
        at += 0.6
    return build_cues(segments, language="en")


def offline_targets() -> list[str]:
    modes = apertium_modes()
    direct = {target for source, target in modes if source == "en"}
    pivoted = {target for source, target in modes if source == PIVOT and target not in direct and target != "en"}
    return sorted(direct) + sorted(pivoted)


def capitalised_inside(texts: list[str]) -> set[str]:
    """Words written with a capital somewhere other than at the start of a sentence."""
    found = set()
    for text in texts:
        words = text.split()
        for before, after in zip(words, words[1:]):
            bare = after.strip("\"'“‘«¿¡(.,;:!?…»”’)")
            if bare[:1].isupper() and not ends_sentence(before):
                found.add(bare)
    return found


def pivot_unknown(translator, units: list[str]) -> set[str]:
    """Words the second Apertium leg marks unknown in the pivot-language text of ``units``."""
    if not isinstance(translator, ApertiumTranslator) or len(translator.modes) < 2:
        return set()
    spanish = ApertiumTranslator(translator.modes[:1]).translate(units)
    document = "".join(f"<p>{text}</p>\n" for text in spanish)
    marked = subprocess.run(
        ["apertium", "-f", "html", translator.modes[1]], input=document, capture_output=True, text=True, check=True
    ).stdout
    unknown = {match.group(1).lower() for match in re.finditer(r"\*([^\W\d_][\w'’-]*)", marked)}
    # a word the leg also writes unmarked is a word of the target too ("sopa", "cualesquier")
    generated = {word.lower() for word in re.findall(r"(?<![\w*])[^\W\d_][\w'’-]*", marked)}
    return unknown - generated


def count(pair: str, source: list[Cue], texts: list[str], show: int) -> dict:
    english = " ".join(texts)
    source_code, target = pair.split("-")
    translator = find_translator(source_code, target)
    assert translator, f"no translation backend installed for {pair}"
    started = time.monotonic()
    translated = translate_cues(source, translator, language=target)
    seconds = time.monotonic() - started
    limit = line_limit(target)
    out_texts = [" ".join(cue.lines) for cue in translated]
    names = capitalised_inside([english]) | capitalised_inside(out_texts)
    english_words = {w.lower() for w in WORD.findall(english)}
    leftovers = pivot_unknown(translator, texts) - english_words
    defects: dict[str, list[object]] = {
        "too long": [],
        "capital": [],
        "marks": [],
        "pivot words": [],
        "empty": [],
        "shape": [],
    }
    if len(translated) != len(source):
        defects["shape"].append("cue count")
    for index, (before, after) in enumerate(zip(source, translated)):
        text = " ".join(after.lines)
        if (before.start, before.end) != (after.start, after.end):
            defects["shape"].append(index)
        if before.lines and not after.lines:
            defects["empty"].append(index)
        if len(after.lines) > 2 or any(len(line) > limit for line in after.lines):
            defects["too long"].append(after.lines)
        if MARK.search(text):
            defects["marks"].append(text)
        previous = out_texts[index - 1] if index else ""
        first = text.split()[0].strip("\"'“‘«¿¡(") if text.split() else ""
        continues = bool(previous) and not ends_sentence(previous.split()[-1])
        if continues and previous and first[:1].isupper() and first.strip(".,;:!?…»”’)") not in names:
            defects["capital"].append(f"{previous} | {text}")
        if any(word.lower() in leftovers for word in WORD.findall(text)):
            defects["pivot words"].append(text)
    for name, found in defects.items():
        for example in found[:show]:
            print(f"  {pair} {name}: {example}")
    return {
        "pair": pair,
        "backend": translator.name,
        "cues": len(source),
        "seconds": round(seconds, 2),
        **{name: len(found) for name, found in defects.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", nargs="*", help="pairs such as en-fr (default: every offline pair from English)")
    parser.add_argument("--show", type=int, default=0, help="print this many examples of each defect")
    args = parser.parse_args()
    texts = sentences()
    source = cues_for(texts)
    pairs = args.pairs or [f"en-{target}" for target in offline_targets()]
    load = os.getloadavg()
    rows = [count(pair, source, texts, args.show) for pair in pairs]
    columns = ["pair", "backend", "cues", "too long", "capital", "marks", "pivot words", "empty", "shape", "seconds"]
    print(f"{len(texts)} sentences, {len(source)} cues; load average {load[0]:.2f}")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(str(row[column]) for column in columns) + " |")
    (HERE / "results.json").write_text(
        json.dumps({"sentences": len(texts), "load_average": load, "rows": rows}, indent=2) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    main()
