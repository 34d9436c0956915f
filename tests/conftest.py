"""Shared test settings: moderate hypothesis example counts keep `make test` fast."""

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "trn",
    max_examples=int(os.environ.get("TRN_TEST_MAX_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.load_profile("trn")
