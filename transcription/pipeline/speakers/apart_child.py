"""What the child of ``apart.DiarizationApart`` runs (``python -m``): the request as JSON on stdin,
the turns as JSON on stdout. A module of its own: it imports the package, which imports ``apart``."""

from __future__ import annotations

import json
import sys

from . import diarize, graph_cache


def _main() -> None:
    request = json.load(sys.stdin)
    graph_cache.keep_graphs_in(request.get("graphs"))
    turns = diarize(
        request["wav"],
        regions=[tuple(r) for r in request["regions"]],
        extent=[tuple(r) for r in request["extent"]],
        weights=request["weights"],
        threads=request["threads"],
    )
    json.dump([[t.start, t.end, t.speaker] for t in turns], sys.stdout)


if __name__ == "__main__":
    _main()
