"""The plan of what an edit translates again (pipeline.transcripts.retranslation): only cues whose text changed,
kept translations moved to their new times, an earlier plan's marks kept and not counted twice."""

from transcription.pipeline.transcripts import retranslation
from transcription.pipeline.transcripts.captions import Cue


def cues(*texts, start=0.0):
    return [Cue(start + 2 * i, start + 2 * i + 1.5, [text]) for i, text in enumerate(texts)]


def spanish(*texts):
    return retranslation.current(cues(*texts))


def test_only_changed_cues_are_marked_and_counted():
    old = cues("Hello.", "How are you?", "Fine.")
    plan, changed = retranslation.plan(
        old, spanish("Hola.", "¿Cómo estás?", "Bien."), cues("Hello.", "Who are you?", "Fine.")
    )
    assert [cue["done"] for cue in plan] == [["Hola."], None, ["Bien."]]
    assert changed == [1] and retranslation.seconds_of(plan, changed) == 2  # 1.5 s rounded up


def test_a_split_cue_marks_its_parts_and_moved_cues_keep_their_lines_at_new_times():
    old = cues("Hello.", "How are you? Fine.", "Bye.")
    new = [Cue(0, 1.5, ["Hello."]), Cue(2, 2.7, ["How are you?"]), Cue(2.8, 3.5, ["Fine."]), Cue(9, 10, ["Bye."])]
    plan, changed = retranslation.plan(old, spanish("Hola.", "¿Cómo estás? Bien.", "Adiós."), new)
    assert changed == [1, 2]
    assert (plan[3]["start"], plan[3]["done"]) == (9, ["Adiós."])


def test_an_edit_before_the_worker_ran_keeps_the_marks_and_charges_only_its_own_change():
    old = cues("Hello.", "How are you?", "Fine.")
    first = cues("Hello.", "Who are you?", "Fine.")
    plan, _ = retranslation.plan(old, spanish("Hola.", "¿Cómo estás?", "Bien."), first)
    second, changed = retranslation.plan(first, plan, cues("Hi.", "Who are you?", "Fine."))
    assert [cue["done"] for cue in second] == [None, None, ["Bien."]]
    assert changed == [0], "the cue marked by the first edit is not charged again"


def test_the_marked_runs_go_to_the_translator_in_one_call_kept_apart():
    plan, _ = retranslation.plan(
        cues("a.", "b.", "c.", "d."), spanish("A.", "B.", "C.", "D."), cues("x.", "b.", "y.", "z.")
    )
    calls = []

    def shout(batch):
        calls.append([" ".join(c.lines) for c in batch])
        return [Cue(c.start, c.end, [line.upper() for line in c.lines]) for c in batch]

    out = retranslation.complete(plan, shout)
    assert calls == [["x.", "", "y.", "z."]], "one call; an empty cue between runs"
    assert [c.lines for c in out] == [["X."], ["B."], ["Y."], ["Z."]]


def test_a_translation_out_of_step_is_translated_whole():
    plan, changed = retranslation.plan(cues("a.", "b."), spanish("A."), cues("a.", "b."))
    assert changed == [0, 1]
