"""Fixtures of the contraction tests."""

from __future__ import annotations

import pytest

from trn_backend import _precision


@pytest.fixture(params=["calibration", "pass count"])
def basis(request):
    """What targets rank the modes by: the committed CPU calibration (native, then fp64, win on the CPU), or no
    calibration (bf16 pass counts, as on a device without one: the emulated modes win where their bounds allow)."""
    if request.param == "calibration":
        yield request.param
    else:
        with _precision.planted_costs({}):
            yield request.param
