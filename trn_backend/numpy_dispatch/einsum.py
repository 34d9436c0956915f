"""numpy.einsum and numpy.einsum_path on the contraction engine.

NumPy's reference lists einsum with the products of its "Linear algebra" section; here it stands alone, as the one
function with rules of its own, and the other products (dot, inner, tensordot, ...) are in ``linalg``. numpy.einsum
is a front door of the contraction engine: the whole call is one program, under ``precision=`` or a target (else
the active ``trn_backend.precision`` block), and every rounding of it is counted: the cast of the operands to
``dtype=`` and the final rounding into ``out=`` are roundings of the expression, with their bounds and, under a
target, their range checked. As in NumPy, a result written into ``out=`` is computed in the promotion of the
operands' dtypes with out's (int32 operands into an int64 out add in int64), unless ``dtype=`` says otherwise.
Both of NumPy's operand forms are taken (``("ij,jk", a, b)`` and the interleaved ``(a, [0, 1], b, [1, 2])``);
``optimize`` takes NumPy's values (True is opt_einsum's greedy path) and opt_einsum's optimizers; ``casting``
(NumPy's default 'safe') rules both the cast of the operands to ``dtype`` and the write into ``out``.
numpy.einsum_path answers with opt_einsum's path in NumPy's ``["einsum_path", *steps]`` form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum

from .. import _dtypes
from .._helpers import NeuronArray, wrap
from .._precision import Request
from ..contraction.api import einsum_tensors
from ..contraction.front import entry_point
from ..contraction.plan import result_dtype
from ._common import A
from ._registry import as_arrays, can_cast, device_of, implements, write_out


def _einsum_operands(operands: Sequence[Any]) -> tuple[str, Sequence[Any]]:
    """Subscripts and operands of either einsum form: ``("ij,jk", a, b)`` or ``(a, [0, 1], b, [1, 2])``."""
    if operands and isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    subscripts, ops = opt_einsum.parser.convert_interleaved_input(operands)
    return subscripts, list(ops)


def _optimize(optimize: Any) -> Any:
    """NumPy's ``optimize=True`` means opt_einsum's greedy path; everything else opt_einsum takes as is."""
    return "greedy" if optimize is True else optimize


@implements(np.einsum)
@entry_point("numpy.einsum")
def einsum(
    request: Request | None,
    *operands: Any,
    out: Any = None,
    optimize: Any = False,
    dtype: Any = None,
    casting: str = "safe",
) -> A:
    """numpy.einsum on the contraction engine: one program under ``precision`` (else the active
    ``trn_backend.precision`` block); ``optimize`` takes NumPy's values and opt_einsum's optimizers. ``casting``
    (NumPy's default 'safe') rules both the cast of the operands to ``dtype`` and the write into ``out``."""
    subscripts, ops = _einsum_operands(operands)
    if not all(isinstance(o, NeuronArray) for o in ops):  # (as_arrays keeps NeuronArrays as they are)
        ops = as_arrays(ops, device_of(ops))
    # the dtype the result is computed in: dtype=, else (as NumPy) with out= the promotion of the operands' dtypes
    # with out's (int32 operands into an int64 out add in int64); the operands are cast to it under ``casting``
    target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    out_dtype = target._t.dtype if isinstance(target, NeuronArray) else None
    result = _dtypes.to_dtype(dtype, "numpy.einsum") if dtype is not None else None
    if result is None and out_dtype is not None:
        result = result_dtype((*(o._t.dtype for o in ops), out_dtype), "numpy.einsum")
    if result is not None:
        for o in ops:
            if not can_cast(o._t.dtype, result, casting):
                raise TypeError(
                    f"numpy.einsum(): cannot cast {_dtypes.name(o.dtype)} to {_dtypes.name(result)} "
                    f"under casting={casting!r}"
                )
    if out_dtype is not None and not can_cast(result, out_dtype, casting):  # before the work, not after it
        assert result is not None  # out= gives a result dtype above
        raise TypeError(
            f"numpy.einsum(): cannot write a {_dtypes.name(result)} result into out of dtype "
            f"{_dtypes.name(out_dtype)} under NumPy's {casting} casting"
            + ("; pass casting='same_kind' to round into out" if casting == "safe" else "")
        )
    t = einsum_tensors(request, subscripts, [o._t for o in ops], _optimize(optimize), result=result, out=out_dtype)
    if out is None:
        return wrap(t)
    return write_out(wrap(t), out, "numpy.einsum", casting=casting)


@implements(np.einsum_path)
def einsum_path(*operands: Any, optimize: Any = "greedy") -> tuple[list[Any], str]:
    """numpy.einsum_path answered by opt_einsum: NumPy's ``["einsum_path", *steps]`` (which np.einsum's
    ``optimize=`` accepts back) and opt_einsum's report."""
    subscripts, ops = _einsum_operands(operands)
    if isinstance(optimize, (list, tuple)) and optimize and optimize[0] == "einsum_path":
        optimize = list(optimize[1:])
    shapes = [tuple(o.shape) if hasattr(o, "shape") else np.shape(o) for o in ops]
    path, info = opt_einsum.contract_path(subscripts, *shapes, shapes=True, optimize=_optimize(optimize))
    return ["einsum_path", *path], str(info)
