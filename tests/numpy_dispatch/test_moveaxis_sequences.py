"""numpy.moveaxis on a NeuronArray takes the axes as NumPy does: an int or any sequence of ints (a range, an
ndarray), not only the tuples and lists the namespace's moveaxis takes. (To fold into tests/numpy_dispatch/
test_shape.py, the shape section's file, once that exists.)"""

from __future__ import annotations

import numpy as np
import pytest

import trn_backend as xp
from tests.support import assert_same


@pytest.mark.parametrize(("source", "destination"), [(range(2), [2, 3]), (np.array([0, 1]), (2, 3)),
                                                     (np.arange(1), range(3, 4))])
def test_moveaxis_takes_any_sequence_of_axes(source, destination) -> None:
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    assert_same(np.moveaxis(xp.asarray(x), source, destination), np.moveaxis(x, source, destination))
