"""bench/live's recordings through the service's file path and the bare library, side by side.

    PYTHONPATH=. MODEL_CACHE_DIR=var/models .venv/bin/python bench/live/file_path.py \
        --out bench/live/results-file-path.json

The file path is ``asr.transcribe`` on the whole recording (batched, the default; sequential; and
translated to English), as stream.py takes its reference alignment and the translation stage calls
it; the bare library is faster-whisper's ``WhisperModel.transcribe`` (sequential, its VAD on) and
``BatchedInferencePipeline.transcribe``, the same model, beam 5. Per recording and mode: the text,
its WER against the reference text, and how many times each sentence comes back (a word of it
that every mode hears; README.md, "The file path").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from bench.asr.rtf import wer
from bench.live.stream import recordings, speech_wav
from transcription.pipeline.recognition.asr import RecognitionOptions, transcribe
from transcription.pipeline.recognition.whisper_model import load_model


def _times(word: str, text: str) -> int:
    return re.sub(r"[^\w' ]", " ", text.casefold()).split().count(word)


# a word of each sentence (in order) that every mode hears right; German's translation has none
KEYS = {"en": ("monday", "quarterly", "discuss"), "de": ("montag", "bericht", "sprechen")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="bench/live/results-file-path.json")
    args = parser.parse_args()
    model = load_model("base", os.environ.get("MODEL_CACHE_DIR", "var/models"), device="cpu")
    from faster_whisper import BatchedInferencePipeline

    folder = Path(tempfile.mkdtemp(prefix="bench-live-file-"))
    results: dict = {"uptime_before": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    for name, (samples, reference, lang) in recordings(folder).items():
        wav = speech_wav(samples, folder / f"{name}.wav")
        texts = {}
        for mode, batched in (("batched", True), ("sequential", False)):
            found = transcribe(model, wav, options=RecognitionOptions(language=lang), batched=batched)
            texts[f"service-{mode}"] = " ".join(s.text for s in found.segments)
        translated = transcribe(model, wav, options=RecognitionOptions(language=lang, task="translate"))
        texts["service-translate"] = " ".join(s.text for s in translated.segments)
        found, _ = model.transcribe(samples, language=lang, beam_size=5, word_timestamps=True, vad_filter=True)
        texts["bare-sequential"] = " ".join(s.text.strip() for s in found)
        found, _ = BatchedInferencePipeline(model).transcribe(samples, language=lang, beam_size=5, word_timestamps=True)
        texts["bare-batched"] = " ".join(s.text.strip() for s in found)
        results[name] = {
            mode: {
                "wer_vs_reference": None if mode == "service-translate" else round(wer(reference, text), 4),
                "words": len(text.split()),
                "words_in_reference": len(reference.split()),
                "times_each_sentence": [
                    _times(key, text) for key in KEYS["en" if mode == "service-translate" else lang]
                ]
                if mode != "service-translate" or lang == "en"
                else None,
                "text": text,
            }
            for mode, text in texts.items()
        }
        for mode, row in results[name].items():
            print(name, mode, row["wer_vs_reference"], row["times_each_sentence"], row["text"], flush=True)
    results["uptime_after"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    Path(args.out).write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
