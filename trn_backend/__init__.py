"""trn_backend: AWS Trainium (and CPU, CUDA) as a Python array API 2025.12 namespace.

``NeuronArray`` wraps one torch.Tensor; every function of the standard, its ``linalg`` and ``fft`` extensions and
the inspection API live here. Contractions (einsum, tensordot, matmul, vecdot, multi_einsum, contract) run through
one planner into the kernel layer under a precision mode (``precision``, ``error_bound``, ``select_precision``).
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

import torch.distributed as _dist

# numpy_dispatch registers NumPy's protocols with the array object; _autoray registers trn_backend with autoray
# (where it is installed)
from . import _array, _autoray, numpy_dispatch  # noqa: F401
from ._namespace import *  # noqa: F403  (the public namespace, assembled there)
from ._namespace import __array_api_version__, __array_namespace_info__  # noqa: F401
from .contraction import slicing as _slicing

if _TYPE_CHECKING:
    import torch as _torch

__version__ = "0.1.0"  # the distribution's version too (pyproject.toml reads it from here); CHANGELOG.md

_array.PROTOCOLS["namespace"] = _sys.modules[__name__]  # what x.__array_namespace__() answers


def _sliced_over_ranks(request: _Any, spec: _Any, ts: list[_torch.Tensor], *args: _Any) -> _torch.Tensor | None:
    """``contract(..., memory_limit=)`` with sharded operands or in a process group: the ranks share the slices.
    trn_backend.distributed (torch.distributed, DTensor) is imported only for such a call, so a process that never
    shards never registers sharded types (every public function would then look for them among its arguments).
    None where neither holds: the slices then run here."""
    # a DTensor exists only once torch's DTensor module is imported: without it, no operand can be one
    # (a loop: this module's ``any`` is the namespace's)
    dtensor = _sys.modules.get("torch.distributed.tensor")
    sharded = False
    if dtensor is not None:
        for t in ts:
            sharded = sharded or isinstance(t, dtensor.DTensor)
    if not sharded and not (_dist.is_available() and _dist.is_initialized()):
        return None
    from .distributed import _slicing as over_ranks

    return over_ranks.contract(request, spec, ts, *args)


_slicing.OVER_RANKS.append(_sliced_over_ranks)
