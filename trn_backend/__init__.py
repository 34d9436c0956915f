"""trn_backend: AWS Trainium (and CPU, CUDA) as a Python array API 2025.12 namespace.

``NeuronArray`` wraps one torch.Tensor; every function of the standard, its ``linalg`` and ``fft`` extensions and
the inspection API live here. Contractions (einsum, tensordot, matmul, vecdot, multi_einsum, contract) run through
one planner into the kernel layer under a precision mode (``precision``, ``error_bound``, ``select_precision``).
"""

from __future__ import annotations

import torch as _torch

from . import fft, linalg  # noqa: F401
from ._api.constants import *  # noqa: F403
from ._api.creation import *  # noqa: F403
from ._api.data_types import *  # noqa: F403
from ._api.elementwise import *  # noqa: F403
from ._api.indexing import *  # noqa: F403
from ._api.info import *  # noqa: F403
from ._api.linear_algebra import *  # noqa: F403
from ._api.manipulation import *  # noqa: F403
from ._api.searching import *  # noqa: F403
from ._api.sets import *  # noqa: F403
from ._api.sorting import *  # noqa: F403
from ._api.statistical import *  # noqa: F403
from ._api.utility import *  # noqa: F403
from ._array import NeuronArray  # noqa: F401
from ._config import config  # noqa: F401
from ._dtypes import PUBLIC as _PUBLIC
from ._precision import (  # noqa: F401
    PrecisionError,
    last_precision_report,
    precision,
    select_precision,
)
from .contraction import contract, contract_expression, einsum, error_bound, explain  # noqa: F401
from .contraction.multi import multi_einsum  # noqa: F401

# The dtype objects are NumPy's (``trn_backend.float32 == np.float32``); float16 and bfloat16 (ml_dtypes' type, as
# in JAX) are extension dtypes beyond the standard's 13.
bool = _PUBLIC[_torch.bool]  # noqa: A001 - the standard's name
int8 = _PUBLIC[_torch.int8]
int16 = _PUBLIC[_torch.int16]
int32 = _PUBLIC[_torch.int32]
int64 = _PUBLIC[_torch.int64]
uint8 = _PUBLIC[_torch.uint8]
uint16 = _PUBLIC[_torch.uint16]
uint32 = _PUBLIC[_torch.uint32]
uint64 = _PUBLIC[_torch.uint64]
float16 = _PUBLIC[_torch.float16]
bfloat16 = _PUBLIC[_torch.bfloat16]
float32 = _PUBLIC[_torch.float32]
float64 = _PUBLIC[_torch.float64]
complex64 = _PUBLIC[_torch.complex64]
complex128 = _PUBLIC[_torch.complex128]

__version__ = "0.1.0"
__array_api_version__ = "2025.12"

from . import _autoray  # noqa: E402, F401  (registers trn_backend with autoray when it is installed)
