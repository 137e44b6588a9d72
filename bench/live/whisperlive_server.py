"""whisper-live 0.10.0's server on the bench's model folder, run in its own venv:

/work/peer-venv/bin/python bench/live/whisperlive_server.py PORT MODEL_FOLDER
"""

import sys

from whisper_live.server import TranscriptionServer

if __name__ == "__main__":
    TranscriptionServer().run(
        "127.0.0.1",
        port=int(sys.argv[1]),
        backend="faster_whisper",
        faster_whisper_custom_model_path=sys.argv[2],
        single_model=True,
        max_clients=8,
        rest_port=int(sys.argv[1]) + 1,
    )
