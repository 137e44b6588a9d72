"""What the tests and the benchmarks share, so that neither imports the other: real processes started
and awaited (``processes``: bin/web, bin/worker, redis-server), the test media and the server that
plays the internet with it (``media_files``, ``media_server``), synthetic speakers (``speaker_audio``).

The service never imports this package (an import-linter contract); it is not installed with it.
"""
