#!/usr/bin/env bash
# Prepare what bench/asr/gpu.py needs on a lent GPU machine (no network there, 64 MiB per call):
# four folders under .gpu/ (add "/.gpu/" to .git/info/exclude), each carried by one `run` call:
#   c1: wheels for Python 3.12 + 11 MB of model.bin + setup.sh  -> run: bash .gpu/c1/setup.sh
#   c2, c3: 62 MB of model.bin each                             -> run: mv .gpu/cN/model.partN-1 /tmp/gpu/m/
#   c4: the rest of the model, speaker weights, the WAV, run.sh -> run: bash .gpu/c4/run.sh
# Call them back to back: the machine goes back after 30 s idle, and /tmp/gpu lives on it.
set -euo pipefail
cd "$(dirname "$0")/../../.."
py=.venv/bin/python
rm -rf .gpu && mkdir -p .gpu/c1 .gpu/c2 .gpu/c3 .gpu/c4
$py -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .gpu/c1 ctranslate2==4.8.5 faster-whisper==1.2.1 langcodes==3.5.1 language-data==1.4.0 pysubs2==1.8.1 marisa-trie==1.4.1
model=$($py -c "from transcription.pipeline.whisper_model import assemble_base_model as a; print(a('var/models'))")
part() { dd if="$model/model.bin" of="$1" bs=1M iflag=skip_bytes,count_bytes skip="$2" ${3:+count=$3} status=none; }
part .gpu/c1/model.part0 0 11000000
part .gpu/c2/model.part1 11000000 62000000
part .gpu/c3/model.part2 73000000 62000000
part .gpu/c4/model.part3 135000000
cp "$model"/{config.json,tokenizer.json,vocabulary.json} .gpu/c4/
cp "$($py -c 'from transcription.pipeline.speakers.weights import find_encoder_weights as f; print(f())')" .gpu/c4/pretrained.pt
$py - <<'PY'
import shutil, sys, tempfile
from pathlib import Path
sys.path.insert(0, "bench/asr")
from rtf import build_audio, reference_text
wav, repeats = build_audio(Path(tempfile.mkdtemp()), 5)
shutil.copy(wav, ".gpu/c4/speech.wav")
Path(".gpu/c4/speech.ref.txt").write_text(reference_text(repeats))
PY
cp bench/asr/device/setup.sh .gpu/c1/ && cp bench/asr/device/run.sh .gpu/c4/
du -sb .gpu/c*
