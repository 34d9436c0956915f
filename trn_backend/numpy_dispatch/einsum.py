"""numpy.einsum and numpy.einsum_path on the contraction engine.

NumPy's reference lists einsum with the products of its "Linear algebra" section; here it stands alone, as the one
function with rules of its own, and the other products (dot, inner, tensordot, ...) are in ``linalg``. Every einsum
product is a kernel call under ``precision=`` (else the active ``trn_backend.precision`` context), and a target in
force holds for what lands in ``out=`` too: a narrower out tightens the target by its rounding. Both of NumPy's
operand forms are taken (``("ij,jk", a, b)`` and the interleaved ``(a, [0, 1], b, [1, 2])``); ``optimize`` takes
NumPy's values (True is opt_einsum's greedy path) and opt_einsum's optimizers; ``casting`` (NumPy's default 'safe')
rules both the cast of the operands to ``dtype`` and the write into ``out``. numpy.einsum_path answers with
opt_einsum's path in NumPy's ``["einsum_path", *steps]`` form.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import opt_einsum
import torch

from .. import _dtypes, _precision
from .._helpers import NeuronArray
from ._common import A, _cast_all
from ._registry import as_arrays, device_of, implements, write_out, xp


def _einsum_operands(operands: Sequence[Any]) -> tuple[str, list[Any]]:
    """Subscripts and operands of either einsum form: ``("ij,jk", a, b)`` or ``(a, [0, 1], b, [1, 2])``."""
    if operands and isinstance(operands[0], str):
        return operands[0], list(operands[1:])
    subscripts, ops = opt_einsum.parser.convert_interleaved_input(operands)
    return subscripts, list(ops)


def _optimize(optimize: Any) -> Any:
    """NumPy's ``optimize=True`` means opt_einsum's greedy path; everything else opt_einsum takes as is."""
    return "greedy" if optimize is True else optimize


@implements(np.einsum)
def einsum(*operands: Any, out: Any = None, optimize: Any = False, dtype: Any = None, casting: str = "safe",
           precision: str | None = None, target_forward_error: float | None = None) -> A:
    """numpy.einsum on the contraction engine: every product is a kernel call under ``precision`` (else the
    active ``trn_backend.precision`` context); ``optimize`` takes NumPy's values and opt_einsum's optimizers.
    ``casting`` (NumPy's default 'safe') rules both the cast of the operands to ``dtype`` and the write into
    ``out``."""
    subscripts, ops = _einsum_operands(operands)
    if not all(isinstance(o, NeuronArray) for o in ops):  # (as_arrays keeps NeuronArrays as they are)
        ops = as_arrays(ops, device_of(ops))
    ops = _cast_all(ops, dtype, casting, "numpy.einsum")
    if out is None:  # nothing rounds after the expression: its target holds as it is (``_out_rounding``)
        return xp.einsum(subscripts, *ops, optimize=_optimize(optimize), precision=precision,
                         target_forward_error=target_forward_error)
    with _out_rounding(ops, out, precision, target_forward_error) as target_forward_error:
        result = xp.einsum(subscripts, *ops, optimize=_optimize(optimize), precision=precision,
                           target_forward_error=target_forward_error)
    return result if out is None else write_out(result, out, "numpy.einsum", casting=casting)


@contextlib.contextmanager
def _out_rounding(ops: list[Any], out: Any, precision: str | None, target_forward_error: float | None):
    """A target in force holds for what lands in ``out``: where out's dtype is narrower than the result's, the
    write rounds once more (unit u of out's dtype), so the expression runs under (1 + t) / (1 + u) - 1, which
    composes with that rounding to t (forward or relative alike). Yields the per-call forward target to pass."""
    forward, relative = _precision.targets(precision, target_forward_error)
    target = forward if forward is not None else relative
    u_out = _narrowing_unit(ops, out) if target is not None else 0.0
    if not u_out:
        yield target_forward_error
        return
    tighter = (1 + target) / (1 + u_out) - 1
    if not tighter > 0:
        raise _precision.PrecisionError(
            f"the target {target:g} is below the rounding of the result into out= of dtype "
            f"{_dtypes.name(out.dtype)} ({u_out:.3g}); pass out= of the result's dtype", "numpy.einsum")
    if target_forward_error is not None:
        yield tighter
        return
    with _precision.precision(**{"target_forward_error" if forward is not None else "target_relative_error":
                                 tighter}) as checks:
        yield None
    _precision.replay(checks or ())  # the checks belong to the enclosing block's report too


def _narrowing_unit(ops: list[Any], out: Any) -> float:
    """The unit roundoff of out's dtype where writing the einsum's result into it rounds (a narrower float
    dtype), else 0."""
    if not isinstance(out, NeuronArray) or not (out._t.dtype.is_floating_point or out._t.dtype.is_complex):
        return 0.0
    result = functools.reduce(_dtypes.promote, [o._t.dtype for o in ops if isinstance(o, NeuronArray)])
    if not (result.is_floating_point or result.is_complex):
        return 0.0
    eps_out, eps_result = (torch.finfo(d.to_real() if d.is_complex else d).eps for d in (out._t.dtype, result))
    return eps_out / 2 if eps_out > eps_result else 0.0


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
