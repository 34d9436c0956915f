"""trn_backend: AWS Trainium (and CPU, CUDA) as a Python array API 2025.12 namespace.

``NeuronArray`` wraps one torch.Tensor; every function of the standard, its ``linalg`` and ``fft`` extensions and
the inspection API live here. Contractions (einsum, tensordot, matmul, vecdot, multi_einsum, contract) run through
one planner into the kernel layer under a precision mode (``precision``, ``error_bound``, ``select_precision``).
"""

from __future__ import annotations

import sys as _sys
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

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


def _sliced_over_ranks(*args: _Any) -> _torch.Tensor | None:
    """``contract(..., memory_limit=)`` with sharded operands or in a process group: the ranks share the slices.
    trn_backend.distributed (torch.distributed, DTensor) is imported on the first such call, not with the package;
    it answers None where neither holds and the slices then run here."""
    from .distributed import _slicing as over_ranks

    return over_ranks.contract(*args)


_slicing.OVER_RANKS.append(_sliced_over_ranks)
