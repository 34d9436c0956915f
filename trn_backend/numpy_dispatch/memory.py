"""NumPy's "Miscellaneous routines": memory ranges (may_share_memory, shares_memory). NumPy's own overlap tests
answer, run on descriptions of the memory layouts (address, shape, byte strides), which they read without touching
the data: arrays on a device are compared without a copy, and device memory never overlaps host memory.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from ._common import A
from ._registry import implements


@implements(np.may_share_memory)
def may_share_memory(a: Any, b: Any, /, max_work: Any = 0) -> bool:
    """numpy.may_share_memory: two NeuronArrays may share memory when their byte ranges overlap on the same
    device; a NeuronArray and an ndarray only on the CPU. max_work as in NumPy (0: bounds only)."""
    return _share_test(np.may_share_memory, a, b, max_work, exact=False)


@implements(np.shares_memory)
def shares_memory(a: Any, b: Any, /, max_work: Any = -1) -> bool:
    """numpy.shares_memory, exact: NumPy's solver on descriptions of the two memory layouts (address, shape,
    byte strides), which it reads without touching the data, so device memory is compared without a copy."""
    return _share_test(np.shares_memory, a, b, max_work, exact=True)


def _share_test(numpy_test: Callable[..., bool], a: Any, b: Any, max_work: Any, exact: bool) -> bool:
    devices = {x.device for x in (a, b) if isinstance(x, A)}
    if len(devices) > 1:
        return False
    (device,) = devices
    if device.type != "cpu" and not (isinstance(a, A) and isinstance(b, A)):
        return False  # device memory and host memory never overlap
    layouts = [_layout(x) if isinstance(x, A) else np.asarray(x) for x in (a, b)]
    if builtins.any(layout is None for layout in layouts):
        # a tensor without addresses (a lazy or distributed tensor): only its storage can be compared
        if exact:
            raise np.exceptions.TooHardError(
                f"{numpy_test.__name__}(): arrays on {device} have no memory addresses to compare exactly"
            )
        return True
    return builtins.bool(numpy_test(*layouts, max_work=max_work))


class _MemoryLayout:
    """Where a tensor's elements lie, as NumPy's array interface describes memory: NumPy builds an ndarray over
    the address without reading it, which is all its overlap tests need."""

    def __init__(self, t: torch.Tensor) -> None:
        size = t.element_size()
        self.__array_interface__ = {
            "version": 3,
            "shape": tuple(t.shape),
            "typestr": f"|V{size}",
            "strides": tuple(s * size for s in t.stride()),
            "data": (t.data_ptr(), True),
        }


def _layout(x: A) -> np.ndarray | None:
    t = x._t
    if t.numel() == 0:
        return np.empty((0,), dtype=np.uint8)  # an empty array shares memory with nothing
    try:
        return np.asarray(_MemoryLayout(t))
    except (RuntimeError, NotImplementedError, TypeError):
        return None
