# device setup for bench/asr/gpu.py: wheels into /tmp/gpu/site, cuBLAS 13 under the name ctranslate2 asks for
set -e
mkdir -p /tmp/gpu/site /tmp/gpu/m /tmp/gpu/cu12
mv .gpu/c1/model.part0 /tmp/gpu/m/
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/gpu/site .gpu/c1/*.whl
mkdir -p /tmp/gpu/site/av
echo '# faster_whisper imports av when loaded; nothing here decodes with it (wav.py reads the WAV)' > /tmp/gpu/site/av/__init__.py
find / -xdev \( -name 'libcublas.so.*' -o -name 'libcublasLt.so.*' \) 2>/dev/null | grep -v '^/proc' | head
L=$(dirname "$(find / -xdev -name 'libcublas.so.13*' 2>/dev/null | grep -v '^/proc' | head -1)")
ln -sf "$L/libcublas.so.13" /tmp/gpu/cu12/libcublas.so.12
echo "export PYTHONPATH=/tmp/gpu/site LD_LIBRARY_PATH=/tmp/gpu/cu12:$L:\${LD_LIBRARY_PATH:-}" > /tmp/gpu/env.sh
. /tmp/gpu/env.sh
cat /tmp/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python3 --version; nproc; which nice
python3 -c "import ctranslate2, faster_whisper, langcodes, pysubs2, threadpoolctl, onnxruntime, tokenizers; print('ct2', ctranslate2.__version__, 'cuda devices', ctranslate2.get_cuda_device_count(), ctranslate2.get_supported_compute_types('cuda'))"
python3 -c "import ctypes; l=ctypes.CDLL('libcublas.so.12'); [getattr(l, s) for s in 'cublasCreate_v2 cublasDestroy_v2 cublasGemmEx cublasGemmStridedBatchedEx cublasGetMathMode cublasGetProperty cublasSetStream_v2 cublasSgemmStridedBatched cublasSgemm_v2'.split()]; print('cublas symbols ok')"
python3 -c "import sys; sys.path.insert(0, '.'); from transcription.pipeline import asr, speakers, captions, cleaning, paragraphs; print('pipeline imports ok')"
df -h /tmp | tail -1; ls -la /tmp/gpu/m
