"""Contractions larger than memory: ``contract(..., memory_limit=...)`` sliced with cotengra, the slices run here.

cotengra slices indices until no intermediate exceeds ``memory_limit`` elements; the contraction then is a sum
over the slices, each one an ordinary contraction of the operands indexed at one value of each sliced index,
every binary step a planned kernel call. Without sharded operands or a process group, the slices run here and
the result is a plain array. Over the ranks of a process group, ``trn_backend.distributed._slicing`` (registered
in ``OVER_RANKS`` by the package: this layer never imports torch.distributed) decides the tree on one rank,
broadcasts it and runs each rank's slices with ``sum_of_slices``.

Speed: all slices have the same shapes, so every step's plan is derived once (``_Program``, which runs the
steps of the slice's ``program.Program`` on its registers) and a slice costs one ``execute`` (one kernel call)
per step whose operands vary along the sliced indices; an operand is indexed (a view) only when one of its
sliced indices changes. The slices run in the order of an odometer over the
sliced indices, and a step runs again only when a sliced index below it in the tree turned: steps below no
sliced index run once, steps below only the slow digits once per value of those. The order of the digits is
chosen to minimize the steps run (``_odometer_order``); the result is accumulated in place.
Memory: every intermediate is one the plain slice-by-slice traversal computes, so none exceeds the limit; each
step's last result is kept (at most one intermediate per step alive, where the traversal frees them as it goes).
Slices are not contracted several at once (a sliced index kept as a batch index): that would multiply the
intermediates past the limit cotengra sliced them to. Output indices are sliced only when the caller's tree or
``HyperOptimizer`` slices them; each slice then adds to its own part of the output.

Progress: when the first slices (``PROGRESS_DECIDE_S`` seconds of them) predict more than ``PROGRESS_MIN_S``
seconds in all, a tqdm bar on stderr counts the slices (on the first rank only). ``progress=False`` turns it
off, ``progress=True`` shows it from the start; tqdm's own ``TQDM_DISABLE=1`` in the environment (read when
tqdm is imported) turns it off too. Without tqdm installed there is no automatic bar (and progress=True is an
ImportError).
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator, Sequence

import opt_einsum
import torch

from .. import _dtypes, _precision
from .._array import NeuronArray, wrap
from . import execute, paths, whole
from .parse import Spec, parse
from .plan import Plan, entry, result_dtype
from .program import label_sizes

__all__ = ["contract", "slicing", "sum_of_slices", "output_shape", "OVER_RANKS", "PROGRESS_DECIDE_S",
           "PROGRESS_MIN_S"]

Path = tuple[tuple[int, ...], ...]

# The progress bar's rule: time this many seconds of slices, then show a bar when the estimated total exceeds
# PROGRESS_MIN_S (a contraction that ends within PROGRESS_DECIDE_S never shows one).
PROGRESS_DECIDE_S = 0.5
PROGRESS_MIN_S = 2.0

# The sliced contraction over the ranks of a process group: the trn_backend package registers
# trn_backend.distributed._slicing's function here (imported on its first call). Called as f(subscripts, spec,
# tensors, dtype, limit, optimize, progress, relative) after the checks every sliced contraction makes, it returns the
# result, or None where no operand is sharded and no process group runs (the slices then run here).
OVER_RANKS: list[Callable[..., NeuronArray | None]] = []


def contract(subscripts: object, *operands: NeuronArray, memory_limit: int | str, optimize: object = "auto",
             progress: bool | None = None) -> NeuronArray:
    """The contraction of ``operands`` with no intermediate above ``memory_limit`` elements ("max_input": the
    largest operand), as a sum over cotengra's slices (see the module docstring). ``optimize``: what
    opt_einsum takes, a ``cotengra.HyperOptimizer``, or a ``cotengra.ContractionTree`` (its path and sliced
    indices are used as they are, sliced further if the limit needs it). ``progress``: None shows a tqdm bar
    on stderr when the slices take long, False never, True always."""
    if not isinstance(subscripts, str):
        raise TypeError("contract(memory_limit=...) needs the subscripts as a string, such as 'ij,jk->ik'")
    if progress is not None and not isinstance(progress, bool):
        raise TypeError(f"contract(): progress must be True, False or None (automatic), got {progress!r}")
    if progress and _tqdm() is None:
        raise ImportError("contract(progress=True) shows its bar with tqdm, which is not installed: pip install tqdm")
    ts = [x._t for x in operands]
    spec = parse(subscripts, tuple(t.shape for t in ts), "contract")
    dtype = result_dtype(tuple(t.dtype for t in ts), "contract")
    limit = max(math.prod(t.shape) for t in ts) if memory_limit == "max_input" else memory_limit
    relative = _precision.targets(None, None)[1]
    for over_ranks in OVER_RANKS:
        out = over_ranks(subscripts, spec, ts, dtype, limit, optimize, progress, relative)
        if out is not None:
            return out
    path, sliced = slicing(spec, [tuple(t.shape) for t in ts], limit, optimize)
    ts = [_dtypes.cast(t, dtype) for t in ts]
    if relative is not None and (dtype.is_floating_point or dtype.is_complex):
        # the slices and their sum are one expression: checked as a whole (``whole``)
        def run(tensors: Sequence[torch.Tensor]) -> tuple[torch.Tensor, list[tuple[str, float | None]]]:
            program = _Program(spec, list(tensors), path, sliced)
            return program.sum_slices(0, math.prod(program.digits), False), program.bounds()

        sizes = _sizes(spec, [tuple(t.shape) for t in ts])
        return wrap(whole.checked(spec.subscripts, run, ts, sizes, spec.output, relative))
    return wrap(sum_of_slices(spec, ts, path, sliced, progress))


def slicing(spec: Spec, shapes: Sequence[tuple[int, ...]], memory_limit: object,
            optimize: object = "auto") -> tuple[Path, tuple[str, ...]]:
    """cotengra's choice for this contraction: the path of the sliced network and the sliced indices, such
    that no intermediate exceeds ``memory_limit`` elements (an error when slicing cannot get there)."""
    import cotengra as ctg

    if isinstance(memory_limit, bool) or not isinstance(memory_limit, int) or memory_limit < 1:
        raise ValueError(f"contract(): memory_limit must be a positive number of elements or 'max_input', got "
                         f"{memory_limit!r}")
    sizes = _sizes(spec, shapes)
    inputs = [tuple(s) for s in spec.inputs]
    if isinstance(optimize, ctg.ContractionTree):
        tree = _rebuilt(optimize, spec, sizes)
    elif isinstance(optimize, ctg.HyperOptimizer):
        tree = optimize.search(inputs, tuple(spec.output), sizes)
    else:
        path = opt_einsum.contract_path(",".join(spec.inputs) + "->" + spec.output, *shapes, shapes=True,
                                        optimize=optimize)[0]
        tree = ctg.ContractionTree.from_path(inputs, tuple(spec.output), sizes, path=path)
    if tree.max_size() > memory_limit and len(inputs) > 1:  # one operand: its only intermediate is the output
        try:
            tree = tree.slice(target_size=memory_limit, allow_outer=False)
        except (RuntimeError, KeyError):  # cotengra ran out of contracted indices to slice (a KeyError when
            pass  # the tree came with sliced indices)
    if tree.max_size() > memory_limit:
        raise ValueError(f"contract(): no slicing of contracted indices keeps every intermediate within "
                         f"memory_limit={memory_limit} elements (the smallest reaches {tree.max_size()}; the output "
                         f"has {math.prod(sizes[c] for c in spec.output)})")
    return tuple(map(tuple, tree.get_path())), tuple(tree.sliced_inds)


def _rebuilt(given, spec: Spec, sizes: dict[str, int]):
    """The caller's ContractionTree (its path and sliced indices) for these operand sizes: a rank's blocks may be
    smaller than the shapes the tree was built for."""
    import cotengra as ctg

    inputs = tuple(tuple(s) for s in spec.inputs)
    if tuple(map(tuple, given.inputs)) != inputs or tuple(given.output) != tuple(spec.output):
        raise ValueError(f"contract(): optimize= is a cotengra ContractionTree of another contraction (inputs "
                         f"{given.inputs}, output {given.output}), not of {spec.subscripts!r}")
    if any(info.project is not None for info in given.sliced_inds.values()):
        raise ValueError("contract(): optimize= is a ContractionTree with projected indices (a single value, not "
                         "a sum over slices); pass the tree before remove_ind(..., project=...)")
    tree = ctg.ContractionTree.from_path(inputs, tuple(spec.output), sizes, path=given.get_path())
    for ind in given.sliced_inds:
        tree = tree.remove_ind(ind)
    return tree


def sum_of_slices(spec: Spec, ts: list[torch.Tensor], path: Path, sliced: tuple[str, ...],
                  progress: bool | None = None, ranks: int = 1, rank: int = 0) -> torch.Tensor:
    """The sum over the slices of ``rank``'s contiguous block of them among ``ranks`` (all of them on one rank;
    contiguous, so that steps keep being shared between consecutive slices)."""
    program = _Program(spec, ts, path, sliced, ranks)
    n = math.prod(program.digits)
    return program.sum_slices(n * rank // ranks, n * (rank + 1) // ranks, progress)


@dataclasses.dataclass(frozen=True)
class _Leaf:
    """An operand's register: ``base`` indexed at the current values of the sliced indices it varies along."""

    register: int
    base: torch.Tensor  # the operand with the dimensions of those indices first (see ``_leading``)
    digits: tuple[int, ...]  # the odometer digit giving the value of each of those dimensions


@dataclasses.dataclass(frozen=True)
class _Step:
    """A step of the slice's ``program.Program`` with its plan: registers ``inputs`` to ``register``."""

    register: int
    plan: Plan
    inputs: tuple[int, ...]
    depends: frozenset[str]  # the sliced indices its operands vary along


class _Program:
    """The sliced contraction compiled once (every slice has the same shapes): operand views per slice, a plan
    per step on registers (the operands, then each step's result), the odometer order of the sliced indices,
    and for each odometer digit the leaves and steps that a turn of it makes stale."""

    def __init__(self, spec: Spec, ts: list[torch.Tensor], path: Path, sliced: tuple[str, ...],
                 ranks: int = 1) -> None:
        sizes = _sizes(spec, [t.shape for t in ts])
        # an operand broadcasting a sliced index from size 1 takes its one entry in every slice
        varies = [tuple(dict.fromkeys(c for c, d in zip(labels, t.shape, strict=True) if c in sliced and d != 1))
                  for labels, t in zip(spec.inputs, ts, strict=True)]
        self.dtype, self.device = ts[0].dtype, ts[0].device
        self.digits = tuple(sizes[c] for c in sliced)
        # Under a precision setting, float32 and complex64 slices are summed in float64 and rounded once, so the
        # sum costs gamma_{N-1}(u_fp64) plus one rounding; by default they are summed in their own dtype.
        self.acc = _dtypes.COMPUTE.get(self.dtype, self.dtype)
        if _precision.active_setting() is not None:
            self.acc = {torch.float32: torch.float64, torch.complex64: torch.complex128}.get(self.dtype, self.acc)
        self.ranks = ranks
        self.steps = steps = _steps(spec, ts, path, sliced, [frozenset(v) for v in varies])
        forward = _precision.targets(None, None)[0]
        if forward is not None:
            # the target is shared among the steps' roundings and the fixed ones of the sums (then checked)
            fixed = len(self.bounds()) - sum(bool(s.plan.roundings) for s in steps)
            self.steps = steps = _steps(spec, ts, path, sliced, [frozenset(v) for v in varies],
                                        sum(s.plan.roundings for s in steps) + fixed)
            bound = _precision.compose(b for _, b in self.bounds())
            if bound is not None and bound > forward:
                raise _precision.PrecisionError(
                    f"no mode reaches target_forward_error={forward:g} for {spec.subscripts!r} as a sum of "
                    f"{math.prod(self.digits)} slices: the whole bound is {bound:.3g}, with "
                    f"{', '.join(f'{m} {b:.2g}' for m, b in self.bounds())}", "contract()")
        order = _odometer_order(sliced, sizes, [s.depends for s in steps])
        digit = {c: i for i, c in enumerate(order)}
        leaves = []
        for i, (labels, t, own) in enumerate(zip(spec.inputs, ts, varies, strict=True)):
            base, front = _leading(labels, t, sliced, own)
            leaves.append(_Leaf(i, base, tuple(digit[c] for c in front)))
        self.registers: list[torch.Tensor | None] = [None] * (len(ts) + len(steps))
        self.result = steps[-1].register
        self.digits = tuple(sizes[c] for c in order)
        self.shape = tuple(sizes[c] for c in spec.output)
        # output indices sliced (by the caller's tree): each slice adds to its own part of the output
        self.outer = (spec.output, tuple(c for c in spec.output if c in sliced))
        self.outer_digits = tuple(digit[c] for c in self.outer[1])
        # Turning digit p restarts every later digit, so it makes stale whatever varies along a digit at p or
        # later. What varies along none is computed once, here.
        for leaf in leaves:
            if not leaf.digits:
                self.registers[leaf.register] = leaf.base
        for step in steps:
            if not step.depends:
                self._compute(step)
        positions = range(max(len(order), 1))  # without sliced indices, the one slice turns position 0
        self.stale_leaves = [[f for f in leaves if f.digits and max(f.digits) >= p] for p in positions]
        self.stale_steps = [[s for s in steps if s.depends and max(digit[c] for c in s.depends) >= p]
                            for p in positions]

    def bounds(self) -> list[tuple[str, float | None]]:
        """(what, bound) of every rounding step of the whole sliced contraction, each in units of its own
        absolute value (``_precision.compose`` composes them): the steps of a slice, the sum of the slices
        (and over the ranks), and the rounding of a wider sum back to the dtype."""
        out = whole.rounding_steps([s.plan for s in self.steps])
        if not (self.dtype.is_floating_point or self.dtype.is_complex):
            return out
        slices = math.prod(self.digits)
        if slices > 1:
            out.append((f"sum of {slices} slices", _precision.sum_bound(self.acc, slices)))
        if self.ranks > 1:
            out.append((f"sum over {self.ranks} ranks", _precision.sum_bound(self.acc, self.ranks)))
        if self.acc is not self.dtype and (slices > 1 or self.ranks > 1):
            real = self.dtype.to_real() if self.dtype.is_complex else self.dtype
            out.append((f"rounding to {_dtypes.name(self.dtype)}", torch.finfo(real).eps / 2))
        return out

    def _compute(self, step: _Step) -> None:
        registers = self.registers
        registers[step.register] = execute.execute(step.plan, [registers[i] for i in step.inputs])

    def sum_slices(self, start: int, stop: int, progress: bool | None) -> torch.Tensor:
        """The sum of slices ``start`` to ``stop - 1`` in odometer order (``progress``: see the module)."""
        # uint16/32/64 add in their compute dtype (modular, as the result type), bool is a logical or; float32 in
        # float64 under a precision setting (see __init__)
        acc = self.acc
        add = torch.Tensor.logical_or_ if self.dtype is torch.bool else torch.Tensor.add_
        total = torch.zeros(self.shape, dtype=acc, device=self.device)
        labels, outer = self.outer
        parts, _ = _leading(labels, total, outer, outer)  # indexed by the slice's values: a view of its part
        registers, result, run = self.registers, self.result, execute.execute
        bar, deciding, began = None, progress is not False, time.perf_counter()
        for done, (p, value) in enumerate(_odometer(self.digits, start, stop), start=1):
            for leaf in self.stale_leaves[p]:
                registers[leaf.register] = leaf.base[tuple(value[d] for d in leaf.digits)]
            for step in self.stale_steps[p]:
                registers[step.register] = run(step.plan, [registers[i] for i in step.inputs])
            out = registers[result]
            add(parts[tuple(value[d] for d in self.outer_digits)], out if acc is self.dtype else _widened(out, acc))
            if bar is not None:
                bar.update()
            elif deciding:
                elapsed = time.perf_counter() - began
                if progress or elapsed >= PROGRESS_DECIDE_S:
                    deciding = False
                    if progress or elapsed / done * (stop - start) > PROGRESS_MIN_S:
                        bar = _bar(stop - start, done)
        if bar is not None:
            bar.close()
        return _dtypes.restore(total, self.dtype)


def _widened(t: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    """A slice in the dtype the slices are summed in (``_Program.acc``)."""
    return t.to(acc) if t.is_floating_point() or t.is_complex() else _dtypes.compute(t)


def _bar(total: int, done: int):
    """A tqdm bar on stderr counting slices, ``done`` of ``total`` already (None without tqdm)."""
    tqdm = _tqdm()
    return None if tqdm is None else tqdm(total=total, initial=done, desc="contract", unit="slice", leave=False)


def _tqdm():
    """tqdm's bar, or None when tqdm is not installed (the automatic bar is then left out)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _steps(spec: Spec, ts: list[torch.Tensor], path: Path, sliced: tuple[str, ...],
           varies: list[frozenset[str]], roundings: int = 1) -> list[_Step]:
    """Every step of the program along ``path`` of one slice (the operands without their sliced indices),
    planned once, on its registers: operand i is register i, each step's result the next one."""
    inner = Spec(tuple(_drop(labels, sliced) for labels in spec.inputs), _drop(spec.output, sliced))
    shapes = tuple(tuple(int(d) for c, d in zip(labels, t.shape, strict=True) if c not in sliced)
                   for labels, t in zip(spec.inputs, ts, strict=True))
    dtype, device = ts[0].dtype, ts[0].device
    depends = list(varies)
    steps = []
    for step in paths.steps(inner, shapes, path or ((0,),)).steps:  # one operand: cotengra's path is empty
        plan = entry(step.inputs, step.output, step.shapes, (dtype,) * len(step.inputs)).plan(
            device, roundings=roundings)
        depends.append(frozenset().union(*(depends[i] for i in step.operands)))
        steps.append(_Step(step.register, plan, step.operands, depends[-1]))
    return steps


def _odometer_order(sliced: tuple[str, ...], sizes: dict[str, int],
                    depends: list[frozenset[str]]) -> tuple[str, ...]:
    """The sliced indices from the slowest odometer digit to the fastest. A step runs again each time a digit up
    to the fastest one it depends on turns, so the fast digits should be indices few steps depend on: chosen
    greedily from the fastest, each time the index that the fewest steps not yet placed depend on (ties: the
    larger index, whose turns then cost the least)."""
    left, fastest_first = set(sliced), []
    while left:
        c = min(sorted(left), key=lambda c: (sum(1 for d in depends if c in d and d <= left), -sizes[c]))
        fastest_first.append(c)
        left.discard(c)
    return tuple(reversed(fastest_first))


def _odometer(digits: tuple[int, ...], start: int, stop: int) -> Iterator[tuple[int, tuple[int, ...]]]:
    """(the slowest digit that turned, the digits) for slices ``start`` to ``stop - 1`` of an odometer over
    ``digits`` (the last digit the fastest); the first slice counts as turning every digit."""
    if start >= stop:
        return
    value, rest = [0] * len(digits), start
    for i in reversed(range(len(digits))):
        rest, value[i] = divmod(rest, digits[i])
    yield 0, tuple(value)
    for _ in range(start + 1, stop):
        i = len(digits) - 1
        while value[i] == digits[i] - 1:  # carry
            value[i] = 0
            i -= 1
        value[i] += 1
        yield i, tuple(value)


def _leading(labels: str, t: torch.Tensor, sliced: tuple[str, ...],
             varies: tuple[str, ...]) -> tuple[torch.Tensor, str]:
    """``t`` at 0 along the sliced indices it broadcasts from size 1, its dimensions of the sliced indices it
    ``varies`` along moved first (in that order; a repeated index's dimensions side by side), and their labels:
    indexing it with the values of those labels gives a view of one slice of ``t``."""
    t = t[tuple(0 if c in sliced and c not in varies else slice(None) for c in labels)]
    rest = [c for c in labels if c not in sliced or c in varies]
    front = sorted((i for i, c in enumerate(rest) if c in varies), key=lambda i: varies.index(rest[i]))
    return t.permute(front + [i for i, c in enumerate(rest) if c not in varies]), "".join(rest[i] for i in front)


def _drop(labels: str, sliced: tuple[str, ...]) -> str:
    return "".join(c for c in labels if c not in sliced)


def _sizes(spec: Spec, shapes: Sequence[Sequence[int]]) -> dict[str, int]:
    """The size of each index (a size-1 dimension broadcasts against any other)."""
    return label_sizes(zip(spec.inputs, shapes, strict=True))


def output_shape(spec: Spec, ts: list[torch.Tensor]) -> tuple[int, ...]:
    """The shape of the contraction's result."""
    sizes = _sizes(spec, [t.shape for t in ts])
    return tuple(sizes[c] for c in spec.output)
