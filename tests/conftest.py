"""Shared test settings: moderate hypothesis example counts keep `make test` fast, and derandomized examples keep
it reproducible (CI reruns exactly what passed here). TRN_TEST_RANDOMIZE=1 explores fresh examples instead."""

import os

# SciPy reads this once, at its first import, and some test module imports it before tests/test_sklearn.py runs:
# scikit-learn's array-API dispatch (and SciPy's own) needs it set first.
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
