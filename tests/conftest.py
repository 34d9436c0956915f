"""Shared test settings: moderate hypothesis example counts keep `make test` fast, and derandomized examples keep
it reproducible (CI reruns exactly what passed here). TRN_TEST_RANDOMIZE=1 explores fresh examples instead."""

import os

# SciPy reads this once, at its first import, and some test module imports it before
# tests/ecosystem/test_sklearn.py runs: scikit-learn's array-API dispatch (and SciPy's own) needs it set first.
os.environ.setdefault("SCIPY_ARRAY_API", "1")

from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile(
    "trn",
    max_examples=int(os.environ.get("TRN_TEST_MAX_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
    derandomize=os.environ.get("TRN_TEST_RANDOMIZE") != "1",
)
settings.load_profile("trn")


# --- white-box tests: those that reach trn_backend's private names pin its internals and move with them. They are
# marked ``whitebox`` from their source (``pytest -m "not whitebox"`` runs the tests of the public behaviour).

import ast  # noqa: E402
import functools  # noqa: E402
from pathlib import Path  # noqa: E402


@functools.cache
def reaches_private_names(path: Path) -> bool:
    """Whether a test module imports a private module or name of trn_backend (``from trn_backend import _x``,
    ``from trn_backend._x import y``, ``import trn_backend._x``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trn_backend"):
            if any(part.startswith("_") for part in node.module.split(".")) or any(
                alias.name.startswith("_") for alias in node.names
            ):
                return True
        elif isinstance(node, ast.Import) and any(
            a.name.startswith("trn_backend") and any(p.startswith("_") for p in a.name.split(".")) for a in node.names
        ):
            return True
    return False


def pytest_collection_modifyitems(items):
    import pytest

    for item in items:
        if reaches_private_names(Path(str(item.fspath))):
            item.add_marker(pytest.mark.whitebox)
