# Every target that runs code installs first, so a fresh clone needs only `make demo` / `make test`.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test demo bench results lint format clean

install: $(STAMP)

# Reinstall only when the declared dependencies or the lock change.
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]"
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest

demo: install
	bash scripts/demo.sh $(BIN)

bench: install
	$(BIN)/python bench/bench_ke.py
	$(BIN)/python bench/bench_iupac.py
	$(BIN)/python bench/bench_glycan.py
	$(BIN)/python bench/bench_export.py --markdown

# bench/RESULTS.md from the row files the scripts write with --record (bench/results/*.json)
results: install
	$(BIN)/python bench/make_results.py

lint: install
	$(BIN)/ruff check curate tests bench
	$(BIN)/ruff format --check curate tests bench

format: install
	$(BIN)/ruff format curate tests bench
	$(BIN)/ruff check --fix curate tests bench

# demo-out only when the demo made it (its .curate-demo mark): never a folder of someone else's
clean:
	rm -rf $(VENV)
	@if [ -d demo-out ] && [ ! -f demo-out/.curate-demo ]; then \
		echo "make clean: demo-out was not made by scripts/demo.sh (no .curate-demo); left alone" >&2; \
	elif [ -d demo-out ]; then rm -rf demo-out; fi
