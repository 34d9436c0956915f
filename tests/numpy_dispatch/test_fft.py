"""numpy.fft (trn_backend/numpy_dispatch/fft.py) against NumPy on the same data: the table's cases, and fftfreq with
a NeuronArray spacing."""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp
from tests.numpy_dispatch.calls import CPLX, F32, OTHER_ORDER, T3, Case, M, _apply, _neuron, _numpy_tree, run_both
from tests.support import assert_same_results

CASES = [
    Case(np.fft.fft, (CPLX,)),
    Case(np.fft.fft, (M,), {"n": 6, "axis": 0, "norm": "ortho"}),
    Case(np.fft.fft, (F32,)),
    Case(np.fft.ifft, (CPLX,), {"norm": "forward"}),
    Case(np.fft.rfft, (M,)),
    Case(np.fft.irfft, (CPLX,), {"n": 6}),
    Case(np.fft.hfft, (CPLX,)),
    Case(np.fft.ihfft, (M,)),
    Case(np.fft.fftn, (T3,)),
    Case(np.fft.fftn, (T3,), {"s": (4, 4), "axes": (0, 2)}),
    Case(np.fft.ifftn, (CPLX,)),
    Case(np.fft.rfftn, (T3,)),
    Case(np.fft.irfftn, (CPLX,)),
    Case(np.fft.fft2, (T3,)),
    Case(np.fft.ifft2, (T3,)),
    Case(np.fft.rfft2, (T3,)),
    Case(np.fft.irfft2, (T3 + 1j,), {"s": (3, 6)}),
    Case(np.fft.fftshift, (T3,)),
    Case(np.fft.fftshift, (T3,), {"axes": 1}),
    Case(np.fft.ifftshift, (M,)),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_agrees_with_numpy(case: Case) -> None:
    ours, theirs = run_both(case.func, *case.args, **case.kwargs)
    if case.post is not None:
        ours = _apply(case, _numpy_tree(ours))
        theirs = _apply(case, theirs)
        ours = _neuron(ours)
    assert_same_results(ours, theirs, dtype=case.dtype, rtol=OTHER_ORDER, atol=case.atol)


def test_fftfreq_with_a_neuron_spacing_returns_a_neuron_array() -> None:
    # fftfreq takes no array, so NumPy never dispatches it; a NeuronArray spacing reaches us through ufuncs
    d = xp.asarray(0.25, dtype=xp.float64)
    assert_same_results(np.fft.fftfreq(6, d), np.fft.fftfreq(6, 0.25), rtol=OTHER_ORDER)
    assert_same_results(np.fft.rfftfreq(6, d), np.fft.rfftfreq(6, 0.25), rtol=OTHER_ORDER)
