"""Key terms: how often a customer's names and terms come out right, with and without the option.

    python bench/asr/key_terms.py                      # base; every voice and mode
    python bench/asr/key_terms.py --only 'en-us' --out /tmp/k.json

Sentences full of invented product names and surnames ("Zorvex", "Quillberry", "Mr. Okonkwe-Laddis"),
and sentences with none of them (to see the rest of the text get no worse), are spoken by espeak-ng
in several voices and speeds (and Festival's English voices where installed) and recognised as the
worker does (``asr.transcribe``, batched, with the recovery pass, language given as English), in
four ways: no key terms, and a glossary of as many terms as a job takes (``KEY_TERMS_MAX``, 20: the
clip's own and the set's first others, so that most of the terms a clip is given are not in it) as
faster-whisper's ``hotwords``, after the initial prompt, or both (``asr.key_term_decoding``).

Scored per clip: a term is right when its words (lower case, punctuation and hyphens as spaces)
come out in a row in the transcript; the other words' WER is the minimum-edit alignment's errors on
the reference words that are not a term's (substituted or dropped), plus the inserted words that
stand beside no term's word (a misheard name is often two words), per such reference word; "stray
terms": glossary terms written where the reference has none of them.

Each voice also reads two recordings: every sentence of one part, term and plain sentences
alternating, joined with 0.7 s pauses (40-50 s: the batched decoder's 30 s chunks hold several
sentences, as in a customer's recording).

The sentences are split by a fixed rule: even-numbered ones (of the term sentences and of the plain
ones) choose the way, odd-numbered ones are held out (a term is on one side only, in every voice).

Results: ``results-key-terms.json`` (the summary by part and way, and every clip's text).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
import wave
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).parent))

from multilingual import alignment  # noqa: E402

from transcription.pipeline.recognition import asr  # noqa: E402
from transcription.pipeline.recognition.whisper_model import load_model  # noqa: E402

# (sentence, the key terms in it): invented names, none of them a word Whisper has seen often
TERM_SENTENCES: list[tuple[str, tuple[str, ...]]] = [
    ("Our new Zorvex router ships next week with the Quillberry firmware.", ("Zorvex", "Quillberry")),
    ("Please forward the invoice to Mr. Okonkwe-Laddis before Friday.", ("Okonkwe-Laddis",)),
    ("Doctor Vantrelli said the Brisquell trial starts in March.", ("Vantrelli", "Brisquell")),
    ("The Flonaxa dashboard shows every order from the Tembridge warehouse.", ("Flonaxa", "Tembridge")),
    ("Mrs. Haskovar will present the Nimbrook roadmap at the meeting.", ("Haskovar", "Nimbrook")),
    ("Install the Kestrova plugin and restart the Pellworth server.", ("Kestrova", "Pellworth")),
    ("Our sales lead, Ingrid Solvaneth, closed the Drumlex account yesterday.", ("Ingrid Solvaneth", "Drumlex")),
    ("The Yarrowtec sensor reports the temperature every few seconds.", ("Yarrowtec",)),
    ("Ask Professor Ambrecht about the Veltrani grant application.", ("Ambrecht", "Veltrani")),
    ("The Glimmerforge update fixed the login problem for most users.", ("Glimmerforge",)),
    ("Send the Caspervale samples to the laboratory of Doctor Mbeki-Thorne.", ("Caspervale", "Mbeki-Thorne")),
    ("The Truvex battery lasts twice as long as the old model.", ("Truvex",)),
    ("Mr. Delacroix-Opara signed the contract with Ombrisk Limited.", ("Delacroix-Opara", "Ombrisk")),
    ("Customers love the Spindlewick app because it is fast and simple.", ("Spindlewick",)),
    ("The Harnstadt office will close early on Thursday.", ("Harnstadt",)),
    ("Our engineer, Tobias Wrenfield, rewrote the Qorvana billing module.", ("Tobias Wrenfield", "Qorvana")),
    ("The Zephlin camera records in low light without noise.", ("Zephlin",)),
    ("Mrs. Abernathy-Kuul approved the Lumisk budget for next year.", ("Abernathy-Kuul", "Lumisk")),
    ("Please call Ravindra Pashkovitz about the Xandrel shipment.", ("Ravindra Pashkovitz", "Xandrel")),
    ("The Morvaine cloud stores every backup for a whole month.", ("Morvaine",)),
]
PLAIN_SENTENCES = [
    "The weather was cold and windy all morning.",
    "We moved the meeting to the large room on the second floor.",
    "Please remember to lock the door when you leave the building.",
    "The train was late again, so I walked to work.",
    "She bought fresh bread, cheese and apples at the market.",
    "Thank you all for coming, and see you next week.",
    "The children played in the garden until it got dark.",
    "He fixed the old bicycle and rode it to the park.",
]
GLOSSARY = tuple(term for _, terms in TERM_SENTENCES for term in terms)
# transcription.job_options's limits (which need Django to import): the most a job takes
KEY_TERMS_MAX, KEY_TERM_MAX_LENGTH = 20, 20
assert all(len(term) <= KEY_TERM_MAX_LENGTH for term in GLOSSARY)


def glossary(terms: tuple[str, ...]) -> tuple[str, ...]:
    """What a customer would send for a clip of these terms: them and the set's first others, 20 in all."""
    own = tuple(dict.fromkeys(terms))
    return (own + tuple(term for term in GLOSSARY if term not in own))[:KEY_TERMS_MAX]


# espeak-ng voice, words a minute
VOICES = [("en-us", 165), ("en-gb", 145), ("en-us+f3", 185)]
FESTIVAL_VOICES = ["kal_diphone", "rab_diphone", "cmu_us_slt_arctic_hts"]
WAYS = ("none", *asr.KEY_TERMS_WAYS)


def words(text: str) -> list[str]:
    """Lower case; punctuation (hyphens too) and symbols as spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    return "".join(" " if unicodedata.category(c)[0] in "PSZ" else c for c in text).split()


def contains(hyp: list[str], term: list[str]) -> int:
    """How many times the term's words come out in a row."""
    n = len(term)
    return sum(hyp[i : i + n] == term for i in range(len(hyp) - n + 1))


def score(reference: str, terms: tuple[str, ...], text: str) -> dict:
    ref, hyp = words(reference), words(text)
    is_term = [False] * len(ref)
    for term in terms:
        tw = words(term)
        for i in range(len(ref) - len(tw) + 1):
            if ref[i : i + len(tw)] == tw:
                is_term[i : i + len(tw)] = [True] * len(tw)
    right = sum(min(contains(hyp, words(term)), contains(ref, words(term))) for term in terms)
    errors, last_ref = 0, -1
    pairs = alignment(ref, hyp)
    for k, (i, j) in enumerate(pairs):
        if i is not None:
            last_ref = i
            if not is_term[i] and (j is None or ref[i] != hyp[j]):
                errors += 1
            continue
        following = next((p[0] for p in pairs[k + 1 :] if p[0] is not None), None)
        beside = [x for x in (last_ref if last_ref >= 0 else None, following) if x is not None]
        if not any(is_term[x] for x in beside):
            errors += 1
    stray = sum(contains(hyp, words(term)) for term in GLOSSARY if term not in terms)
    return {
        "terms": len(terms),
        "terms_right": right,
        "other_words": is_term.count(False),
        "other_errors": errors,
        "stray_terms": stray,
    }


def _run(command: list[str]) -> None:
    subprocess.run(command, check=True, capture_output=True)


def _to_wav(source: Path, out: Path) -> None:
    _run(["ffmpeg", "-v", "error", "-y", "-i", str(source), "-ac", "1", "-ar", "16000", "-c:a", "pcm_s16le", str(out)])


def speak(text: str, voice: str, out: Path) -> None:
    raw = out.with_suffix(".raw.wav")
    if voice.startswith("festival:"):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write(text)
            f.flush()
            _run(["text2wave", "-eval", f"(voice_{voice.split(':', 1)[1]})", "-o", str(raw), f.name])
    else:
        name, speed = voice.split("@")
        _run(["espeak-ng", "-v", name, "-s", speed, "-w", str(raw), text])
    _to_wav(raw, out)
    raw.unlink()


def voices() -> list[str]:
    found = [f"{name}@{speed}" for name, speed in VOICES]
    if shutil.which("text2wave"):
        found += [f"festival:{v}" for v in FESTIVAL_VOICES if glob.glob(f"/usr/share/festival/voices/*/{v}")]
    return found


def clips() -> list[dict]:
    """Every sentence in every voice: its part (tune or held out) by its number."""
    items = [(f"term{k:02}", text, terms) for k, (text, terms) in enumerate(TERM_SENTENCES)]
    items += [(f"plain{k:02}", text, ()) for k, text in enumerate(PLAIN_SENTENCES)]
    return [
        {"name": name, "reference": text, "terms": terms, "part": "tune" if int(name[-2:]) % 2 == 0 else "held_out"}
        for name, text, terms in items
    ]


PAUSE_S = 0.7


def joined(parts: list[Path], out: Path) -> None:
    """16 kHz mono WAVs one after another, PAUSE_S of silence between them."""
    with wave.open(str(out), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        for k, part in enumerate(parts):
            if k:
                w.writeframes(b"\0\0" * int(PAUSE_S * 16000))
            with wave.open(str(part)) as r:
                w.writeframes(r.readframes(r.getnframes()))


def recordings(sentences: list[dict]) -> list[dict]:
    """A recording per part: its term and plain sentences alternating, while both last."""
    out = []
    for part in ("tune", "held_out"):
        terms = [c for c in sentences if c["part"] == part and c["terms"]]
        plain = [c for c in sentences if c["part"] == part and not c["terms"]]
        order = [c for pair in zip(terms, plain + [None] * len(terms)) for c in pair if c is not None]
        out.append(
            {
                "name": f"recording-{part}",
                "part": part,
                "of": [c["name"] for c in order],
                "reference": " ".join(c["reference"] for c in order),
                "terms": tuple(t for c in order for t in c["terms"]),
            }
        )
    return out


def summary(rows: list[dict]) -> dict:
    out: dict = {"recordings": {}}
    for part in ("tune", "held_out", "all"):
        out[part] = {}
        out["recordings"][part] = {}
        for way in WAYS:
            long = [r for r in rows if r["way"] == way and r.get("of") and (part == "all" or r["part"] == part)]
            out["recordings"][part][way] = {
                "recordings": len(long),
                "terms_right": round(sum(r["terms_right"] for r in long) / max(1, sum(r["terms"] for r in long)), 3),
                "other_wer": round(
                    sum(r["other_errors"] for r in long) / max(1, sum(r["other_words"] for r in long)), 4
                ),
                "stray_terms": sum(r["stray_terms"] for r in long),
            }
            mine = [r for r in rows if r["way"] == way and not r.get("of") and (part == "all" or r["part"] == part)]
            with_terms = [r for r in mine if r["terms"]]
            plain = [r for r in mine if not r["terms"]]
            out[part][way] = {
                "clips": len(mine),
                "terms_right": round(sum(r["terms_right"] for r in mine) / max(1, sum(r["terms"] for r in mine)), 3),
                "other_wer": round(
                    sum(r["other_errors"] for r in mine) / max(1, sum(r["other_words"] for r in mine)), 4
                ),
                "other_wer_term_sentences": round(
                    sum(r["other_errors"] for r in with_terms) / max(1, sum(r["other_words"] for r in with_terms)), 4
                ),
                "wer_plain_sentences": round(
                    sum(r["other_errors"] for r in plain) / max(1, sum(r["other_words"] for r in plain)), 4
                ),
                "stray_terms": sum(r["stray_terms"] for r in mine),
                "seconds": round(sum(r["seconds"] for r in mine), 1),
            }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="base")
    parser.add_argument("--cache-dir", default=str(ROOT / "var" / "models"))
    parser.add_argument("--only", default="", help="regular expression on clip or voice names")
    parser.add_argument("--out", default=str(Path(__file__).with_name("results-key-terms.json")))
    args = parser.parse_args()

    model = load_model(args.model, args.cache_dir)
    rows = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        for voice in voices():
            sentences = clips()
            for clip in [*sentences, *recordings(sentences)]:
                label = f"{clip['name']} {voice}"
                if not re.search(args.only, label):
                    continue
                wav = Path(tmp) / f"{clip['name']}-{re.sub(r'[^a-z0-9]+', '_', voice)}.wav"
                if clip.get("of"):
                    parts = [Path(tmp) / f"{name}-{re.sub(r'[^a-z0-9]+', '_', voice)}.wav" for name in clip["of"]]
                    for part, name in zip(parts, clip["of"]):
                        if not part.exists():  # (a sentence --only left out)
                            speak(next(c["reference"] for c in sentences if c["name"] == name), voice, part)
                    joined(parts, wav)
                else:
                    speak(clip["reference"], voice, wav)
                for way in WAYS:
                    options = asr.RecognitionOptions(
                        language="en", key_terms=() if way == "none" else glossary(clip["terms"])
                    )
                    started = time.perf_counter()
                    by = asr.KEY_TERMS_BY if way == "none" else way  # (no terms: the way changes nothing)
                    transcript = asr.transcribe(model, wav, options=options, key_terms_by=by)
                    seconds = time.perf_counter() - started
                    text = " ".join(seg.text for seg in transcript.segments)
                    row = {"clip": clip["name"], "voice": voice, "part": clip["part"], "way": way, "text": text}
                    if clip.get("of"):
                        row["of"] = clip["of"]
                    row.update(score(clip["reference"], clip["terms"], text), seconds=round(seconds, 2))
                    rows.append(row)
                    print(
                        f"{label:34} {way:8} terms {row['terms_right']}/{row['terms']} "
                        f"other {row['other_errors']}/{row['other_words']} stray {row['stray_terms']} | {text}",
                        flush=True,
                    )
    load.append(os.getloadavg()[0])
    result = {
        "model": args.model,
        "glossary": GLOSSARY,
        "terms_per_clip": KEY_TERMS_MAX,
        "voices": voices(),
        "loadavg_1min_start_end": load,
        "summary": summary(rows),
        "clips": rows,
    }
    Path(args.out).write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n")
    print(json.dumps(result["summary"], indent=1))


if __name__ == "__main__":
    main()
