"""Linear-algebra functions of the standard: matmul, matrix_transpose, tensordot, vecdot.

The three contractions go through the contraction planner (one matmul or bmm in the kernel layer each), with
keyword-only ``precision=`` / ``target_forward_error=`` / ``target_relative_error=`` (one of them) beyond the
standard's signatures; matrix_transpose is a view.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .. import _precision
from .._helpers import NeuronArray, check_same_device, tensor, wrap
from ..contraction.api import matmul_tensors, tensordot_tensors, vecdot_tensors

__all__ = ["matmul", "matrix_transpose", "tensordot", "vecdot"]

_new = object.__new__
_TENSOR = torch.Tensor


def _operands(x1: NeuronArray, x2: NeuronArray, func: str):
    t1, t2 = tensor(x1, func, "x1"), tensor(x2, func, "x2")
    if not (t1.is_cpu and t2.is_cpu):  # two CPU tensors share their device: no device objects to compare
        check_same_device((t1, t2), func, "x1 and x2")
    return t1, t2


def matmul(x1: NeuronArray, x2: NeuronArray, /, *, precision: str | None = None,
           target_forward_error: float | None = None, target_relative_error: float | None = None) -> NeuronArray:
    """Matrix product with the standard's 1-D promotion and batch broadcasting (the ``@`` operator)."""
    if precision is None and target_forward_error is None and target_relative_error is None:
        # the common call (the @ operator): no per-call precision, so no scope to enter; two arrays on the CPU
        # are checked inline (``_operands``) and a plain tensor's result is wrapped inline (``wrap``)
        if type(x1) is NeuronArray and type(x2) is NeuronArray and x1._t.is_cpu and x2._t.is_cpu:
            t1, t2 = x1._t, x2._t
        else:
            t1, t2 = _operands(x1, x2, "matmul")
        try:
            out = matmul_tensors(t1, t2)
        except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
            raise e.named("matmul()") from e.__cause__
        if type(out) is not _TENSOR:
            return wrap(out)
        result = _new(NeuronArray)
        result._t = out
        return result
    t1, t2 = _operands(x1, x2, "matmul")
    try:
        with _precision.scope(precision, target_forward_error, target_relative_error, "matmul()"):
            return wrap(matmul_tensors(t1, t2, precision, target_forward_error))
    except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
        raise e.named("matmul()") from e.__cause__


def matrix_transpose(x: NeuronArray, /) -> NeuronArray:
    """Swap the last two axes (a view, no copy)."""
    t = tensor(x, "matrix_transpose")
    if t.dim() < 2:
        raise ValueError(f"matrix_transpose(): x needs at least 2 dimensions, got shape {tuple(t.shape)}")
    return wrap(t.transpose(-1, -2))


def tensordot(x1: NeuronArray, x2: NeuronArray, /, axes: int | tuple[Sequence[int], Sequence[int]] = 2, *,
              precision: str | None = None, target_forward_error: float | None = None,
              target_relative_error: float | None = None) -> NeuronArray:
    """Contract the last ``axes`` axes of x1 with the first of x2, or the axes named by a pair of sequences.
    ``axes`` may also be passed by position, as in NumPy and autoray (a superset of the standard)."""
    t1, t2 = _operands(x1, x2, "tensordot")
    if precision is None and target_forward_error is None and target_relative_error is None:
        try:  # the common call (each step of cotengra's contractions): no per-call precision, no scope to enter
            return wrap(tensordot_tensors(t1, t2, axes))
        except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
            raise e.named("tensordot()") from e.__cause__
    try:
        with _precision.scope(precision, target_forward_error, target_relative_error, "tensordot()"):
            return wrap(tensordot_tensors(t1, t2, axes, precision, target_forward_error))
    except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
        raise e.named("tensordot()") from e.__cause__


def vecdot(x1: NeuronArray, x2: NeuronArray, /, *, axis: int = -1, precision: str | None = None,
           target_forward_error: float | None = None, target_relative_error: float | None = None) -> NeuronArray:
    """Dot products of vectors along ``axis`` (negative), conjugating x1; other axes broadcast."""
    t1, t2 = _operands(x1, x2, "vecdot")
    try:
        with _precision.scope(precision, target_forward_error, target_relative_error, "vecdot()"):
            return wrap(vecdot_tensors(t1, t2, axis, precision, target_forward_error))
    except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
        raise e.named("vecdot()") from e.__cause__
