"""The public namespace, assembled in one place: what ``trn_backend`` exports (its ``__init__`` re-exports this).

Every public function is ``_overrides.public(func, name)``: the implementation (``_api``, the contraction entry
points) called directly, unless an adapter registered a type among the arguments (sharded arrays). Functions that
take no arrays and classes are exported as they are. Internal calls between implementations stay direct. The
array object's operators call the public functions too (``_array.OPERATORS``, filled here).
"""

from __future__ import annotations

import torch as _torch

from . import _array, fft, linalg  # noqa: F401
from ._api.constants import *  # noqa: F403
from ._api.creation import *  # noqa: F403
from ._api.data_types import *  # noqa: F403
from ._api.elementwise import *  # noqa: F403
from ._api.indexing import *  # noqa: F403
from ._api.info import *  # noqa: F403
from ._api.manipulation import *  # noqa: F403
from ._api.searching import *  # noqa: F403
from ._api.sets import *  # noqa: F403
from ._api.sorting import *  # noqa: F403
from ._api.statistical import *  # noqa: F403
from ._api.utility import *  # noqa: F403
from ._array import NeuronArray  # noqa: F401
from ._config import config  # noqa: F401
from ._dtypes import PUBLIC as _PUBLIC
from ._overrides import public as _public
from ._precision import (  # noqa: F401
    PrecisionError,
    last_precision_report,
    precision,
    select_precision,
)
from .contraction import contract, contract_expression, einsum, error_bound, explain  # noqa: F401
from .contraction.api import matmul_operator as _matmul_operator
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

__array_api_version__ = "2025.12"

# Functions that take no arrays, exported as they are (no argument can have a registered type).
# contract_expression's expressions call the engine directly.
_NO_ARRAYS = frozenset({"precision", "select_precision", "error_bound", "last_precision_report", "contract_expression"})

# every public function as its public form (the four products below are linalg's, already public)
for _name, _value in list(globals().items()):
    if not _name.startswith("_") and callable(_value) and not isinstance(_value, type) and _name not in _NO_ARRAYS:
        globals()[_name] = _public(_value, _name)

from .linalg import matmul, matrix_transpose, tensordot, vecdot  # noqa: E402, F401

# the functions the array object's operators call (``x + y`` is ``add(x, y)``, in-place errors ask result_type)
_array.OPERATORS.update(
    add=add,
    subtract=subtract,
    multiply=multiply,
    divide=divide,
    floor_divide=floor_divide,
    remainder=remainder,
    pow=pow,
    bitwise_and=bitwise_and,
    bitwise_or=bitwise_or,
    bitwise_xor=bitwise_xor,
    bitwise_left_shift=bitwise_left_shift,
    bitwise_right_shift=bitwise_right_shift,
    matmul=_matmul_operator(matmul),
    less=less,
    less_equal=less_equal,
    greater=greater,
    greater_equal=greater_equal,
    equal=equal,
    not_equal=not_equal,
    negative=negative,
    positive=positive,
    abs=abs,
    bitwise_invert=bitwise_invert,
    result_type=result_type,
)
