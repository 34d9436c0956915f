"""The front doors of the planner: einsum, tensordot, matmul and vecdot.

Each validates its arguments with errors that name the function, argument and sizes, turns them into labels,
and hands one contraction to the planner (or a path of them to ``paths``); validation and labels are cached per
shapes, dtypes and axes, so a repeated call costs two cache lookups. The ``*_tensors`` functions work on torch
tensors; the namespace wraps them.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import torch

from .. import _device, _dtypes, _precision, kernels
from .._helpers import (
    PY_SCALARS,
    NeuronArray,
    check_same_device,
    numpy_scalar,
    scalar_dtype,
    scalar_to_tensor,
    tensor,
    wrap,
)
from . import execute, paths, whole
from .axes import canonical_axes, is_int, tensordot_entry
from .parse import Spec, parse, symbol
from .plan import Entry, Plan, entry, result_dtype
from .program import label_sizes

__all__ = ["einsum", "einsum_operands", "einsum_tensors", "contract_spec", "tensordot_tensors", "matmul_tensors",
           "vecdot_tensors"]

Precision = str | None


def einsum(subscripts: str, /, *operands: NeuronArray, optimize: object = "auto", precision: Precision = None,
           target_forward_error: float | None = None, target_relative_error: float | None = None) -> NeuronArray:
    """Einstein summation with NumPy's semantics, every product a planned matmul or bmm in the kernel layer.

    ``optimize`` picks the order of a contraction of three or more operands (see ``trn_backend.contraction.paths``);
    ``precision``, ``target_forward_error`` or ``target_relative_error`` (one of them) choose the precision mode of
    every binary step.
    """
    ts = einsum_operands(operands, "einsum")
    try:
        with _precision.scope(precision, target_forward_error, target_relative_error, "einsum()"):
            return wrap(einsum_tensors(subscripts, ts, optimize, precision, target_forward_error))
    except _precision.PrecisionError as e:  # raised where the mode is resolved or run: name this function
        raise e.named("einsum()") from e.__cause__


def einsum_operands(operands: Sequence[object], func: str) -> list[torch.Tensor]:
    """The tensors of einsum operands on one device: NeuronArrays as they are, NumPy scalars as the strong 0-d arrays
    of their dtype and Python scalars as weak scalars, as in NEP 50: 0-d tensors of the dtype each combines to with
    the arrays' dtype, on their device."""
    values = list(operands)
    if any(isinstance(x, np.generic) for x in values):
        device = next((x._t.device for x in values if isinstance(x, NeuronArray)), None) or _device.default_device()
        values = [numpy_scalar(x, device, func) if isinstance(x, np.generic) else x for x in values]
    arrays = [tensor(x, func, f"operands[{i}]") for i, x in enumerate(values) if not isinstance(x, PY_SCALARS)]
    check_same_device(arrays, func, "operands")
    if len(arrays) == len(values):
        return arrays
    if arrays:
        dtype, device = result_dtype(tuple(t.dtype for t in arrays), func), arrays[0].device
    else:  # scalars only: each takes its default dtype (what it combines to with bool), then promotion decides
        dtype, device = _dtypes.bool, _device.default_device()
    found = iter(arrays)
    return [next(found) if not isinstance(x, PY_SCALARS) else
            scalar_to_tensor(x, scalar_dtype(x, dtype, func, device), device, func) for x in values]


def einsum_tensors(subscripts: str, ts: list[torch.Tensor], optimize: object = "auto",
                   precision: Precision = None, target_forward_error: float | None = None) -> torch.Tensor:
    """``einsum`` on torch tensors (validated, on one device)."""
    return contract_spec(parse(subscripts, tuple(t.shape for t in ts)), ts, optimize, precision,
                         target_forward_error)


def contract_spec(spec: Spec, ts: list[torch.Tensor], optimize: object = "auto", precision: Precision = None,
                  target_forward_error: float | None = None) -> torch.Tensor:
    """Contract tensors labelled by a parsed ``spec``: one planned step, or a path of them."""
    if len(ts) <= 2:
        paths.check_optimize(optimize)  # there is no path to choose, but a wrong choice is still an error
        if precision is None and target_forward_error is None and _precision.active_setting() is None:
            return execute.contract(spec.inputs, spec.output, ts)  # the common call: one step, default mode
    else:
        # promote once, so every step computes in the result dtype (as NumPy does)
        dtype = result_dtype(tuple(t.dtype for t in ts))
        ts = [_dtypes.cast(t, dtype) for t in ts]
    relative = _precision.targets(precision, target_forward_error)[1]
    if relative is not None and paths.program(spec, tuple(t.shape for t in ts), optimize).roundings(
            tuple(t.dtype for t in ts)) > 1:
        return _checked_whole(spec, ts, optimize, relative)
    return paths.run(spec, ts, optimize, precision, target_forward_error)


def _checked_whole(spec: Spec, ts: list[torch.Tensor], optimize: object, relative: float) -> torch.Tensor:
    """target_relative_error= on an expression of several rounding steps, checked as a whole (``whole``; a
    single step keeps its own a posteriori check, ``posteriori``)."""
    shapes = tuple(t.shape for t in ts)

    def run(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, list[tuple[str, float | None]]]:
        ledger: list = []
        out = paths.run(spec, list(tensors), optimize, ledger=ledger)
        return out, whole.rounding_steps(ledger)

    sizes = label_sizes(zip(spec.inputs, shapes, strict=True))
    return whole.checked(spec.subscripts, run, ts, sizes, spec.output, relative)


# --- tensordot, matmul, vecdot: each validates once per (shapes, dtypes, axes) and caches the planner entry ---

Size = tuple[int, ...]


def tensordot_tensors(a: torch.Tensor, b: torch.Tensor, axes: object = 2, precision: Precision = None,
                      target_forward_error: float | None = None) -> torch.Tensor:
    """The standard's tensordot: ``axes`` an int N (last N of a with first N of b) or a pair of axis sequences."""
    # validated and made canonical (ints) before the cache: 2.0 and True hash like 2 and 1
    key = axes if type(axes) is int else canonical_axes(axes)
    found = tensordot_entry(a.shape, b.shape, a.dtype, b.dtype, key)
    return execute.execute(found.plan(a.device, precision, target_forward_error, execute.roundings_of(a, b)),
                           (a, b))


def matmul_tensors(a: torch.Tensor, b: torch.Tensor, precision: Precision = None,
                   target_forward_error: float | None = None) -> torch.Tensor:
    """The standard's matmul: 1-D operands promoted to matrices and back, batch dimensions broadcast."""
    if precision is None and target_forward_error is None and type(a) is _TENSOR and type(b) is _TENSOR:
        # the common call (the @ operator): plain tensors, no per-call precision. Without a precision block its
        # mode is the device's default, so its step is found by shapes, dtypes and device in one lookup
        key = (a.shape, b.shape, a.dtype, b.dtype, _CPU if a.is_cpu else a.device)  # the flag reads faster
        found = _DEFAULT_MATMULS.get(key)
        if found is not None and _precision.active_setting() is None:
            kernel, step = found
            if kernel is not None:
                # the plan is one kernel call on the operands as they are (``_kernel_call``): what ``execute``
                # would call. The kernel layer routes it (config.nki) and counts it, as on every call; the
                # default mode does not depend on torch's float32 matmul precision (only its bound does, which
                # running the step never reads), so no check of it here
                return kernel(a, b, step)
            if _precision.default_plan_reusable(a.dtype, b.dtype):
                return execute.execute(step, (a, b))
        plan = _matmul_entry(a.shape, b.shape, a.dtype, b.dtype).plan(a.device, None, None, 1)
        if _precision.active_setting() is None:
            found = _kernel_call(plan, a.dtype, b.dtype)
            if found is None and _precision.default_plan_reusable(a.dtype, b.dtype):
                found = (None, plan)
            if found is not None:
                if len(_DEFAULT_MATMULS) >= 4096:  # bounded, as the planner's caches are
                    _DEFAULT_MATMULS.clear()
                _DEFAULT_MATMULS[key] = found
        return execute.execute(plan, (a, b))
    found = _matmul_entry(a.shape, b.shape, a.dtype, b.dtype)
    return execute.execute(found.plan(a.device, precision, target_forward_error, execute.roundings_of(a, b)),
                           (a, b))


def _kernel_call(plan: Plan, da: torch.dtype, db: torch.dtype) -> tuple[object, str] | None:
    """(kernel function, mode) where running ``plan`` on operands of dtypes ``da`` and ``db`` is exactly that
    kernel called on the two operands in order, as they are (``execute``'s direct step with no cast, permute or
    reshape, and no output layout): a 2-D x 2-D matmul, or a bmm of two 3-D operands of one batch size, in
    the plan's dtype. None for every other plan (1-D promotion, broadcast batches, casts, swapped operands)."""
    direct = plan.direct
    if direct is None or not (plan.dtype is da is db) or plan.out_shape is not None or plan.out_perm is not None:
        return None
    i, perm, shape, j, perm_b, shape_b, kernel, mode = direct
    if (i, j) != (0, 1) or perm is not None or shape is not None or perm_b is not None or shape_b is not None:
        return None
    return getattr(kernels, kernel), mode


# matmul_tensors' steps without a precision choice, by (shapes, dtypes, device): (kernel function, mode) where
# the step is one kernel call on the operands as they are, else (None, plan); cleared with the planner's caches
_DEFAULT_MATMULS: dict[tuple, tuple[object, object]] = {}
_CPU = torch.device("cpu")
_TENSOR = torch.Tensor


@functools.lru_cache(maxsize=4096)
def _matmul_entry(sa: Size, sb: Size, da: torch.dtype, db: torch.dtype) -> Entry:
    for shape, name in ((sa, "x1"), (sb, "x2")):
        if not shape:
            raise ValueError(f"matmul(): {name} is 0-dimensional; matmul needs arrays of at least 1 dimension "
                             "(use multiply for scalars)")
    result_dtype((da, db), "matmul")
    ka, kb = sa[-1], sb[-2 if len(sb) > 1 else -1]
    if ka != kb:
        raise ValueError(f"matmul(): x1 has {ka} columns but x2 has {kb} rows (shapes {tuple(sa)} and "
                         f"{tuple(sb)})")
    _check_broadcast(sa[:-2], sb[:-2], "matmul", "batch shapes", sa, sb)
    width = max(len(sa), len(sb), 2) - 2
    batch = "".join(symbol(i) for i in range(width))
    m, k, n = (symbol(width + i) for i in range(3))
    la = batch[width - len(sa) + 2:] + m + k if len(sa) > 1 else k
    lb = batch[width - len(sb) + 2:] + k + n if len(sb) > 1 else k
    return entry((la, lb), batch + m * (len(sa) > 1) + n * (len(sb) > 1), (sa, sb), (da, db))


def _check_broadcast(s1: Size, s2: Size, func: str, what: str, full1: Size, full2: Size) -> None:
    for d1, d2 in zip(reversed(s1), reversed(s2), strict=False):
        if d1 != d2 and 1 not in (d1, d2):
            raise ValueError(f"{func}(): the {what} {tuple(s1)} and {tuple(s2)} do not broadcast (shapes "
                             f"{tuple(full1)} and {tuple(full2)})")


def vecdot_tensors(a: torch.Tensor, b: torch.Tensor, axis: int = -1, precision: Precision = None,
                   target_forward_error: float | None = None) -> torch.Tensor:
    """The standard's vecdot: sum of conj(a) * b over ``axis`` (negative, counted from the end of each)."""
    if type(axis) is not int:  # checked before the cache, where -1.0 and True would hash like ints
        if not is_int(axis):
            raise TypeError(f"vecdot(): axis must be an int, got {type(axis).__name__}")
        axis = int(axis)
    found = _vecdot_entry(a.shape, b.shape, a.dtype, b.dtype, axis)
    a = a.conj() if a.is_complex() else a
    return execute.execute(found.plan(a.device, precision, target_forward_error, execute.roundings_of(a, b)),
                           (a, b))


@functools.lru_cache(maxsize=4096)
def _vecdot_entry(sa: Size, sb: Size, da: torch.dtype, db: torch.dtype, axis: int) -> Entry:
    low = -min(len(sa), len(sb))
    if not low <= axis <= -1:
        raise (ValueError if axis >= 0 else IndexError)(
            f"vecdot(): axis must be a negative int in [{low}, -1] (it counts from the end of both arrays), "
            f"got {axis}")
    result_dtype((da, db), "vecdot")
    if sa[axis] != sb[axis]:
        raise ValueError(f"vecdot(): axis {axis} has size {sa[axis]} in x1 but {sb[axis]} in x2 "
                         f"(shapes {tuple(sa)} and {tuple(sb)}); the contracted axis does not broadcast")
    _check_broadcast(sa, sb, "vecdot", "shapes", sa, sb)
    width = max(len(sa), len(sb))
    labels = "".join(symbol(i) for i in range(width))
    return entry((labels[width - len(sa):], labels[width - len(sb):]), labels.replace(labels[axis], ""),
                 (sa, sb), (da, db))
