# Two entry points: `make demo` and `make test`. Both create and reuse ./.venv.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other request pulls a multi-GB CUDA build.
TORCH  := torch==2.13.0

.PHONY: demo test lint bench calibrate conformance precision-report clean

$(VENV)/.base:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q $(TORCH)
	touch $@

$(VENV)/.installed: $(VENV)/.base pyproject.toml
	$(PIP) install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(PIP) install -q -e ".[test]"
	touch $@

# the demo's extras: PySCF (chem), matplotlib (plot), cotengra
$(VENV)/.installed-demo: $(VENV)/.installed pyproject.toml
	$(PIP) install -q -e ".[chem,plot,cotengra]"
	touch $@

demo: $(VENV)/.installed-demo
	$(PY) examples/demo.py

test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 tests

lint: $(VENV)/.installed-test
	$(PIP) install -q ruff
	$(VENV)/bin/ruff check trn_backend kernels tests benchmarks conformance examples

# the benchmarks' extras on top of the test ones (bench_families.py's generators and quimb)
$(VENV)/.installed-bench: $(VENV)/.installed-test pyproject.toml
	$(PIP) install -q -e ".[test,bench]"
	touch $@

# Every benchmark, each interleaving the alternatives in one process; results in benchmarks/results/.
bench: $(VENV)/.installed-bench
	$(PY) benchmarks/bench_contract.py
	$(PY) benchmarks/bench_namespace.py
	$(PY) benchmarks/bench_numpy_dispatch.py
	$(PY) benchmarks/bench_emulation.py
	$(PY) benchmarks/bench_mode_shapes.py
	$(PY) benchmarks/bench_sliced.py
	$(PY) benchmarks/bench_selection.py
	$(PY) benchmarks/bench_families.py
	$(PY) benchmarks/calibrate_modes.py

# Only the precision modes' cost table that target_forward_error= ranks modes by (trn_backend/data/mode_costs.json);
# on a CUDA host: python benchmarks/calibrate_modes.py --device cuda
calibrate: $(VENV)/.installed-test
	$(PY) benchmarks/calibrate_modes.py

conformance: $(VENV)/.installed-test
	$(PIP) install -q -e ".[test,conformance]"
	$(PY) conformance/run.py

precision-report: $(VENV)/.installed-test
	$(PY) -m trn_backend precision-report --device-model trn2 --png benchmarks/results/precision_report.png | tee benchmarks/results/precision_report.txt

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
