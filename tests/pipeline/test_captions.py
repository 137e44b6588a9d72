"""Tests for transcription.pipeline.transcripts.captions: cleaning, transcript text, cues, SRT and WebVTT.

Every subtitle rule is checked on the SRT and WebVTT text after parsing it back with pysubs2, and
ffmpeg must read both files without a word on stderr.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pysubs2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from transcription.pipeline.recognition.words import ends_sentence
from transcription.pipeline.transcripts.captions import Cue, build_cues, to_srt, to_webvtt, webvtt_voices, with_voices
from transcription.pipeline.transcripts.paragraphs import transcript_text
from transcription.pipeline.types import Segment, Word

from .synth import ARTICLES_ETC, seg, transcript

NO_BREAK = ARTICLES_ETC | {"i"}


# ---------------------------------------------------------------------------------------------
# Checking subtitles as a player would see them
# ---------------------------------------------------------------------------------------------


def parse(text: str, fmt: str) -> list[pysubs2.SSAEvent]:
    subs = pysubs2.SSAFile.from_string(text, format_=fmt)
    return list(subs.events)


def expected_words(segments: list[Segment]) -> list[tuple[str, int]]:
    return [(w.text.strip(), 1 if s.speaker is None else s.speaker) for s in segments for w in s.words]


def check_events(events: list[pysubs2.SSAEvent], words: list[tuple[str, int]]) -> None:
    """All the rules of build_cues, on events read back from a file."""
    position = 0
    previous_end = None
    for event in events:
        lines = event.text.split(r"\N")
        duration = event.end - event.start
        where = f"{event.start}-{event.end} {lines!r}"
        assert 1 <= len(lines) <= 2, where
        assert all(0 < len(line) <= 42 for line in lines), where
        assert 1000 <= duration <= 7000, where
        # characters a second, counting the line break as a space (stricter than without it)
        assert len(" ".join(lines)) * 50 <= duration, where
        if previous_end is not None:
            assert event.start >= previous_end, f"overlap at {where}"
        previous_end = event.end

        dashed = [line.startswith("- ") for line in lines]
        cue_words = [[w for w in (line[2:] if dash else line).split(" ")] for line, dash in zip(lines, dashed)]
        flat = [w for line in cue_words for w in line]
        assert [w for w, _ in words[position : position + len(flat)]] == flat, f"words lost or moved at {where}"
        speakers = [s for _, s in words[position : position + len(flat)]]
        if len(set(speakers)) > 1:
            assert dashed == [True, True], f"speaker change without dashes at {where}"
            first = len(cue_words[0])
            assert len(set(speakers[:first])) == 1 and len(set(speakers[first:])) == 1, where
        else:
            assert not any(dashed), f"dash without a speaker change at {where}"
        for line in cue_words:
            assert line[-1].lower() not in NO_BREAK, f"line ends with {line[-1]!r} at {where}"
        if len(lines) == 2 and not any(dashed):
            for line in cue_words:
                assert len(line) > 1 or len(line[0]) >= 10, f"orphan at {where}"
        position += len(flat)
    assert position == len(words), "words missing at the end"


def check_both(cues: list[Cue], words: list[tuple[str, int]]) -> tuple[str, str]:
    srt, vtt = to_srt(cues), to_webvtt(cues)
    assert vtt.startswith("WEBVTT")
    check_events(parse(srt, "srt"), words)
    check_events(parse(vtt, "vtt"), words)
    check_voices(vtt, words)
    return srt, vtt


def check_voices(vtt: str, words: list[tuple[str, int]]) -> None:
    """Every WebVTT cue carries the voice span of its words' speaker, one a line when two share it."""
    position = 0
    blocks = [block for block in vtt.split("\n\n") if "-->" in block]
    assert len(blocks) == len(webvtt_voices(vtt))
    for block in blocks:
        lines = block.split("\n")[2:] if "-->" in block.split("\n")[1] else block.split("\n")[1:]
        matches = [re.match(r"^(?:<v Speaker (\d+)>)?(.*?)(?:</v>)?$", line) for line in lines]
        spans = [span for span in matches if span]
        assert len(spans) == len(lines) and spans[0].group(1), f"no voice span on {block!r}"
        voices = [int(span.group(1)) for span in spans if span.group(1)]
        count = len(" ".join(span.group(2).removeprefix("- ") for span in spans).split(" "))
        speakers = [s for _, s in words[position : position + count]]
        assert voices == list(dict.fromkeys(speakers)), block
        position += count
    assert position == len(words)


def check_cues(cues: list[Cue]) -> None:
    """Cue objects themselves: sorted, non-overlapping, whole milliseconds."""
    for cue in cues:
        assert round(cue.start * 1000) == pytest.approx(cue.start * 1000, abs=1e-6)
        assert round(cue.end * 1000) == pytest.approx(cue.end * 1000, abs=1e-6)
    for a, b in zip(cues, cues[1:]):
        assert a.end <= b.start


FFMPEG = shutil.which("ffmpeg")


def ffmpeg_reads(path, count: int) -> None:
    """ffmpeg decodes the file (converting it to ASS) silently and finds every cue, timed alike."""
    assert FFMPEG, "the callers check first that ffmpeg is installed"
    out = path.with_suffix(path.suffix + ".ass")
    result = subprocess.run(
        [
            FFMPEG,
            "-nostdin",
            "-hide_banner",
            "-v",
            "error",
            "-i",
            str(path),
            "-map",
            "0:s",
            "-c:s",
            "ass",
            "-f",
            "ass",
            "-y",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result.stderr
    events = pysubs2.load(str(out)).events
    assert len(events) == count


# ---------------------------------------------------------------------------------------------
# transcript_text
# ---------------------------------------------------------------------------------------------


class TestTranscriptText:
    def test_layout(self):
        segments = [
            Segment(0.4, 2.0, " Hello there.", [], 2),
            Segment(2.5, 4.0, "How are you?", [], 2),
            Segment(65.99, 70.0, " Fine, thanks.", [], None),
            Segment(3725.7, 3730.0, "Good.", [], 3),
            Segment(3731.0, 3732.0, "Bye.", [], 2),
        ]
        assert transcript_text(segments) == (
            "[00:00:00] Speaker 1: Hello there. How are you?\n"
            "\n"
            "[00:01:05] Speaker 2: Fine, thanks.\n"
            "\n"
            "[01:02:05] Speaker 3: Good.\n"
            "\n"
            "[01:02:11] Speaker 1: Bye.\n"
        )

    def test_single_speaker_still_labelled(self):
        assert (
            transcript_text([Segment(0, 1, "One.", [], None), Segment(1, 2, "Two.", [], None)])
            == "[00:00:00] Speaker 1: One. Two.\n"
        )

    def test_empty(self):
        assert transcript_text([]) == ""

    def test_a_long_turn_is_cut_at_sentence_ends_into_paragraphs_of_at_most_a_minute(self):
        # five minutes of one voice: sentences of 7 to 18 s, some spread over two segments
        segments, at, number = [], 0.0, 0
        while at < 300:
            number += 1
            words = 20 + number * 7 % 40  # 20..59 words at 0.3 s
            halves = [f"w{number}x{k}" for k in range(words)]
            halves[-1] += "."
            cut = words // 2
            segments.append(seg(" ".join(halves[:cut]), at, speaker=1))
            segments.append(seg(" ".join(halves[cut:]), segments[-1].end, speaker=1))
            at = segments[-1].end + 0.4
        text = transcript_text(segments)
        paragraphs = text.rstrip("\n").split("\n\n")
        assert len(paragraphs) >= 5
        starts = {f"w{n}x0": s.words[0].start for n, s in zip(range(1, number + 1), segments[::2])}
        ends = {s.words[-1].text.strip(): s.words[-1].end for s in segments[1::2]}
        for paragraph in paragraphs:
            match = re.fullmatch(r"\[(\d\d):(\d\d):(\d\d)\] Speaker 1: (w\d+x0 .*\.)", paragraph)
            assert match, paragraph
            words = match.group(4).split()
            first, last = words[0], words[-1]
            assert last in ends  # ends at a sentence end
            assert ends[last] - starts[first] <= 60.0
            h, m, s = (int(g) for g in match.groups()[:3])
            assert h * 3600 + m * 60 + s == int(starts[first])  # its own timestamp
        # nothing lost or doubled
        said = [w.text.strip() for s in segments for w in s.words]
        assert " ".join(p.split(": ", 1)[1] for p in paragraphs).split() == said

    def test_one_sentence_longer_than_a_minute_is_not_cut(self):
        long_sentence = seg(" ".join(f"w{k}" for k in range(250)) + ".", 0.0, speaker=1)  # 75 s
        after = seg("Short one.", long_sentence.end + 1, speaker=1)
        assert transcript_text([long_sentence, after]) == (
            f"[00:00:00] Speaker 1: {long_sentence.text}\n\n[00:01:16] Speaker 1: Short one.\n"
        )


# ---------------------------------------------------------------------------------------------
# build_cues, to_srt, to_webvtt
# ---------------------------------------------------------------------------------------------


class TestCues:
    @pytest.mark.parametrize("seed,cps", [(1, 15.0), (2, 12.0), (3, 19.0), (4, 28.0)])
    def test_five_minutes_all_rules_and_ffmpeg(self, tmp_path, seed, cps):
        segments = transcript(seed, seconds=300, cps=cps)
        cues = build_cues(segments)
        check_cues(cues)
        srt, vtt = check_both(cues, expected_words(segments))
        if FFMPEG:
            (tmp_path / "a.srt").write_text(srt, encoding="utf-8")
            (tmp_path / "a.vtt").write_text(vtt, encoding="utf-8")
            ffmpeg_reads(tmp_path / "a.srt", len(cues))
            ffmpeg_reads(tmp_path / "a.vtt", len(cues))

    def test_speaker_changes_start_new_cues_and_speech_stays_in_sync(self):
        segments = transcript(7, seconds=300, cps=14.0, turn_p=0.6)
        cues = build_cues(segments)
        words = expected_words(segments)
        starts, position = set(), 0
        for cue in cues:
            starts.add(position)
            position += sum(len((line[2:] if line.startswith("- ") else line).split()) for line in cue.lines)
        changes = [k for k in range(1, len(words)) if words[k][1] != words[k - 1][1]]
        assert changes and sum(k in starts for k in changes) / len(changes) >= 0.9
        # at a normal pace the subtitles never lag the speech by more than half a second
        flat = [w for s in segments for w in s.words]
        for cue, first in zip(cues, sorted(starts)):
            assert cue.start <= flat[first].start + 0.5

    def test_breaks_at_sentences_rather_than_inside(self):
        text = (
            "This is the first sentence of the talk. And here comes a second one that is long. "
            "Short. Then the third sentence, which has a comma, ends here."
        )
        cues = build_cues([seg(text, step=0.25)])
        lines = [line for cue in cues for line in cue.lines]
        assert all(line[-1] in ".,?!" for line in lines[:-1]), lines
        check_both(cues, expected_words([seg(text, step=0.25)]))

    def test_a_title_or_an_initial_is_not_a_sentence_end(self):
        # LibriVox, as the speech model times it: "And Mr." became a cue of its own (and was
        # translated alone); a title, an abbreviation or an initial ends no sentence.
        text = (
            "And Mr. John Dashwood had then leisure to consider how much there might be prudently "
            "in his power to do for them. Dr. J. Smith agreed."
        )
        cues = build_cues([seg(text, step=0.3)])
        assert all(cue.text.split()[-1] not in ("Mr.", "Dr.", "J.") for cue in cues), [c.lines for c in cues]
        for cue in cues:
            assert not any(line.endswith(("Mr.", "Dr.", "J.")) for line in cue.lines), cue.lines
        check_both(cues, expected_words([seg(text, step=0.3)]))

    @pytest.mark.parametrize(
        "word, ends",
        [
            (" then.", True),
            ('what?"', True),
            (" I.", True),
            ("好。", True),
            (" Mr.", False),
            (" e.g.", False),
            ("(Dr.", False),
            (" J.", False),
            (" then,", False),
            (" Smith", False),
        ],
    )
    def test_ends_sentence(self, word, ends):
        assert ends_sentence(word) is ends

    def test_lines_balanced_and_bottom_heavy(self):
        text = "we were talking about the way that subtitles should be broken into lines"
        cues = build_cues([seg(text, step=0.3)])
        assert len(cues) == 1 and len(cues[0].lines) == 2
        top, bottom = map(len, cues[0].lines)
        assert top <= bottom + 8 and bottom - top <= 16

    def test_dash_style_at_intra_cue_speaker_change(self):
        segments = [
            seg("Are you ready?", 0.0, 1, step=0.25),
            seg("Yes.", 0.8, 2, step=0.25),
            seg("Let us go then.", 1.1, 1, step=0.25),
        ]
        cues = build_cues(segments)
        assert any(line.startswith("- ") for cue in cues for line in cue.lines)
        check_both(cues, expected_words(segments))

    def test_no_labels_for_one_speaker(self):
        cues = build_cues([seg("Hello there. " * 20, speaker=None)])
        assert not any(line.startswith("-") for cue in cues for line in cue.lines)

    def test_article_before_long_pause_still_not_at_cue_end(self):
        words = [
            Word(0.0, 0.3, " I"),
            Word(0.3, 0.6, " saw"),
            Word(0.6, 0.8, " the"),
            Word(4.0, 4.5, " elephant."),
            Word(4.6, 5.0, " Really."),
        ]
        cues = build_cues([Segment(0, 5, "", words, 1)])
        check_both(cues, expected_words([Segment(0, 5, "", words, 1)]))

    def test_empty_input(self, tmp_path):
        cues = build_cues([])
        assert cues == []
        assert to_srt(cues) == ""
        vtt = to_webvtt(cues)
        assert vtt.startswith("WEBVTT") and vtt.strip() == "WEBVTT"
        assert parse(vtt, "vtt") == [] and pysubs2.SSAFile.from_string(vtt).events == []
        if FFMPEG:  # an empty SRT is no file ffmpeg can probe; an empty WebVTT is
            (tmp_path / "e.vtt").write_text(vtt)
            ffmpeg_reads(tmp_path / "e.vtt", 0)
        assert build_cues([Segment(0, 1, "  ", [], 1)]) == []

    def test_webvtt_voices_come_back_for_the_cues_read_from_srt(self):
        segments = [
            seg("Hello there how are you today my friend.", 0.0, speaker=1),
            seg("Fine.", 3.0, speaker=2),
            seg("Good to hear.", 3.5, speaker=1),
        ]
        cues = build_cues(segments)
        vtt = to_webvtt(cues)
        assert "<v Speaker 1>Hello there" in vtt and "<v Speaker 2>Fine.</v>" in vtt
        check_voices(vtt, expected_words(segments))
        shared = to_webvtt([Cue(0.0, 1.5, ["- Coming?", "- Yes & no."], [2, 1])])
        assert "<v Speaker 2>- Coming?</v>\n<v Speaker 1>- Yes &amp; no.</v>" in shared
        from transcription.pipeline.transcripts.captions import from_srt

        read_back = with_voices(from_srt(to_srt(cues)), vtt)
        assert [cue.speakers for cue in read_back] == [cue.speakers for cue in cues]
        assert to_webvtt(read_back) == vtt
        assert with_voices(from_srt(to_srt(cues)), "WEBVTT\n") == from_srt(to_srt(cues)), "older text: no voices"

    def test_one_word(self, tmp_path):
        segments = [Segment(2.0, 2.2, " Hi.", [Word(2.0, 2.2, " Hi.")], None)]
        cues = build_cues(segments)
        assert cues == [Cue(start=2.0, end=3.0, lines=["Hi."], speakers=[1])]
        srt, vtt = check_both(cues, expected_words(segments))
        if FFMPEG:
            (tmp_path / "a.srt").write_text(srt)
            (tmp_path / "a.vtt").write_text(vtt)
            ffmpeg_reads(tmp_path / "a.srt", 1)
            ffmpeg_reads(tmp_path / "a.vtt", 1)

    def test_very_fast_speech(self):
        # 300 words of 8-12 characters, 0.2 s each, no pauses: 50 characters a second
        words, t = [], 10.0
        for k in range(300):
            text = ("communicate", "extraordinary.", "subtitles,", "speakers")[k % 4]
            words.append(Word(round(t, 3), round(t + 0.2, 3), " " + text))
            t += 0.2
        segments = [
            Segment(words[i].start, words[i + 49].end, "", words[i : i + 50], 1 + (i // 50) % 2)
            for i in range(0, 300, 50)
        ]
        cues = build_cues(segments)
        check_cues(cues)
        check_both(cues, expected_words(segments))
        assert cues[-1].end > t  # the reading time has to come from somewhere: the cues lag

    def test_very_fast_short_burst_uses_following_silence(self):
        words = [
            Word(1.0 + 0.1 * k, 1.1 + 0.1 * k, " " + w)
            for k, w in enumerate("this sentence is spoken much too fast to read".split())
        ]
        segments = [Segment(1.0, 2.0, "", words, 1), seg("Then a pause.", 8.0, 1)]
        cues = build_cues(segments)
        assert cues[0].start == 1.0 and cues[0].end >= 1.0 + len(" ".join(cues[0].lines)) / 20
        check_both(cues, expected_words(segments))

    def test_sixty_character_word(self, tmp_path):
        long = "Pneumonoultramicroscopicsilicovolcanoconiosis-supercalifragil"  # 61 characters
        huge = "x" * 130
        segments = [
            Segment(0, 3, "", [Word(0, 0.5, " A"), Word(0.5, 2.5, " " + long), Word(2.5, 3, " end.")], 1),
            Segment(4, 6, "", [Word(4, 6, " " + huge)], 1),
        ]
        cues = build_cues(segments)
        check_cues(cues)
        lines = [line for cue in cues for line in cue.lines]
        assert all(len(line) <= 42 for line in lines) and all(len(cue.lines) <= 2 for cue in cues)
        joined = "".join(lines).replace(" ", "")
        assert joined == ("A" + long + "end." + huge)
        srt, vtt = to_srt(cues), to_webvtt(cues)
        for fmt, text in (("srt", srt), ("vtt", vtt)):
            for event in parse(text, fmt):
                assert all(len(line) <= 42 for line in event.text.split(r"\N"))
                assert 1000 <= event.end - event.start <= 7000
        if FFMPEG:
            (tmp_path / "a.srt").write_text(srt)
            (tmp_path / "a.vtt").write_text(vtt)
            ffmpeg_reads(tmp_path / "a.srt", len(cues))
            ffmpeg_reads(tmp_path / "a.vtt", len(cues))

    def test_special_characters_survive(self, tmp_path):
        text = "Use {braces} & <angle> brackets --> here. Back\\slash, 42"
        segments = [seg(text)]
        cues = build_cues(segments)
        srt, vtt = to_srt(cues), to_webvtt(cues)
        # SubRip has no escapes: a word joiner keeps readers from taking "<angle>" for a tag (pysubs2
        # drops it) and "-->" for a timing (docs/decisions/api.md, "What edited text may hold")
        assert "{braces}" in srt and "<\u2060angle>" in srt and "--\u2060> here" in srt
        assert "&amp;" in vtt and "&lt;angle&gt;" in vtt and "--&gt;" in vtt
        assert [len(parse(srt, "srt")), len(parse(vtt, "vtt"))] == [len(cues)] * 2
        if FFMPEG:
            (tmp_path / "a.srt").write_text(srt)
            (tmp_path / "a.vtt").write_text(vtt)
            ffmpeg_reads(tmp_path / "a.srt", len(cues))
            ffmpeg_reads(tmp_path / "a.vtt", len(cues))

    def test_no_space_scripts_are_not_spaced(self):
        words = [Word(0.0, 0.4, "你好"), Word(0.4, 0.8, "世界"), Word(0.8, 1.0, "。")]
        cues = build_cues([Segment(0, 1, "你好世界。", words, 1), Segment(1.2, 1.6, "再见", [Word(1.2, 1.6, "再见")])])
        assert "".join(line for cue in cues for line in cue.lines) == "你好世界。再见"

    def test_segments_without_words(self):
        segments = [Segment(0.0, 4.0, " Hello world, this has no word timestamps at all.", [], None)]
        cues = build_cues(segments)
        assert " ".join(" ".join(c.lines) for c in cues) == segments[0].text.strip()
        assert cues[0].start == 0.0 and cues[-1].end <= 4.5

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        seed=st.integers(0, 2**32 - 1),
        seconds=st.integers(1, 120),
        cps=st.floats(6.0, 45.0),
        pause_p=st.floats(0.0, 0.4),
        turn_p=st.floats(0.0, 0.9),
        speakers=st.integers(1, 4),
        none_speaker=st.booleans(),
    )
    def test_property_rules_hold(self, seed, seconds, cps, pause_p, turn_p, speakers, none_speaker):
        segments = transcript(
            seed, seconds=seconds, cps=cps, pause_p=pause_p, turn_p=turn_p, speakers=speakers, none_speaker=none_speaker
        )
        cues = build_cues(segments)
        check_cues(cues)
        check_both(cues, expected_words(segments))
