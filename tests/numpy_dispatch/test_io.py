"""NumPy's writers (trn_backend/numpy_dispatch/io.py: save, savez, savez_compressed, savetxt) on NeuronArrays: what
they write reads back as the arrays' values."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

import trn_backend as xp
from tests.numpy_dispatch.calls import nd

rng = np.random.default_rng(7)
M = rng.standard_normal((3, 4))
I = rng.integers(-5, 6, (3, 4))
CPLX = rng.standard_normal(5) + 1j * rng.standard_normal(5)


def test_save_and_load_round_trip(tmp_path: pathlib.Path) -> None:
    x = xp.asarray(M.astype(np.float32))
    np.save(tmp_path / "x.npy", x)
    loaded = np.load(tmp_path / "x.npy")
    assert type(loaded) is np.ndarray and loaded.dtype == np.float32
    np.testing.assert_array_equal(loaded, M.astype(np.float32))


@pytest.mark.parametrize("func", [np.savez, np.savez_compressed])
def test_savez_round_trip(tmp_path: pathlib.Path, func: Any) -> None:
    path = tmp_path / "arrays.npz"
    func(path, nd(I), np.arange(3), weights=nd(CPLX), out=nd(M > 0), allow_pickle=False)
    with np.load(path) as data:
        assert sorted(data.files) == ["arr_0", "arr_1", "out", "weights"]
        np.testing.assert_array_equal(data["arr_0"], I)
        np.testing.assert_array_equal(data["arr_1"], np.arange(3))
        np.testing.assert_array_equal(data["weights"], CPLX)
        np.testing.assert_array_equal(data["out"], M > 0)


def test_savetxt_round_trip(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.csv"
    np.savetxt(path, nd(M), fmt="%.17g", delimiter=",", header="a,b,c,d")
    np.testing.assert_array_equal(np.loadtxt(path, delimiter=","), M)
    assert path.read_text().startswith("# a,b,c,d\n")
    np.savetxt(path, nd(I), fmt="%d")
    np.testing.assert_array_equal(np.loadtxt(path, dtype=np.int64), I)
