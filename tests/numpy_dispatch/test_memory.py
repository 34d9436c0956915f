"""numpy.may_share_memory and numpy.shares_memory (trn_backend/numpy_dispatch/memory.py) on NeuronArrays, views of
them, and ndarrays."""

from __future__ import annotations

import numpy as np
import torch

import trn_backend as xp


def test_share_memory_of_neuron_arrays() -> None:
    x = xp.asarray(np.arange(12.0).reshape(3, 4))
    other = xp.asarray(np.arange(12.0).reshape(3, 4))
    for func in (np.may_share_memory, np.shares_memory):
        assert func(x, x[1]) is True
        assert func(x[0], x[1]) is False
        assert func(x, other) is False
        assert func(x[:, :0], x) is False
    flat = xp.reshape(x, (-1,))
    interleaved = (flat[::2], flat[1::2])
    assert np.may_share_memory(*interleaved) is True  # bounds overlap
    assert np.shares_memory(*interleaved) is False  # no element in common
    assert np.may_share_memory(*interleaved, max_work=-1) is False


def test_share_memory_with_ndarrays_compares_host_memory() -> None:
    host = np.arange(10.0)
    t = torch.from_numpy(host)
    view = xp.NeuronArray(t[2:5])
    assert np.shares_memory(view, host) is True
    assert np.may_share_memory(host[5:], view) is False
    assert np.shares_memory(view, host[::3]) is True
    assert np.shares_memory(view, np.arange(3.0)) is False
    assert np.shares_memory(view, [2.0, 3.0]) is False
