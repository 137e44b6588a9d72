"""Synthetic whisper-like transcripts for the caption tests."""

from __future__ import annotations

import random

from transcription.pipeline.types import Segment, Word

CONTENT = (
    "people time year way day thing man world life hand part child eye woman place work week case point "
    "government company number group problem fact really actually important different small large next "
    "early young social public private political local national possible available special certain clear "
    "think know want look find give tell become leave feel bring begin keep hold write stand hear mean "
    "understand international responsibility extraordinary communication unfortunately transcription "
    "video subtitle speaker machine language model everything something somebody probably"
).split()
FUNCTION = "the a an of to in and or but for with on at from by as my your their this".split()
ARTICLES_ETC = set(FUNCTION)


def sentence(rng: random.Random) -> list[str]:
    words = []
    for _ in range(rng.randint(2, 16)):
        if rng.random() < 0.35:
            words.append(rng.choice(FUNCTION))
        words.append(rng.choice(CONTENT))
    words[0] = words[0].capitalize()
    for i in range(len(words) - 1):
        if words[i] not in ARTICLES_ETC and rng.random() < 0.08:
            words[i] += ","
    words[-1] += rng.choice([".", ".", ".", "?", "!"])
    return words


def transcript(
    seed: int,
    seconds: float = 300.0,
    cps: float = 15.0,
    pause_p: float = 0.08,
    turn_p: float = 0.3,
    speakers: int = 3,
    none_speaker: bool = False,
) -> list[Segment]:
    """Segments of one to three sentences; speech at about ``cps`` characters a second, random
    pauses (some right after an article), speaker changes between segments."""
    rng = random.Random(seed)
    segments: list[Segment] = []
    t = rng.uniform(0, 2)
    speaker = 1
    while t < seconds:
        if segments and rng.random() < turn_p:
            speaker = rng.choice([s for s in range(1, speakers + 1) if s != speaker] or [speaker])
        words: list[Word] = []
        for _ in range(rng.randint(1, 3)):
            for text in sentence(rng):
                duration = (len(text) + 1) / cps * rng.uniform(0.7, 1.3)
                words.append(Word(round(t, 3), round(t + duration, 3), " " + text, rng.uniform(0.5, 1)))
                t += duration
                r = rng.random()
                if r < pause_p:
                    t += rng.uniform(0.5, 3.0)
                elif r < pause_p + 0.02:
                    t += rng.uniform(3.0, 9.0)
                else:
                    t += rng.uniform(0.0, 0.08)
            t += rng.uniform(0.1, 0.8)
        segments.append(
            Segment(
                words[0].start,
                words[-1].end,
                "".join(w.text for w in words).strip(),
                words,
                None if none_speaker and speaker == 1 else speaker,
            )
        )
        t += rng.uniform(0.0, 1.5)
    return segments


def seg(text: str, start: float = 0.0, speaker: int | None = None, step: float = 0.3) -> Segment:
    """A segment whose words each take ``step`` seconds."""
    words, t = [], start
    for part in text.split():
        words.append(Word(round(t, 3), round(t + step * 0.85, 3), " " + part))
        t += step
    return Segment(start, round(t, 3), text, words, speaker)


def texts(segments: list[Segment]) -> list[str]:
    return [s.text for s in segments]
