# The lab kit's entry points (Debian 12 / Ubuntu). Labs run as an ordinary user; `make test` as root.
VENV ?= $(or $(LABTOOLS_VENV),.venv)
.PHONY: lab test test-notebooks test-timing test-browser check-provisioning unit quick lint dev demo setup students bench clean help

help:
	@echo "make lab      start JupyterLab on http://127.0.0.1:8888 (token printed)"
	@echo "make test     install everything needed and run the whole test suite"
	@echo "make unit     every unit test, on all CPUs (no network; any user: no system packages needed)"
	@echo "make quick    a few unit tests of every layer, on all CPUs (under two minutes)"
	@echo "make lint     ruff and mypy"
	@echo "make dev      only the venv and the kit with its development tools (no system packages)"
	@echo "make test-notebooks  run every solution notebook on a real network (VM if needed)"
	@echo "make test-browser    make lab's JupyterLab driven in headless Chromium"
	@echo "make test-timing     the timing-dependent network tests ROUNDS times (default 20)"
	@echo "make check-provisioning  the lab VM's provisioning on a fresh Debian 12 under systemd"
	@echo "make demo     run the five test cases on the reference topology (a live one: labtools demo PRESET, docs/demo.md)"
	@echo "make students regenerate the student notebooks from solutions/"
	@echo "make bench    every benchmark (about an hour): BENCHMARKS.md and benchmarks/results/"
	@echo "make clean    remove leftovers of a crashed lab"

setup:
	bash scripts/setup.sh

dev:
	bash scripts/setup.sh --dev

lab: setup
	bash scripts/lab.sh

test:
	bash scripts/test.sh

test-notebooks: setup
	LABTOOLS_QUICK=1 $(VENV)/bin/labtools vm --if-needed --env LABTOOLS_QUICK --timeout 3600 -- \
	    $(abspath $(VENV))/bin/python -m pytest -q --durations=0 -m network tests/teach/test_notebooks.py tests/teach/test_widgets.py

test-timing: setup
	LABTOOLS_QUICK=1 LABTOOLS_TIMING_ROUNDS=$(or $(ROUNDS),20) $(VENV)/bin/labtools vm --if-needed \
	    --env LABTOOLS_QUICK --env LABTOOLS_TIMING_ROUNDS --timeout 7200 -- \
	    $(abspath $(VENV))/bin/python -m pytest -q -m network tests/lab/test_network_timing.py

test-browser:
	bash scripts/setup.sh --test
	$(VENV)/bin/python -m pytest -q -s -m browser tests/test_browser.py tests/instructor/test_edition_lab.py

check-provisioning:
	bash scripts/setup.sh --test
	bash scripts/check-provisioning.sh

# the unit tests (tests/conftest.py: --unit leaves out every stage's marker of pyproject.toml)
# in parallel on JOBS processes (default: one per CPU)
unit: dev
	$(VENV)/bin/python -m pytest -q --unit -n $(or $(JOBS),auto)

quick: dev
	$(VENV)/bin/python -m pytest -q --quick -n $(or $(JOBS),auto)

lint: dev
	$(VENV)/bin/ruff check labtools tests benchmarks topologies solutions deploy
	$(VENV)/bin/mypy

demo: setup
	$(VENV)/bin/labtools run portfolio all --duration 10

students: setup
	$(VENV)/bin/labtools notebooks build

bench: setup
	$(VENV)/bin/python benchmarks/bench.py $(if $(REPEAT),--repeat $(REPEAT)) $(if $(ONLY),--only $(ONLY)) $(if $(VM_SIZES),--vm-sizes $(VM_SIZES))

clean:
	$(VENV)/bin/labtools clean
