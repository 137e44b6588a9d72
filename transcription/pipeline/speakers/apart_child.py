"""What the child of ``apart.DiarizationApart`` runs (``python -m``): the request as two lines of JSON
on stdin (the WAV and the weights; then where the speech is), the turns as JSON on stdout. A module
of its own: it imports the package, which imports ``apart``."""

from __future__ import annotations

import json
import sys

from transcription.pipeline.speakers import SpeakerOptions, default_encoder, diarize
from transcription.pipeline.speakers.encoding import graph_cache, weight_files


def _main() -> None:
    setup = json.loads(sys.stdin.readline())
    weight_files.use_weights_dir(setup["weights_dir"])
    graph_cache.keep_graphs_in(setup["graphs"])
    # loaded while the caller's VAD pass still runs (on one core): the second line comes after it
    encoder = default_encoder(setup["weights"])
    line = sys.stdin.readline()
    if not line:  # the caller left before it knew where the speech is
        return
    speech = json.loads(line)
    turns = diarize(
        setup["wav"],
        regions=[tuple(r) for r in speech["regions"]],
        extent=[tuple(r) for r in speech["extent"]],
        encoder=encoder,
        options=SpeakerOptions(threads=setup["threads"]),
    )
    json.dump([[t.start, t.end, t.speaker] for t in turns], sys.stdout)


if __name__ == "__main__":
    _main()
