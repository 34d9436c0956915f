# Two entry points: `make demo` and `make test`. Both create and reuse ./.venv.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# torch first, pinned: 2.13.0 is the CPU build on local disk; any other request pulls a multi-GB CUDA build.
TORCH  := torch==2.13.0

.PHONY: demo test test-fast test-slow fuzz lint format typecheck bench calibrate calibrate-network conformance precision-report docs wheel-smoke clean

# Each install stage says what it installs before pip runs (quietly, without its progress bars), and how large
# the environment is after it. Downloads come from pip's cache where it has them.
STAGE = @printf '[setup] %s\n'
# setuptools' notice that an editable install maps packages through an import finder (it must: kernels/ is installed
# as trn_backend.kernels) is information, not a problem: silenced by its message, nothing else
EDITABLE = PYTHONWARNINGS="ignore:Editable installation"
SIZE  = @printf '[setup]   %s is now %s\n' $(VENV) "$$(du -sh $(VENV) | cut -f1)"

$(VENV)/.base:
	$(STAGE) "1/3 a virtual environment in $(VENV), with the newest pip"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(STAGE) "2/3 $(TORCH), the CPU build (a 190 MB wheel, about 900 MB installed)"
	$(PIP) install -q $(TORCH)
	$(SIZE)
	touch $@

$(VENV)/.installed: $(VENV)/.base pyproject.toml
	$(STAGE) "3/3 trn-backend (editable) and its dependencies: numpy, array-api-compat, opt_einsum, ml_dtypes, tqdm"
	$(EDITABLE) $(PIP) install -q -e .
	$(SIZE)
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed pyproject.toml
	$(STAGE) "test extras: pytest, hypothesis, array-api-strict, cotengra, matplotlib, dask, scikit-learn, scipy, pyscf"
	$(EDITABLE) $(PIP) install -q -e ".[test]"
	$(SIZE)
	touch $@

# the demo's extras: PySCF (chem), matplotlib (plot), cotengra
$(VENV)/.installed-demo: $(VENV)/.installed pyproject.toml
	$(STAGE) "demo extras: PySCF (integrals and the reference energy), matplotlib (the figure), cotengra (paths)"
	$(EDITABLE) $(PIP) install -q -e ".[chem,plot,cotengra]"
	$(SIZE)
	touch $@

demo: $(VENV)/.installed-demo
	$(PY) examples/demo.py

test: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 -m "not slow" tests

# a quick run for contributors (under 2 minutes on 2 cores): without the tests marked heavy (over 2 s) or slow, 10
# hypothesis examples per property instead of 40; make test runs everything it leaves out
test-fast: $(VENV)/.installed-test
	TRN_TEST_MAX_EXAMPLES=$${TRN_TEST_MAX_EXAMPLES:-10} $(PY) -m pytest -q -n 2 -m "not slow and not heavy" tests

# the tests marked slow (each over a minute: documented tables regenerated from the cost model, sweeps of large
# modelled kernels); .ci/run runs them after `make test`
test-slow: $(VENV)/.installed-test
	$(PY) -m pytest -q -n 2 -m slow tests

# the differential harness against NumPy 2 (tests/differential) run long: fresh examples, 300 per entry point, shrunk
fuzz: $(VENV)/.installed-test
	TRN_TEST_RANDOMIZE=1 TRN_FUZZ_EXAMPLES=$${TRN_FUZZ_EXAMPLES:-300} TRN_FUZZ_SHRINK=1 $(PY) -m pytest -q -n 2 tests/differential

# ruff (lint, and the format check) and mypy, pinned in the "lint" extra; `make format` rewrites the layout
PYTHON_DIRS := trn_backend kernels tests benchmarks conformance examples docs/_ext
$(VENV)/.installed-lint: $(VENV)/.installed-test pyproject.toml
	$(STAGE) "lint extras: ruff (lint and format) and mypy"
	$(EDITABLE) $(PIP) install -q -e ".[test,lint]"
	touch $@

lint: $(VENV)/.installed-lint
	$(VENV)/bin/ruff check $(PYTHON_DIRS)
	$(VENV)/bin/ruff format --check $(PYTHON_DIRS)

format: $(VENV)/.installed-lint
	$(VENV)/bin/ruff format $(PYTHON_DIRS)

# mypy on trn_backend (kernels/ through the trn_backend/kernels link) and tests/typing; settings in pyproject.toml
typecheck: $(VENV)/.installed-lint
	$(VENV)/bin/mypy

# the benchmarks' extras on top of the test ones (bench_families.py's generators and quimb)
$(VENV)/.installed-bench: $(VENV)/.installed-test pyproject.toml
	$(EDITABLE) $(PIP) install -q -e ".[test,bench]"
	touch $@

# Every benchmark, each interleaving the alternatives in one process; results in benchmarks/results/.
bench: $(VENV)/.installed-bench
	$(PY) benchmarks/bench_contract.py
	$(PY) benchmarks/bench_namespace.py
	$(PY) benchmarks/bench_numpy_dispatch.py
	$(PY) benchmarks/bench_precision_block.py
	$(PY) benchmarks/bench_emulation.py
	$(PY) benchmarks/bench_mode_shapes.py
	$(PY) benchmarks/bench_sliced.py
	$(PY) benchmarks/bench_selection.py
	$(PY) benchmarks/bench_families.py
	$(PY) benchmarks/bench_families.py --heldout
	$(PY) benchmarks/bench_autoray.py
	$(PY) benchmarks/bench_layouts.py
	$(PY) benchmarks/calibrate_modes.py

# Only the precision modes' cost table that target_forward_error= ranks modes by (trn_backend/data/mode_costs.json);
# on a CUDA host: python benchmarks/calibrate_modes.py --device cuda --write-package-table
calibrate: $(VENV)/.installed-test
	$(PY) benchmarks/calibrate_modes.py --write-package-table

# the gloo collectives' alpha-beta constants and this machine's matmul rate, which the sharded planner prices
# placements by (the gloo-cpu entry of trn_backend/data/interconnects.json)
calibrate-network: $(VENV)/.installed-test
	$(PY) -m trn_backend.distributed.calibrate --ranks 2 4

conformance: $(VENV)/.installed-test
	$(EDITABLE) $(PIP) install -q -e ".[test,conformance]"
	$(PY) conformance/run.py

precision-report: $(VENV)/.installed-test
	mkdir -p build
	$(PY) -m trn_backend precision-report --device-model trn2 --png build/precision-report.png | tee build/precision-report.txt

# the guides in docs/ and the API reference from the docstrings, as HTML in build/docs/html; offline, and every
# Sphinx warning (a broken link or cross-reference, a malformed docstring) fails the build
$(VENV)/.installed-docs: $(VENV)/.installed pyproject.toml
	$(EDITABLE) $(PIP) install -q -e ".[docs]"
	touch $@

docs: $(VENV)/.installed-docs
	$(PY) -m sphinx -E -W --keep-going -q -b html docs build/docs/html

# the wheel and sdist built, checked for their files and for build warnings, the wheel installed into a fresh venv
# outside the checkout and smoke-tested there (.ci/wheel_smoke.sh; about a minute)
wheel-smoke:
	bash .ci/wheel_smoke.sh $(PYTHON)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .hypothesis
