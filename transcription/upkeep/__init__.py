"""What beat runs: the sweeper (jobs whose worker died) and retention (expired files)."""
