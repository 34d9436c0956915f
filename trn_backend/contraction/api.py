"""The front doors of the planner: einsum, tensordot, matmul and vecdot.

Each validates its arguments with errors that name the function, argument and sizes, turns them into labels and
a one-step (or, for einsum of three or more operands, a path) ``Program``, compiles it under the call's precision
request and runs it (``compiler``, ``runner``). Compiled programs of the device default and of modes are kept in
the fast path (``compiler.COMPILED``) by everything they depend on, so a repeated call costs one lookup before
the kernel. The ``*_tensors`` functions work on torch tensors; the namespace wraps them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

import numpy as np
import torch

from .. import _device, _dtypes, _precision
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
from .._precision import Request
from . import paths
from .axes import canonical_axes, is_int, tensordot_spec
from .compiler import COMPILED, cache_key, cacheable, compile
from .execute import EXECUTORS, execute
from .front import entry_point
from .parse import Spec, parse, symbol
from .plan import result_dtype
from .program import Program, single
from .runner import run

__all__ = [
    "einsum",
    "einsum_operands",
    "einsum_tensors",
    "contract_spec",
    "tensordot_tensors",
    "kept_tensordot",
    "matmul_tensors",
    "vecdot_tensors",
    "ranks_of",
    "matmul",
    "matmul_operator",
    "tensordot",
    "vecdot",
]


@entry_point("einsum()")
def einsum(
    request: Request | None, subscripts: str, /, *operands: NeuronArray, optimize: object = "auto"
) -> NeuronArray:
    """Einstein summation with NumPy's semantics, every product a planned matmul or bmm in the kernel layer.

    ``optimize`` picks the order of a contraction of three or more operands (see ``trn_backend.contraction.paths``);
    ``precision``, ``target_forward_error`` or ``target_relative_error`` (one of them) choose the precision of the
    whole expression.
    """
    return wrap(einsum_tensors(request, subscripts, einsum_operands(operands, "einsum"), optimize))


def einsum_operands(operands: Sequence[object], func: str) -> list[torch.Tensor]:
    """The tensors of einsum operands on one device: NeuronArrays as they are, NumPy scalars as the strong 0-d arrays
    of their dtype and Python scalars as weak scalars, as in NEP 50: 0-d tensors of the dtype each combines to with
    the arrays' dtype, on their device."""
    values = list(operands)
    if all(type(x) is NeuronArray for x in values):  # the common call: arrays only
        # each a NeuronArray (checked just above; a cast would cost a call on every einsum)
        ts = [x._t for x in values]  # type: ignore[attr-defined]
        if not all(t.is_cpu for t in ts):  # CPU tensors share their device: no device objects to compare
            check_same_device(ts, func, "operands")
        return ts
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
    return [
        next(found)
        if not isinstance(x, PY_SCALARS)
        else scalar_to_tensor(x, scalar_dtype(x, dtype, func, device), device, func)
        for x in values
    ]


def einsum_tensors(
    request: Request | None,
    subscripts: str,
    ts: list[torch.Tensor],
    optimize: object = "auto",
    *,
    result: torch.dtype | None = None,
    out: torch.dtype | None = None,
) -> torch.Tensor:
    """``einsum`` on torch tensors (validated, on one device); ``result``: the dtype to compute the result in
    (numpy.einsum's dtype=), ``out``: the dtype to deliver it in (out='s)."""
    if (
        len(ts) == 2
        and (request is None or request.relative is None)
        and optimize.__class__ is str
        and optimize in paths.OPTIMIZERS
        and result is None
        and out is None
    ):
        # the common call (each step opt_einsum's loop sends as an einsum): two plain operands, found by subscripts,
        # shapes, dtypes, device and request in one lookup
        a, b = ts
        if not EXECUTORS or (type(a) not in EXECUTORS and type(b) not in EXECUTORS):
            key: tuple | None = (
                "einsum2",
                subscripts,
                a.shape,
                b.shape,
                a.dtype,
                b.dtype,
                _CPU if a.is_cpu else a.device,
                request if request is None or request.mode is not None else cache_key(request),
            )
            found = _get(key)
            if found is None:
                shapes: tuple[torch.Size, ...] = (a.shape, b.shape)
                program = paths.program(parse(subscripts, shapes), shapes, optimize)
                found = COMPILED.put(key, compile(program, request, (a.dtype, b.dtype), a.device))
            single = found.single
            # a checked call (a forward target) goes through ``run``, which vouches for the result
            return execute(single, ts) if single is not None and not found.checked else run(found, ts)
    shapes = tuple(t.shape for t in ts)
    optimize_key = paths.check_optimize(optimize)  # a wrong choice is an error even where there is no path
    dtypes = tuple(t.dtype for t in ts)
    sharded = ranks_of(ts)
    key = None
    if optimize_key is not None and sharded == 1 and cacheable(request):
        key = (
            "einsum",
            subscripts,
            shapes,
            dtypes,
            ts[0].device if ts else None,
            optimize_key,
            cache_key(request),
            result,
            out,
        )
        found = COMPILED.get(key)
        if found is not None:
            return run(found, ts)
    spec = parse(subscripts, shapes)
    c = compile(
        paths.program(spec, shapes, optimize), request, dtypes, _device_of(ts), result=result, out=out, ranks=sharded
    )
    if key is not None:
        COMPILED.put(key, c)
    return run(c, ts)


def contract_spec(
    request: Request | None, spec: Spec, ts: list[torch.Tensor], optimize: object = "auto"
) -> torch.Tensor:
    """Contract tensors labelled by a parsed ``spec``: one step, or a path of them."""
    shapes = tuple(t.shape for t in ts)
    paths.check_optimize(optimize)
    program = paths.program(spec, shapes, optimize)
    return run(compile(program, request, tuple(t.dtype for t in ts), _device_of(ts), ranks=ranks_of(ts)), ts)


def ranks_of(ts: Sequence[torch.Tensor]) -> int:
    """The number of ranks sharded operands (a registered executor's: DTensor) are spread over; 1 for none."""
    if not EXECUTORS:
        return 1
    # the executors' tensor types are DTensors (registered by trn_backend.distributed), which have a device_mesh
    return max((t.device_mesh.size() for t in ts if type(t) in EXECUTORS), default=1)  # type: ignore[attr-defined]


def _device_of(ts: Sequence[torch.Tensor]) -> torch.device:
    return ts[0].device if ts else _device.default_device()


# --- tensordot, matmul, vecdot: one step each, validated once per (shapes, dtypes, axes) ---

Size = tuple[int, ...]


@entry_point("tensordot()")
def tensordot(
    request: Request | None, x1: NeuronArray, x2: NeuronArray, /, axes: int | tuple[Sequence[int], Sequence[int]] = 2
) -> NeuronArray:
    """Contract the last ``axes`` axes of x1 with the first of x2, or the axes named by a pair of sequences.
    ``axes`` may also be passed by position, as in NumPy and autoray (a superset of the standard)."""
    if type(x1) is NeuronArray and type(x2) is NeuronArray:
        t = kept_tensordot(x1._t, x2._t, axes, request)
        if t is not None:
            result = _new(NeuronArray)  # ``wrap``, inline
            result._t = t
            return result
    t1, t2 = _operands(x1, x2, "tensordot")
    return wrap(tensordot_tensors(request, t1, t2, axes))


def kept_tensordot(a: torch.Tensor, b: torch.Tensor, axes: object, request: Request | None) -> torch.Tensor | None:
    """tensordot's commonest call, or None where it is not that call: each step of a network, as opt_einsum's
    loop and autoray-based libraries (cotengra, quimb) make it. Plain CPU tensors, ``axes`` an int or already
    canonical (checked first: 1.0 and True hash like 1), no relative target, and the compiled one-step program
    found by ``tensordot_tensors``' own key, run directly (``Compiled.call``, else its one plan)."""
    if _plain_cpu_pair(a, b, request) and (type(axes) is int or canonical_axes(axes) is axes):
        found = _get(
            (
                "tensordot",
                a.shape,
                b.shape,
                a.dtype,
                b.dtype,
                _CPU,
                request if request is None or request.mode is not None else cache_key(request),
                axes,
            )
        )
        if found is not None:
            call = found.call
            if call is not None:
                return call[0](a, b, call[1])
            if found.single is not None and not found.checked:
                return execute(found.single, (a, b))
    return None


@entry_point("matmul()")
def matmul(request: Request | None, x1: NeuronArray, x2: NeuronArray, /) -> NeuronArray:
    """Matrix product with the standard's 1-D promotion and batch broadcasting (the ``@`` operator)."""
    if type(x1) is NeuronArray and type(x2) is NeuronArray:
        t = _kept_call(x1._t, x2._t, request)
        if t is not None:
            result = _new(NeuronArray)  # ``wrap``, inline
            result._t = t
            return result
    t1, t2 = _operands(x1, x2, "matmul")
    return wrap(matmul_tensors(request, t1, t2))


def _kept_call(t1: torch.Tensor, t2: torch.Tensor, request: Request | None) -> torch.Tensor | None:
    """matmul's commonest call, or None where it is not that call: plain tensors on the CPU under the device
    default, a mode or a forward target, whose compiled program is kept (found by shapes, dtypes and request in
    one lookup) and is one kernel call on the operands as they are (``Compiled.call``, what ``run`` would call;
    the kernel layer routes it, by config.nki, and counts it, as on every call)."""
    if _plain_cpu_pair(t1, t2, request):
        found = _get(
            (
                "matmul",
                t1.shape,
                t2.shape,
                t1.dtype,
                t2.dtype,
                _CPU,
                request if request is None or request.mode is not None else cache_key(request),
                None,
            )
        )
        if found is not None and found.call is not None:
            kernel, mode = found.call
            return kernel(t1, t2, mode)
    return None


def _plain_cpu_pair(a: torch.Tensor, b: torch.Tensor, request: Request | None) -> bool:
    """Both operands plain CPU tensors (no registered executor's type) and no relative target (whose a posteriori
    check runs on every call): the calls whose kept program may run as it is."""
    return (
        a.is_cpu
        and b.is_cpu
        and type(a) is _TENSOR
        and type(b) is _TENSOR
        and (request is None or request.relative is None)
    )


def matmul_operator(public: Callable[..., NeuronArray]) -> Callable[[object, object], NeuronArray]:
    """The ``@`` operator's function: ``public`` (the namespace's ``matmul``), with the commonest call
    (``_kept_call``) made without the public wrapper and front door, which have nothing to do for two plain
    NeuronArrays: no registered type takes part, no keywords, the request is the block's."""
    active = _precision.active_setting

    def matmul_op(x1: object, x2: object) -> NeuronArray:
        if type(x1) is NeuronArray and type(x2) is NeuronArray:
            try:
                t = _kept_call(x1._t, x2._t, active())
            except _precision.PrecisionError as e:
                raise e.named("matmul()") from e.__cause__
            if t is not None:
                result = _new(NeuronArray)
                result._t = t
                return result
        return public(x1, x2)

    return matmul_op


@entry_point("vecdot()")
def vecdot(request: Request | None, x1: NeuronArray, x2: NeuronArray, /, *, axis: int = -1) -> NeuronArray:
    """Dot products of vectors along ``axis`` (negative), conjugating x1; other axes broadcast."""
    t1, t2 = _operands(x1, x2, "vecdot")
    return wrap(vecdot_tensors(request, t1, t2, axis))


_new = object.__new__


def _operands(x1: NeuronArray, x2: NeuronArray, func: str) -> tuple[torch.Tensor, torch.Tensor]:
    t1, t2 = tensor(x1, func, "x1"), tensor(x2, func, "x2")
    if not (t1.is_cpu and t2.is_cpu):  # two CPU tensors share their device: no device objects to compare
        check_same_device((t1, t2), func, "x1 and x2")
    return t1, t2


def tensordot_tensors(request: Request | None, a: torch.Tensor, b: torch.Tensor, axes: object = 2) -> torch.Tensor:
    """The standard's tensordot: ``axes`` an int N (last N of a with first N of b) or a pair of axis sequences."""
    # validated and made canonical (ints) before the cache: 2.0 and True hash like 2 and 1
    key = axes if type(axes) is int else canonical_axes(axes)
    return _one_step("tensordot", a, b, key, tensordot_spec, (a.shape, b.shape, a.dtype, b.dtype, key), request)


def matmul_tensors(request: Request | None, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The standard's matmul: 1-D operands promoted to matrices and back, batch dimensions broadcast."""
    return _one_step("matmul", a, b, None, _matmul_spec, (a.shape, b.shape, a.dtype, b.dtype), request)


def vecdot_tensors(request: Request | None, a: torch.Tensor, b: torch.Tensor, axis: int = -1) -> torch.Tensor:
    """The standard's vecdot: sum of conj(a) * b over ``axis`` (negative, counted from the end of each)."""
    if type(axis) is not int:  # checked before the cache, where -1.0 and True would hash like ints
        if not is_int(axis):
            raise TypeError(f"vecdot(): axis must be an int, got {type(axis).__name__}")
        axis = int(axis)
    spec = _vecdot_spec(a.shape, b.shape, a.dtype, b.dtype, axis)
    a = a.conj() if a.is_complex() else a
    return _one_step("vecdot", a, b, axis, _given, (spec,), request)


def _one_step(
    kind: str,
    a: torch.Tensor,
    b: torch.Tensor,
    extra: object,
    spec_of: Callable[..., Spec],
    spec_args: tuple,
    request: Request | None,
) -> torch.Tensor:
    """The one-step program of a binary front door: from the fast path where it may be kept, else validated
    (``spec_of(*spec_args)`` raises the front door's errors), compiled and run."""
    if (request is None or request.relative is None) and (
        not EXECUTORS or (type(a) not in EXECUTORS and type(b) not in EXECUTORS)
    ):
        key = (
            kind,
            a.shape,
            b.shape,
            a.dtype,
            b.dtype,
            _CPU if a.is_cpu else a.device,
            request if request is None or request.mode is not None else cache_key(request),
            extra,
        )
        found = _get(key)
        if found is None:
            program = _program(spec_of(*spec_args), (tuple(a.shape), tuple(b.shape)))
            found = COMPILED.put(key, compile(program, request, (a.dtype, b.dtype), a.device))
        call = found.call
        if call is not None:  # one kernel call on the operands as they are (see ``matmul``)
            return call[0](a, b, call[1])
        single = found.single
        return execute(single, (a, b)) if single is not None and not found.checked else run(found, (a, b))
    program = _program(spec_of(*spec_args), (tuple(a.shape), tuple(b.shape)))
    return run(compile(program, request, (a.dtype, b.dtype), a.device, ranks=ranks_of((a, b))), (a, b))


def _given(spec: Spec) -> Spec:
    return spec


@functools.lru_cache(maxsize=4096)
def _program(spec: Spec, shapes: tuple[Size, ...]) -> Program:
    return single(spec, shapes)


_CPU = torch.device("cpu")
_TENSOR = torch.Tensor
_get = COMPILED.get


@functools.lru_cache(maxsize=4096)
def _matmul_spec(sa: Size, sb: Size, da: torch.dtype, db: torch.dtype) -> Spec:
    for shape, name in ((sa, "x1"), (sb, "x2")):
        if not shape:
            raise ValueError(
                f"matmul(): {name} is 0-dimensional; matmul needs arrays of at least 1 dimension "
                "(use multiply for scalars)"
            )
    result_dtype((da, db), "matmul")
    ka, kb = sa[-1], sb[-2 if len(sb) > 1 else -1]
    if ka != kb:
        raise ValueError(f"matmul(): x1 has {ka} columns but x2 has {kb} rows (shapes {tuple(sa)} and {tuple(sb)})")
    _check_broadcast(sa[:-2], sb[:-2], "matmul", "batch shapes", sa, sb)
    width = max(len(sa), len(sb), 2) - 2
    batch = "".join(symbol(i) for i in range(width))
    m, k, n = (symbol(width + i) for i in range(3))
    la = batch[width - len(sa) + 2 :] + m + k if len(sa) > 1 else k
    lb = batch[width - len(sb) + 2 :] + k + n if len(sb) > 1 else k
    return Spec((la, lb), batch + m * (len(sa) > 1) + n * (len(sb) > 1))


def _check_broadcast(s1: Size, s2: Size, func: str, what: str, full1: Size, full2: Size) -> None:
    for d1, d2 in zip(reversed(s1), reversed(s2), strict=False):
        if d1 != d2 and 1 not in (d1, d2):
            raise ValueError(
                f"{func}(): the {what} {tuple(s1)} and {tuple(s2)} do not broadcast (shapes "
                f"{tuple(full1)} and {tuple(full2)})"
            )


@functools.lru_cache(maxsize=4096)
def _vecdot_spec(sa: Size, sb: Size, da: torch.dtype, db: torch.dtype, axis: int) -> Spec:
    for shape, arg in ((sa, "x1"), (sb, "x2")):
        if not shape:  # no axis to contract at all: NumPy's ValueError, whatever the axis
            raise ValueError(f"vecdot(): {arg} is 0-dimensional; both arrays need at least one dimension")
    low = -min(len(sa), len(sb))
    if not low <= axis <= -1:
        raise (ValueError if axis >= 0 else IndexError)(
            f"vecdot(): axis must be a negative int in [{low}, -1] (it counts from the end of both arrays), got {axis}"
        )
    result_dtype((da, db), "vecdot")
    if sa[axis] != sb[axis]:
        raise ValueError(
            f"vecdot(): axis {axis} has size {sa[axis]} in x1 but {sb[axis]} in x2 "
            f"(shapes {tuple(sa)} and {tuple(sb)}); the contracted axis does not broadcast"
        )
    _check_broadcast(sa, sb, "vecdot", "shapes", sa, sb)
    width = max(len(sa), len(sb))
    labels = "".join(symbol(i) for i in range(width))
    return Spec((labels[width - len(sa) :], labels[width - len(sb) :]), labels.replace(labels[axis], ""))
