# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PY311   ?= python3.11
PY312   ?= PYENV_VERSION=3.12.1 python3.12
VENV    := .venv
AFVENV  := .venv-af
SSVENV  := .venv-scalesim
# Stream's environment; override (make STVENV=DIR ...) to build it elsewhere.
STVENV  ?= .venv-stream
BIN     := $(VENV)/bin
AF_VERSION := 1.0.467

.PHONY: demo test test-fast lint format bench traces peers clean gtkwave-deps browser-deps native

$(VENV)/.base: pyproject.toml
	$(PY311) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.test: $(VENV)/.base pyproject.toml
	$(BIN)/pip install -q -e '.[test]'
	touch $@

# mypy (mypyc) is a build-time tool: the `native` extra. Without it (offline) `native` says so.
$(VENV)/.native-tools: $(VENV)/.base pyproject.toml
	@$(BIN)/pip install -q -e '.[native]' && touch $@ || echo "mypy could not be installed"

# The DRAM timer and controller and the engine's hot path compiled with mypyc (copies stamped
# with their sources' hash; dram/native.py and engine/native.py use them only while it
# matches), the FST writer's change loop and the VCD and Perfetto JSON writers' text loops
# compiled with cffi (views/fst_native.py, views/text_native.py, stamped alike). Each says in
# one line that it did, or why not (the pure-Python code, with the same results, is used then).
native: $(VENV)/.native-tools
	@$(BIN)/python -m cyclesim.cli.native_build || true
	@$(BIN)/python -m cyclesim.views.fst_native || true
	@$(BIN)/python -m cyclesim.views.text_native || true

# accelforge needs Python >= 3.12 (its hwcomponents dependency); it lives in its own
# environment and is called as a subprocess by cyclesim.checks.accelforge.peer.
$(AFVENV)/.installed:
	$(PY312) -m venv $(AFVENV)
	$(AFVENV)/bin/pip install -q --upgrade pip
	$(AFVENV)/bin/pip install -q accelforge==$(AF_VERSION) pyyaml
	touch $@

# hwcomponents-cacti's wheel ships a CACTI binary linked against glibc >= 2.38; where it does not
# run (Debian 12), build it from the sources the wheel ships with it. AccelForge needs it for the
# per-action energies of SRAM component classes (eyeriss).
$(AFVENV)/.cacti: $(AFVENV)/.installed
	@dir=$$($(AFVENV)/bin/python -c "import hwcomponents_cacti, os; print(os.path.join(os.path.dirname(hwcomponents_cacti.__file__), 'cacti'))") && \
	  { (cd $$dir && ./cacti 2>&1 | grep -q "Invalid arguments") || \
	    { echo "building CACTI in $$dir"; $(MAKE) -s -C $$dir opt >/dev/null; }; }
	touch $@

# SCALE-Sim 3.0.0 breaks on numpy >= 2.4; it lives in its own environment and is called as a
# subprocess by cyclesim.checks.scalesim.peer.
$(SSVENV)/.installed:
	$(PY311) -m venv $(SSVENV)
	$(SSVENV)/bin/pip install -q --upgrade pip
	$(SSVENV)/bin/pip install -q scalesim==3.0.0 "numpy<2.4"
	touch $@

# Stream (stream-dse 2.1.1) needs Python >= 3.12; zigzag-dse 3.9.1, which it pins, imports `six`
# without declaring it. Called as a subprocess by cyclesim.checks.stream.peer.
$(STVENV)/.installed:
	$(PY312) -m venv $(STVENV)
	$(STVENV)/bin/pip install -q --upgrade pip
	$(STVENV)/bin/pip install -q stream-dse==2.1.1 six
	touch $@

peers: $(VENV)/.test $(AFVENV)/.installed $(AFVENV)/.cacti $(SSVENV)/.installed $(STVENV)/.installed

# GTKWave under Xvfb loads our VCDs in a test; Debian packages, installed once per machine.
# Without root (a developer's laptop) the test says why it skipped.
gtkwave-deps:
	@command -v gtkwave >/dev/null && command -v xvfb-run >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gtkwave xvfb xauth >/dev/null; } || \
	  echo "gtkwave/xvfb could not be installed: the GTKWave test will skip"

# Headless Chromium loads the HTML report in a test (what it renders, a screenshot); Debian's
# package, installed once per machine like GTKWave. Without root the test says why it skipped.
browser-deps:
	@command -v chromium >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null; } || \
	  echo "chromium could not be installed: the HTML report's browser test will skip"

demo: $(VENV)/.base native
	$(BIN)/python examples/eyeriss_memsize/run.py --out out/eyeriss_memsize

test: peers gtkwave-deps browser-deps native
	CYCLESIM_ACCELFORGE_PYTHON=$(abspath $(AFVENV))/bin/python \
	CYCLESIM_SCALESIM_PYTHON=$(abspath $(SSVENV))/bin/python \
	CYCLESIM_STREAM_PYTHON=$(abspath $(STVENV))/bin/python \
	  $(BIN)/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal

test-fast: $(VENV)/.test native
	$(BIN)/python -m pytest -q -m "not peer and not slow" -n 2 --dist worksteal

lint: $(VENV)/.test
	$(BIN)/ruff check cyclesim tests examples benchmarks
	$(BIN)/ruff format --check cyclesim tests examples benchmarks

format: $(VENV)/.test
	$(BIN)/ruff format cyclesim tests examples benchmarks
	$(BIN)/ruff check --fix cyclesim tests examples benchmarks

# Every benchmark's output goes to docs/performance.md as printed (never typed by hand).
bench: $(VENV)/.base $(SSVENV)/.installed native
	CYCLESIM_SCALESIM_PYTHON=$(abspath $(SSVENV))/bin/python PYTHONPATH=$(CURDIR) \
	  $(BIN)/python benchmarks/performance_md.py docs/performance.md \
	  benchmarks/bench_engine.py benchmarks/bench_whole_run.py benchmarks/bench_traces.py \
	  benchmarks/bench_scalesim.py \
	  benchmarks/bench_dram.py benchmarks/bench_chip.py

traces: $(VENV)/.base
	$(BIN)/python -m cyclesim.analysis.regen_traces traces

clean:
	rm -rf $(VENV) $(AFVENV) $(SSVENV) $(STVENV) out build *.egg-info cyclesim/dram/_*_native* cyclesim/views/_fst_emit* cyclesim/views/_text_fill*
