"""``sets.py`` (the service and local speakers on the three sets) with the spectral step's neighbour
graph of ``short_clusters.py`` in place of the service's: the whole pipeline (closer look, changes
redrawn, local speakers) run on the clusters it gives.

    nice -n 10 .venv/bin/python bench/speakers/experiments/meeting/sets_with.py MIN_NEIGHBOURS wide|narrow [sets.py's options]
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
sys.path.insert(0, str(HERE))

from short_clusters import spectral  # noqa: E402

from bench.speakers import sets  # noqa: E402
from transcription.pipeline.speakers import clustering  # noqa: E402

if __name__ == "__main__":
    neighbours, grid = int(sys.argv[1]), sys.argv[2]
    clustering._spectral = spectral(neighbours, grid == "wide")  # noqa: SLF001  (the experiment swaps the service's step)
    sys.argv = [sys.argv[0], *sys.argv[3:]]
    sets.main()
