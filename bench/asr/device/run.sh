set -e
. /tmp/gpu/env.sh
ls -la /tmp/gpu/m
mkdir -p /tmp/gpu/whisper-base
cat /tmp/gpu/m/model.part0 /tmp/gpu/m/model.part1 /tmp/gpu/m/model.part2 .gpu/c4/model.part3 > /tmp/gpu/whisper-base/model.bin
cp .gpu/c4/config.json .gpu/c4/tokenizer.json .gpu/c4/vocabulary.json /tmp/gpu/whisper-base/
sha256sum /tmp/gpu/whisper-base/model.bin
PYTHONUNBUFFERED=1 python3 bench/asr/gpu.py --wav .gpu/c4/speech.wav --reference .gpu/c4/speech.ref.txt --model /tmp/gpu/whisper-base --weights .gpu/c4/pretrained.pt --device cuda --device cpu --rounds 3 --out "$OUT/results-gpu.json"

