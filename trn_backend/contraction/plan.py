"""The planner: a one- or two-operand einsum lowered to one GEMM, as plain data.

A ``Plan`` says how each operand reaches the kernel (diagonals for repeated indices, sums of indices that occur in
that operand only, a permute, a reshape to [B, M, K] or [B, K, N]), which kernel runs (``matmul`` without a batch,
``bmm`` with one), and how the kernel's [B, M, N] result becomes the requested output (reshape, permute). Plans are
frozen, hashable and printable, and cached by labels, shapes, dtypes and the resolved precision mode.

Layout choices keep operands views wherever strides allow: groups keep each operand's own index order (so a
contiguous operand reshapes without a copy), contracted and batch indices follow the larger operand, and the
operands swap places when the output lists the second operand's free indices first, so the result comes out of
the kernel already in output order. Where the larger operand's free indices sit on both sides of its contracted
ones ([Q, m, n] contracted over m), [free, K] would copy it; the planner batches over the leading free indices
instead and broadcasts the smaller operand over them (a stride-0 view), as torch.matmul broadcasting does.
Where both operands also share batch indices, a stride-0 dimension cannot merge with theirs, so the kernel
operands keep two batch axes and the kernel runs once per entry of the shorter one (``Plan.loop``): torch.matmul
would copy the broadcast operand there, once per broadcast entry.
Plans assume operands laid out in label order (contiguous); other strides still work, at the cost of a copy.

A step with nothing to contract (a Hadamard, outer, broadcast or batched-outer product; contracted indices of
size 1 count as nothing) is no GEMM: it runs the kernel layer's elementwise ``mul`` on operands permuted to the
output's index order, with size-1 dimensions where an operand lacks an output index, so broadcasting produces
the output in order (no output permute), K = 1.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import torch

from .. import _dtypes, _precision

__all__ = ["Operand", "Plan", "Entry", "entry", "natural_output", "result_dtype"]

Shapes = tuple[tuple[int, ...], ...]


@dataclasses.dataclass(frozen=True)
class Operand:
    """How one input becomes a kernel operand, in field order; empty or None fields are skipped (no call)."""

    diagonals: tuple[tuple[int, int], ...] = ()  # successive torch.diagonal(dim1, dim2) calls
    summed: tuple[int, ...] = ()  # dimensions summed out after the diagonals (indices of this operand only)
    perm: tuple[int, ...] | None = None
    expand: tuple[tuple[int, ...], tuple[int, ...]] | None = None  # insert size-1 dims, broadcast them (a view)
    shape: tuple[int, ...] | None = None


@dataclasses.dataclass(frozen=True)
class Plan:
    """One contraction step: operand preparation, one kernel call (or none for a single operand; or one per
    entry of a batch axis, see ``loop``), output layout."""

    subscripts: str
    dtype: torch.dtype
    operands: tuple[Operand, ...]  # in kernel order
    order: tuple[int, ...]  # the input feeding each kernel operand: (0, 1), or (1, 0) when swapped
    kernel: str | None  # "matmul", "bmm", "mul" (nothing to contract), or None when there is nothing to multiply
    bmkn: tuple[int, int, int, int]  # kernel sizes (B, M, K, N); B is 1 for matmul, K is 1 for mul
    out_shape: tuple[int, ...] | None  # reshape of the kernel result
    out_perm: tuple[int, ...] | None  # then this permute gives the output order
    shape: tuple[int, ...]  # the output shape
    # the precision mode the kernel runs under (None until resolved, and for steps without a kernel); a
    # target_relative_error on it means the result is checked a posteriori (``posteriori``)
    resolved: _precision.Resolved | None = None
    # per kernel operand, the sum of its own indices (``summed``) as a plan of its own: a [1, R, Ks] x [Ks, 1]
    # matmul with a vector of ones (exact in every split), under a mode resolved for Ks; None where nothing is
    # summed, the sum is exact (integer dtypes, Ks <= 1), or for the operands of a plan without sums
    sums: tuple[Plan | None, ...] = ()
    # a step whose smaller operand is broadcast over free indices of the larger (see ``_spread``) while both also
    # share batch indices: the kernel operands are [P, Q, M, K] and [P, Q, K, N] (shared batch P, broadcast Q),
    # the broadcast one a stride-0 view that [P*Q, ...] could not be without a copy; the kernel runs once per
    # entry of the shorter axis, each call a [Q or P, ...] bmm of views: (that axis, 0 or 1; its length, the
    # number of calls). None: one call.
    loop: tuple[int, int] | None = None

    @property
    def roundings(self) -> int:
        """How many rounding steps this plan runs: its kernel call and each pre-sum (0 for exact dtypes)."""
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            return 0
        return (self.kernel is not None) + sum(p is not None for p in self.sums)

    @property
    def label(self) -> str:
        """The modes the step runs, as a user would write them: its pre-sums' then its kernel's, once each."""
        modes = [p.resolved.label for p in self.sums if p is not None and p.resolved is not None]
        if self.kernel is not None and self.resolved is not None:
            modes.append(self.resolved.label)
        return "+".join(dict.fromkeys(modes)) or "-"

    @property
    def bound(self) -> float | None:
        """The step's bound in units of its own absolute value (|A||B| over all of its indices, summed ones
        included): its pre-sums' and its kernel's bounds composed (``_precision.compose``); 0 when exact, None
        where a mode publishes no bound or before the plan is resolved."""
        if not self.roundings:
            return 0.0
        parts = [p.resolved.bound if p.resolved is not None else None for p in self.sums if p is not None]
        if self.kernel is not None:
            parts.append(self.resolved.bound if self.resolved is not None else None)
        return _precision.compose(parts)

    @property
    def flops(self) -> int:
        """Kernel FLOPs, 2*B*M*K*N (a multiply-add counts two; pre-reductions are not counted); a ``mul`` step
        counts one multiply per output element, B*M*N."""
        b, m, k, n = self.bmkn
        if self.kernel == "mul":
            return b * m * n
        return 2 * b * m * k * n if self.kernel else 0

    @property
    def size(self) -> int:
        """Elements of the step's result."""
        return math.prod(self.shape)

    @functools.cached_property
    def direct(self) -> tuple | None:
        """The common step flattened for ``execute`` (computed once per plan, since it runs once per step of a
        network): (input, perm, shape) of each kernel operand, then the kernel and its mode. None where a step
        needs more: no kernel, diagonals, sums or broadcasting of an operand, mode parameters, a posteriori
        checks, or a 0-d reshape."""
        r = self.resolved
        if self.kernel is None or r is None or r.params or r.target_relative_error is not None:
            return None
        prepared = []
        for op, i in zip(self.operands, self.order, strict=True):
            if op.diagonals or op.summed or op.expand is not None or op.shape == ():
                return None
            prepared += [i, op.perm, op.shape]
        return (*prepared, self.kernel, r.mode)


class _Groups(NamedTuple):
    """Indices of a pair of operands by role, each in the order the layout uses."""

    drop_a: tuple[str, ...]  # size-1 dimensions of A broadcast against B (A simply lacks the index)
    drop_b: tuple[str, ...]
    sum_a: tuple[str, ...]  # in A only and not kept: summed before the kernel
    sum_b: tuple[str, ...]
    batch: tuple[str, ...]
    contracted: tuple[str, ...]
    m: tuple[str, ...]
    n: tuple[str, ...]


def result_dtype(dtypes: tuple[torch.dtype, ...], func: str = "einsum") -> torch.dtype:
    """The standard's promotion of all operand dtypes; an impossible one is a TypeError naming ``func``."""
    try:
        return functools.reduce(_dtypes.promote, dtypes)
    except TypeError as e:
        raise TypeError(f"{func}(): {e}") from None


class Entry:
    """The cache entry of one contraction (labels, shapes, dtypes): its layout (``base``), and its plan under each
    choice of modes made so far (``with_modes``)."""

    __slots__ = ("base", "by_mode")

    def __init__(self, base: Plan) -> None:
        self.base = base
        self.by_mode: dict[tuple, Plan] = {}

    def with_modes(
        self, resolved: _precision.Resolved | None, sums: tuple[_precision.Resolved | None, ...] = ()
    ) -> Plan:
        """The plan with its kernel under ``resolved`` and each pre-sum under its entry of ``sums``."""
        key = (resolved, sums)
        plan = self.by_mode.get(key)
        if plan is None:
            if len(self.by_mode) >= 64:  # bounded: a plan per mode and target share seen
                self.by_mode.clear()
            plan = self.by_mode[key] = _with_mode(self.base, resolved, sums)
        return plan


def _with_mode(
    base: Plan, resolved: _precision.Resolved | None, sums: tuple[_precision.Resolved | None, ...] = ()
) -> Plan:
    """``dataclasses.replace(base, resolved=resolved)`` without its per-field keyword call (this runs once per new
    step): the fields copied as they are, none of ``base``'s cached properties; each pre-sum's plan under its
    mode in ``sums``."""
    plan = object.__new__(Plan)
    plan.__dict__.update({f: base.__dict__[f] for f in _PLAN_FIELDS}, resolved=resolved)
    if sums:
        plan.__dict__["sums"] = tuple(
            None if p is None else _with_mode(p, m) for p, m in zip(base.sums, sums, strict=True)
        )
    return plan


_PLAN_FIELDS = tuple(f.name for f in dataclasses.fields(Plan))


@functools.lru_cache(maxsize=4096)
def entry(inputs: tuple[str, ...], output: str, shapes: Shapes, dtypes: tuple[torch.dtype, ...]) -> Entry:
    """The cached layout of a validated contraction (see ``Entry``)."""
    shapes = tuple([tuple(map(int, s)) for s in shapes])
    dtype = result_dtype(dtypes)
    if len(inputs) == 1:
        return Entry(_single(inputs[0], output, shapes[0], dtype))
    return Entry(_pair(inputs, output, shapes, dtype))


def _diagonalize(labels: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Repeated indices become torch.diagonal calls; each moves its diagonal to the last dimension."""
    if len(set(labels)) == len(labels):  # the common case: nothing repeated
        return labels, ()
    current = list(labels)
    calls = []
    while (dup := next((c for c in current if current.count(c) > 1), None)) is not None:
        i = current.index(dup)
        j = current.index(dup, i + 1)
        calls.append((i, j))
        current = [c for k, c in enumerate(current) if k not in (i, j)] + [dup]
    return "".join(current), tuple(calls)


def _perm(current: str, target: str) -> tuple[int, ...] | None:
    if current == target:
        return None
    perm = tuple([current.index(c) for c in target])
    return None if perm == tuple(range(len(perm))) else perm


def _single(labels: str, output: str, shape: tuple[int, ...], dtype: torch.dtype) -> Plan:
    sizes = dict(zip(labels, shape, strict=True))
    diag, diagonals = _diagonalize(labels)
    summed = tuple(i for i, c in enumerate(diag) if c not in output)
    rest = "".join(c for c in diag if c in output)
    out_shape = tuple(sizes[c] for c in output)
    operand = Operand(diagonals, summed, _perm(rest, output))
    subscripts = f"{labels}->{output}"
    sums = _sums(subscripts, dtype, ((operand, diag, sizes),))
    return Plan(subscripts, dtype, (operand,), (0,), None, (1, 1, 1, 1), None, None, out_shape, sums=sums)


def _sums(subscripts: str, dtype: torch.dtype, operands) -> tuple[Plan | None, ...]:
    """The pre-sum plans of ``operands`` (each (Operand, its labels after diagonals, label sizes)), or () when
    none sums anything inexactly: see ``Plan.sums``."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return ()
    sums: list[Plan | None] = []
    for op, labels, sizes in operands:
        ks = math.prod(sizes[labels[d]] for d in op.summed)
        if ks <= 1:  # a sum of at most one term is exact
            sums.append(None)
            continue
        rows = math.prod(sizes[c] for i, c in enumerate(labels) if i not in op.summed)
        summed = "".join(labels[d] for d in op.summed)
        sums.append(
            Plan(
                f"{labels}->{labels.translate({ord(c): None for c in summed})} (sum {summed})",
                dtype,
                (Operand(), Operand()),
                (0, 1),
                "matmul",
                (1, rows, ks, 1),
                None,
                None,
                (rows, 1),
            )
        )
    return tuple(sums) if any(p is not None for p in sums) else ()


def _groups(a: str, b: str, size_a: dict[str, int], size_b: dict[str, int], keep: str, a_is_larger: bool) -> _Groups:
    """Roles of the indices of two operands (each without repeated indices) for the kept output indices."""
    # list comprehensions, not generators: this runs once per new step, and they build short tuples faster
    drop_a = tuple([c for c in a if c in size_b and size_a[c] == 1 != size_b[c]])
    drop_b = tuple([c for c in b if c in size_a and size_b[c] == 1 != size_a[c]])
    has_a = "".join([c for c in a if c not in drop_a]) if drop_a else a
    has_b = "".join([c for c in b if c not in drop_b]) if drop_b else b
    shared = has_a if a_is_larger else has_b
    return _Groups(
        drop_a,
        drop_b,
        sum_a=tuple([c for c in has_a if c not in keep and c not in has_b]),
        sum_b=tuple([c for c in has_b if c not in keep and c not in has_a]),
        batch=tuple([c for c in shared if c in has_a and c in has_b and c in keep]),
        contracted=tuple([c for c in shared if c in has_a and c in has_b and c not in keep]),
        m=tuple([c for c in has_a if c in keep and c not in has_b]),
        n=tuple([c for c in has_b if c in keep and c not in has_a]),
    )


def natural_output(inputs: tuple[str, str], keep: str, shapes: Shapes) -> str:
    """The order of the kept indices in which a two-operand step's result leaves the kernel without a permute
    (from the step's layout alone: its plan is made once, for this order)."""
    layout = _layout(inputs, keep, shapes)
    return keep if layout.product else "".join(layout.batch + layout.rows + layout.cols)


# Broadcast batching (see ``_spread``) pays off once the copy it avoids is large and each batch GEMM is not tiny.
SPREAD_MIN_ELEMENTS = 2**16
SPREAD_MIN_SLICE = 2**10


def _spread(
    x: str, free: tuple[str, ...], contracted: tuple[str, ...], batch: tuple[str, ...], size, numel: int
) -> tuple[str, ...]:
    """Free indices of the larger operand ``x`` laid out [batch, lead, contracted, trail] (lead and trail free)
    that should become batch indices, the other operand broadcast over them (a stride-0 view). [free, K] would
    copy x there (its free indices are not adjacent); [batch+lead, K, trail] is a view of it. Size-1 dimensions
    merge anywhere and are left out of the test."""
    order = [c for c in x if size(c) != 1 and (c in free or c in contracted or c in batch)]
    shared = [c for c in batch if size(c) != 1]
    k = [c for c in contracted if size(c) != 1]
    if order[: len(shared)] != shared or not k:
        return ()
    rest = order[len(shared) :]
    n_lead = next((i for i, c in enumerate(rest) if c not in free), len(rest))
    lead, trail = rest[:n_lead], rest[n_lead + len(k) :]
    if not lead or not trail or rest[n_lead : n_lead + len(k)] != k or any(c not in free for c in trail):
        return ()
    batches = math.prod(size(c) for c in shared + lead)
    if numel < SPREAD_MIN_ELEMENTS or numel < SPREAD_MIN_SLICE * batches:
        return ()
    return tuple(lead)


class _Layout(NamedTuple):
    """Where each index of a pair of operands goes (``_layout``): enough to know the order the kernel produces."""

    a: str  # each operand's labels after its diagonals
    b: str
    diag_a: tuple[tuple[int, int], ...]
    diag_b: tuple[tuple[int, int], ...]
    size_a: dict[str, int]
    size_b: dict[str, int]
    size: Callable[[str], int]  # the size of each label (a size-1 dimension broadcasts)
    g: _Groups
    a_larger: bool
    product: bool  # nothing to contract: a ``mul`` step, produced in output order (the fields below are empty)
    spread: tuple[str, ...] = ()
    batch: tuple[str, ...] = ()
    swap: bool = False
    rows: tuple[str, ...] = ()  # the kernel's M indices (m, or n when swapped)
    cols: tuple[str, ...] = ()


def _layout(inputs: tuple[str, ...], output: str, shapes: Shapes) -> _Layout:
    size_a, size_b = dict(zip(inputs[0], shapes[0], strict=True)), dict(zip(inputs[1], shapes[1], strict=True))
    (a, diag_a), (b, diag_b) = _diagonalize(inputs[0]), _diagonalize(inputs[1])
    numel_a, numel_b = math.prod(shapes[0]), math.prod(shapes[1])
    a_larger = numel_a >= numel_b
    g = _groups(a, b, size_a, size_b, output, a_larger)

    # the size of each label; a size-1 dimension broadcasts (to any size, 0 included)
    sizes = dict(size_b)
    for c, s in size_a.items():
        if s != 1 or c not in sizes:
            sizes[c] = s
    size = sizes.__getitem__
    common = (a, b, diag_a, diag_b, size_a, size_b, size, g, a_larger)
    if all([size(c) == 1 for c in g.contracted]):
        return _Layout(*common, True)  # positional: keywords cost more, and this runs once per new step
    spread = _spread(a if a_larger else b, g.m if a_larger else g.n, g.contracted, g.batch, size, max(numel_a, numel_b))
    m, n = (tuple([c for c in group if c not in spread]) if spread else group for group in (g.m, g.n))
    # The kernel's left operand is the one whose free indices come first in the output.
    first_free = next((c for c in output if c in m or c in n), None)
    swap = first_free is not None and first_free in n
    # product, spread, batch, swap, rows, cols
    return _Layout(*common, False, spread, g.batch + spread, swap, n if swap else m, m if swap else n)


def _pair(inputs: tuple[str, ...], output: str, shapes: Shapes, dtype: torch.dtype) -> Plan:
    a, b, diag_a, diag_b, size_a, size_b, size, g, a_larger, product, spread, batch, swap, rows, cols = _layout(
        inputs, output, shapes
    )
    if product:
        return _product(inputs, output, (a, b), (diag_a, diag_b), (g.sum_a, g.sum_b), (size_a, size_b), g, size, dtype)
    m, n = (cols, rows) if swap else (rows, cols)
    B, M, K, N = (
        math.prod(map(size, batch)),
        math.prod(map(size, rows)),
        math.prod(map(size, g.contracted)),
        math.prod(map(size, cols)),
    )
    kernel = "bmm" if batch and B != 1 else "matmul"
    lead: tuple[int, ...] = (B,) if kernel == "bmm" else ()
    loop = None
    if spread:
        shared, broadcast = math.prod(map(size, g.batch)), math.prod(map(size, spread))
        if shared != 1:  # [P, Q] batches: the broadcast operand's stride-0 Q cannot merge with P without a copy
            lead, loop = (shared, broadcast), (0, shared) if shared <= broadcast else (1, broadcast)
    # the left kernel operand is [B, M, K], the right one [B, K, N]
    if swap:
        (a_groups, a_shape), (b_groups, b_shape) = ((g.contracted, m), (K, N)), ((n, g.contracted), (M, K))
    else:
        (a_groups, a_shape), (b_groups, b_shape) = ((m, g.contracted), (M, K)), ((g.contracted, n), (K, N))
    # the larger operand holds the spread indices in its batch group; the smaller one is broadcast over them
    spread_a, spread_b = ((), spread) if a_larger else (spread, ())
    a_op = _operand(a, diag_a, g.sum_a, g.drop_a, batch, spread_a, a_groups, size, lead + a_shape)
    b_op = _operand(b, diag_b, g.sum_b, g.drop_b, batch, spread_b, b_groups, size, lead + b_shape)
    produced = "".join(batch + rows + cols)
    out_shape = tuple(map(size, produced))
    kernel_shape = lead + (M, N)
    subscripts = f"{inputs[0]},{inputs[1]}->{output}"
    sums = _sums(subscripts, dtype, ((a_op, a, size_a), (b_op, b, size_b)))
    return Plan(
        subscripts=subscripts,
        dtype=dtype,
        operands=(b_op, a_op) if swap else (a_op, b_op),
        order=(1, 0) if swap else (0, 1),
        kernel=kernel,
        bmkn=(B, M, K, N),
        out_shape=None if out_shape == kernel_shape else out_shape,
        out_perm=_perm(produced, output),
        shape=tuple(map(size, output)),
        sums=sums[::-1] if swap and sums else sums,
        loop=loop,
    )


def _product(
    inputs: tuple[str, ...],
    output: str,
    labels: tuple[str, str],
    diagonals,
    summed,
    sizes,
    g: _Groups,
    size,
    dtype: torch.dtype,
) -> Plan:
    """A step with nothing to contract (see the module docstring): each operand, after its diagonals and sums,
    permuted to the output order of the indices it has, then reshaped (a view) to one dimension per output
    index, 1 where it lacks the index or broadcasts it; its size-1 indices outside the output merge away."""
    operands = []
    for own, diag, sums, own_size in zip(labels, diagonals, summed, sizes, strict=True):
        rest = "".join(c for c in own if c not in sums)
        ordered = "".join(c for c in output if c in rest) + "".join(c for c in rest if c not in output)
        shape = tuple(own_size[c] if c in rest else 1 for c in output)
        now = tuple(own_size[c] for c in ordered)
        operands.append(
            Operand(
                diag, tuple(own.index(c) for c in sums), _perm(rest, ordered), None, None if shape == now else shape
            )
        )
    B, M, N = (math.prod(size(c) for c in group) for group in (g.batch, g.m, g.n))
    subscripts = f"{inputs[0]},{inputs[1]}->{output}"
    return Plan(
        subscripts=subscripts,
        dtype=dtype,
        operands=tuple(operands),
        order=(0, 1),
        kernel="mul",
        bmkn=(B, M, 1, N),
        out_shape=None,
        out_perm=None,
        shape=tuple(size(c) for c in output),
        sums=_sums(subscripts, dtype, zip(operands, labels, sizes, strict=True)),
    )


def _operand(
    labels: str,
    diagonals: tuple[tuple[int, int], ...],
    summed: tuple[str, ...],
    dropped: tuple[str, ...],
    batch: tuple[str, ...],
    missing: tuple[str, ...],
    groups: tuple[tuple[str, ...], tuple[str, ...]],
    size,
    target: tuple[int, ...],
) -> Operand:
    """Sum, then permute to [dropped size-1 dims, batch, groups...] and reshape to the kernel's operand shape
    ``target`` (size-1 dimensions merge into any group, so dropping them costs nothing). An operand ``missing``
    batch indices (the last batch dimension of ``target``, after the shared ones) is reshaped with 1 there,
    then broadcast over it: a stride-0 view, never a copy of the broadcast."""
    rest = "".join([c for c in labels if c not in summed]) if summed else labels
    present = tuple([c for c in batch if c not in missing]) if missing else batch
    order = "".join(dropped + present + groups[0] + groups[1])
    shape = tuple([1 if c in dropped else size(c) for c in order])
    expand = None
    if missing:
        at = len(target) - 3  # the broadcast batch dimension: [..., Q, rows, cols]
        expand, shape = (target[:at] + (1,) + target[at + 1 :], target), target
    return Operand(
        diagonals,
        tuple([labels.index(c) for c in summed]),
        _perm(rest, order),
        expand,
        None if shape == target else target,
    )
