"""trn_backend: AWS Trainium (and CPU, CUDA) as a Python array API 2025.12 namespace.

``NeuronArray`` wraps one torch.Tensor; every function of the standard, its ``linalg`` and ``fft`` extensions and
the inspection API live here. Contractions (einsum, tensordot, matmul, vecdot, multi_einsum, contract) run through
one planner into the kernel layer under a precision mode (``precision``, ``error_bound``, ``select_precision``).
"""

from __future__ import annotations

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
from ._dtypes import (  # noqa: F401
    bool,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._precision import (  # noqa: F401
    PrecisionError,
    error_bound,
    last_precision_report,
    precision,
    select_precision,
)
from .contraction import contract, contract_expression, einsum, explain  # noqa: F401
from .contraction.multi import multi_einsum  # noqa: F401

__version__ = "0.1.0"
__array_api_version__ = "2025.12"
