"""The runner: the one place a compiled program (``compiler.Compiled``) is executed, for every entry point.

``run`` casts the operands (each cast a rounding the program counts, its range checked under a target), runs the
steps on registers (each step one ``execute.execute`` of its plan: a kernel call, or a DTensor executor on
sharded operands), sums the slices of a sliced program, and makes the final rounding to the result's dtype. An
expression checked as a whole under a relative target runs inside ``whole.checked``, which calls back here with
forward targets. Inside ``opt_einsum.shared_intermediates`` each step's result is kept in opt_einsum's sharing
cache, keyed by its plan (modes included) and its operands, and reused by later contractions in the block.

Sliced programs (``contract(..., memory_limit=)``): every slice has the same shapes, so a slice costs one
``execute`` per step whose operands vary along the sliced indices; an operand is indexed (a view) only when one
of its sliced indices changes. The slices run in the order of an odometer over the sliced indices, and a step
runs again only when a sliced index below it in the tree turned: steps below no sliced index run once, steps
below only the slow digits once per value of those. The order of the digits minimizes the steps run
(``_odometer_order``); the result is accumulated in place, in ``Compiled.acc``. Every intermediate is one the
plain slice-by-slice traversal computes, so none exceeds the memory limit; each step's last result is kept.
Progress: when the first slices (``PROGRESS_DECIDE_S`` seconds of them) predict more than ``PROGRESS_MIN_S``
seconds in all, a tqdm bar on stderr counts them (``progress=False`` never, ``progress=True`` from the start).
"""

from __future__ import annotations

import cmath
import dataclasses
import functools
import math
import time
import typing
from collections.abc import Callable, Iterator, Sequence

import torch
from opt_einsum import sharing
from opt_einsum.parser import alpha_canonicalize

from .. import _dtypes, _precision
from . import whole
from .compiler import Compiled, compile
from .execute import execute
from .program import Program, label_sizes

__all__ = [
    "run",
    "partial",
    "finish",
    "fold",
    "Folded",
    "cast",
    "CASTS",
    "READS",
    "PROGRESS_DECIDE_S",
    "PROGRESS_MIN_S",
]

# Casts of tensor subclasses done their own way: trn_backend.distributed registers DTensor's (a pending sum over
# ranks is resolved first: rounding each rank's summand would not be the rounding of the sum).
CASTS: dict[type, Callable[[torch.Tensor, torch.dtype], torch.Tensor]] = {}

# How a reduction of a tensor subclass is read alike on every rank: trn_backend.distributed registers DTensor's
# (a reduction of a sharded tensor is pending over the ranks, and reading it reads this rank's part only).
READS: dict[type, Callable[[torch.Tensor], torch.Tensor]] = {}

_TENSOR = torch.Tensor

PROGRESS_DECIDE_S = 0.5
PROGRESS_MIN_S = 2.0


@dataclasses.dataclass(frozen=True)
class Folded:
    """The steps of a program computed ahead of its calls (``fold``): the registers later steps read, and the
    registers already computed (its steps are skipped)."""

    registers: dict[int, torch.Tensor]
    done: frozenset[int]
    # the constant operands the folded steps read, for what a target checks of all operands (``_vouch``)
    operands: tuple[torch.Tensor, ...] = ()


def run(
    c: Compiled, tensors: Sequence[torch.Tensor | None], *, preset: Folded | None = None, progress: bool | None = None
) -> torch.Tensor:
    """The result of ``c`` on ``tensors`` (the operands, of ``c.dtypes``; with ``preset``, the steps ``fold``
    computed, whose operands may then be None), in ``c.out``."""
    if c.single is not None and preset is None:  # one step on the operands as they are (``Compiled.single``)
        given = typing.cast(Sequence[torch.Tensor], tensors)  # without ``preset``, every operand is given
        held = execute(c.single, given)
        if c.checked and c.request is not None and c.request.target is not None:  # checked: there is a request
            _vouch(c, given, held)
        return held
    if c.relative is not None:
        # relative targets are checked as a whole, never folded (no ``preset``): every operand is given
        return _checked(c, typing.cast(Sequence[torch.Tensor], tensors))
    # every operand: all given without ``preset``; else the given ones and the constants the folded steps read
    operands = (
        typing.cast(Sequence[torch.Tensor], tensors)
        if preset is None
        else [*preset.operands, *(t for t in tensors if t is not None)]
    )
    return finish(c, partial(c, tensors, preset=preset, progress=progress), operands)


def fold(c: Compiled, tensors: Sequence[torch.Tensor | None]) -> Folded:
    """Every step of ``c`` that depends on the given operands only (the others None), computed: the constant
    part of an expression, run once under the call's compiled plans (their roundings are the program's)."""
    registers = _cast_operands(c, tensors)
    known = {i for i, t in enumerate(tensors) if t is not None}
    done = set(known)
    for step, plan in zip(c.program.steps, c.plans, strict=True):
        if all(i in known for i in step.operands):
            # every operand is known: given, or computed by an earlier step
            args = typing.cast("list[torch.Tensor]", [registers[i] for i in step.operands])
            registers[step.register] = _step(step, plan, args)
            known.add(step.register)
            done.add(step.register)
    needed = {i for step in c.program.steps if step.register not in done for i in step.operands if i in known}
    if c.program.result in done:
        needed.add(c.program.result)
    # the needed registers are known: given or computed
    folded = typing.cast("dict[int, torch.Tensor]", {i: registers[i] for i in needed})
    return Folded(folded, frozenset(done), tuple(t for t in tensors if t is not None))


def partial(
    c: Compiled,
    tensors: Sequence[torch.Tensor | None],
    *,
    preset: Folded | None = None,
    progress: bool | None = None,
    share: tuple[int, int] = (1, 0),
) -> torch.Tensor:
    """The result of ``c`` held before its final rounding (in ``c.held``); ``share``: (ranks, rank), the
    contiguous block of the slices this rank sums, where ranks share a sliced program's slices.

    A complex program checks its native products' inf and nan entries once, on its result, instead of once per
    step (a sum of each product and its read: 12-22% of the time of the quimb circuit and QAOA networks of
    benchmarks/bench_autoray.py): its direct steps run without the check (``execute``'s ``check_specials``), and
    a finite result is the result; a non-finite one (an inf or nan operand, or an overflow) runs the program
    again with every step checked. Sound, because
    what the check changes can only be an entry a non-finite term feeds: the unchecked and the checked steps have
    the same non-finite entries and the same finite ones, and a non-finite entry stays non-finite through every
    later product (inf * 0 is nan), sum and layout change, or is dropped without reaching the result (a
    diagonal). Not deferred inside ``shared_intermediates`` (its cache keeps every step's result for later
    contractions) or on sharded operands (their steps run in the DTensor executor)."""
    shared = sharing.currently_sharing()
    if c.compute.is_complex and not shared and all(type(t) is _TENSOR for t in tensors if t is not None):
        held = _partial(c, tensors, preset, progress, share, shared, False)
        if cmath.isfinite(held.sum().item()):
            return held
    return _partial(c, tensors, preset, progress, share, shared, True)


def _partial(
    c: Compiled,
    tensors: Sequence[torch.Tensor | None],
    preset: Folded | None,
    progress: bool | None,
    share: tuple[int, int],
    shared: bool,
    check_specials: bool,
) -> torch.Tensor:
    registers = _cast_operands(c, tensors)
    if c.program.sliced:
        return _sum_slices(c, registers, progress, share, check_specials)
    done: frozenset[int] = frozenset()
    if preset is not None:
        for register, t in preset.registers.items():
            registers[register] = t
        done = preset.done
    for step, plan in zip(c.program.steps, c.plans, strict=True):
        if step.register in done:
            continue
        args = [registers[i] for i in step.operands]
        for i in step.operands:
            registers[i] = None  # each register is read once: free it as soon as it is consumed
        # each step reads registers filled before it (operands, preset or earlier steps' results): a dataflow fact
        # the checker cannot see, and a cast would cost a call per step
        registers[step.register] = (
            _step(step, plan, args, check_specials) if not shared else _shared_step(step, plan, args)  # type: ignore[arg-type]
        )
    return registers[c.program.result]  # type: ignore[return-value]  # the last step fills the result register


def _cast_operands(c: Compiled, tensors: Sequence[torch.Tensor | None]) -> list[torch.Tensor | None]:
    """The registers of ``c``, the operands in them, each cast to the dtype the steps compute in."""
    registers: list[torch.Tensor | None] = [None] * (c.program.operands + len(c.program.steps))
    for i, (t, to) in enumerate(zip(tensors, c.casts, strict=True)):
        if t is not None:
            registers[i] = t if to is None else cast(t, to, c.checked, f"operand {i}")
    return registers


def _step(step, plan, args: list[torch.Tensor], check_specials: bool = True) -> torch.Tensor:
    out = execute(plan, args, check_specials)
    return out if step.perm is None else out.permute(step.perm)


def _shared_step(step, plan, args: list[torch.Tensor]) -> torch.Tensor:
    """A step inside ``opt_einsum.shared_intermediates``: its result kept in the block's cache, keyed by what it
    computes (the step's subscripts made canonical, the plan with its modes, the permute) and by its operands
    (kept alive in the cache, so their ids stay theirs)."""
    cache = sharing.get_sharing_cache()
    for t in args:
        cache["tensor", id(t)] = t
    key = (
        "trn",
        alpha_canonicalize(plan.subscripts),
        plan.resolved,
        plan.sums,
        plan.dtype,
        step.perm,
        *(id(t) for t in args),
    )
    found = cache.get(key)
    if found is None:
        found = cache[key] = _step(step, plan, args)
    return found


def finish(c: Compiled, held: torch.Tensor, operands: Sequence[torch.Tensor]) -> torch.Tensor:
    """The final rounding of a result held in ``c.held`` to ``c.out`` (under a target, its range; under a forward
    target also where nothing is cast, ``_vouch``, which tells overflow by the finite ``operands``); under a
    relative target whose only rounding is this one, its ``Check``."""
    if held.dtype is not c.out:
        held = cast(held, c.out, c.checked, "the result")
    if c.checked and c.request is not None and c.request.target is not None:  # checked: there is a request
        _vouch(c, operands, held)
    if c.final_check is not None:
        rounding = c.final
        # compile sets final_check only where the call's one rounding is the final one, with a bound
        assert rounding is not None and rounding.bound is not None
        check = _precision.Check(
            c.program.spec.subscripts, c.program.contracted, c.final_check, ((rounding.what, rounding.bound),)
        )
        _precision.record(check)
        if not check.met:
            raise _precision.PrecisionError(
                f"target_relative_error={c.final_check:g} is out of reach for {c.program.spec.subscripts!r}: the "
                f"steps are exact, and the {rounding.what} alone costs {rounding.bound:.3g}",
                "contraction",
            )
    return held


def cast(t: torch.Tensor, dtype: torch.dtype, checked: bool = False, what: str = "the result") -> torch.Tensor:
    """``t`` in ``dtype``; ``checked``: a target is promised, so values that leave ``dtype``'s range raise."""
    special = CASTS.get(type(t))
    out = _dtypes.cast(t, dtype) if special is None else special(t, dtype)
    if checked and (dtype.is_floating_point or dtype.is_complex) and t.dtype is not torch.bool and t.dtype is not dtype:
        _check_range(t, out, dtype, what)
    return out


def _check_range(source: torch.Tensor, rounded: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    """A rounding into ``dtype`` under a target: finite values that overflow, and nonzero ones below its normal
    range (subnormal or flushed to zero, far off in relative terms), are out of every bound."""
    real = dtype.to_real() if dtype.is_complex else dtype
    tiny = torch.finfo(real).smallest_normal
    parts = (
        ((source.real, rounded.real), (source.imag, rounded.imag))
        if source.is_complex()
        else ((source, rounded.real if rounded.is_complex() else rounded),)
    )
    for s, r in parts:
        s = s.double() if not (s.is_floating_point() and s.dtype is torch.float64) else s
        if _true((torch.isfinite(s) & ~torch.isfinite(r)).any()):
            raise _precision.PrecisionError(
                f"{what} overflows {_dtypes.name(dtype)} (its largest finite value is {torch.finfo(real).max:.4g}): "
                "no bound holds for it",
                "contraction",
            )
        if _true(((s != 0) & (s.abs() < tiny)).any()):
            raise _precision.PrecisionError(
                f"{what} has values below the normal range of {_dtypes.name(dtype)} (under {tiny:.4g}), where its "
                "rounding is no longer relative: no bound holds for them",
                "contraction",
            )


def _vouch(c: Compiled, operands: Sequence[torch.Tensor], result: torch.Tensor) -> None:
    """Under a forward target, the range the bounds of the steps assume, checked on the call's ``result`` (in
    ``c.out``); PrecisionError where it is left:

    - a non-finite result from finite operands: the result, or an intermediate, overflowed (an intermediate inf
      stays inf or turns nan: no contraction step makes it finite again);
    - nonzero values of the result below the normal range of its dtype, where rounding is no longer relative.

    Not checked: product terms that underflow inside a native or fp64 step while the result stays normal (the
    bound assumes none; telling them from exact zeros needs the expression on |operands|, a second run)."""
    if not (result.dtype.is_floating_point or result.dtype.is_complex):
        return
    if not _true(torch.isfinite(result).all()) and all(_finite(t) for t in operands):
        raise _precision.PrecisionError(
            f"the result of {c.program.spec.subscripts!r} overflows {_dtypes.name(c.out)} (its largest finite "
            f"value is {torch.finfo(_real(c.out)).max:.4g}) or an intermediate overflowed, although every operand "
            "is finite: no bound holds for it",
            "contraction",
        )
    tiny = torch.finfo(_real(c.out)).smallest_normal
    if _true(((result.abs() < tiny) & (result != 0)).any()):
        raise _precision.PrecisionError(
            f"the result of {c.program.spec.subscripts!r} has values below the normal range of "
            f"{_dtypes.name(c.out)} (under {tiny:.4g}), where its rounding is no longer relative: no bound holds "
            "for them",
            "contraction",
        )


def _read(reduced: torch.Tensor) -> torch.Tensor:
    """A reduction's value (or a tensor's), whole and the same on every rank (``READS``)."""
    whole = READS.get(type(reduced))
    return reduced if whole is None else whole(reduced)


def _true(reduced: torch.Tensor) -> bool:
    return bool(_read(reduced))


def _real(dtype: torch.dtype) -> torch.dtype:
    return dtype.to_real() if dtype.is_complex else dtype


def _finite(t: torch.Tensor) -> bool:
    return not (t.dtype.is_floating_point or t.dtype.is_complex) or _true(torch.isfinite(t).all())


# --- relative targets on whole expressions ---


def _checked(c: Compiled, tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    """``c`` checked as a whole (``whole.checked``): forward targets carried in float64, and native float64 on
    magnitudes, each compiled from the same program."""
    program, device, relative = c.program, c.device, c.relative
    assert relative is not None  # ``run`` comes here for a relative target only

    def forward(request: _precision.Request, ts: Sequence[torch.Tensor]) -> tuple[torch.Tensor, float | None, str]:
        dtypes = tuple(t.dtype for t in ts)
        if request.mode is not None:  # the magnitudes and flags, float64 throughout
            compiled = compile(program, request, dtypes, device)
        else:
            compiled = compile(program, request, dtypes, device, result=c.result, out=c.out, carry=True)
        held = partial(compiled, ts)
        before = [r for r in compiled.roundings if r.row != "out"]
        label = "+".join(dict.fromkeys(p.label for p in compiled.plans if p.roundings)) or "exact"
        return held, _precision.compose(r.bound for r in before), label

    spec = program.spec
    sizes = label_sizes(zip(spec.inputs, (t.shape for t in tensors), strict=True))
    return whole.checked(spec.subscripts, forward, tensors, sizes, spec.output, relative, c.out)


# --- sliced programs ---


@dataclasses.dataclass(frozen=True)
class _Order:
    """How the slices of a program are walked: the sliced indices from the slowest odometer digit to the
    fastest, each operand's digits, and for each digit the operands and steps a turn of it makes stale."""

    indices: tuple[str, ...]
    digits: tuple[int, ...]
    stale_leaves: tuple[tuple[int, ...], ...]  # per position: the operands to index again
    stale_steps: tuple[tuple[int, ...], ...]  # per position: the steps (their numbers) to run again
    constant_steps: tuple[int, ...]  # the steps that vary along no sliced index: run once
    outer: tuple[str, ...]  # sliced indices the output keeps (each slice adds to its own part of it)


@functools.lru_cache(maxsize=256)
def _order(program: Program) -> _Order:
    sliced = program.sliced
    sizes = dict(zip(sliced, program.sizes, strict=True))
    depends: list[frozenset[str]] = [frozenset(v) for v in program.varies]
    for step in program.steps:
        depends.append(frozenset().union(*(depends[i] for i in step.operands)))
    step_depends = depends[program.operands :]
    order = _odometer_order(sliced, sizes, step_depends)
    digit = {c: i for i, c in enumerate(order)}
    positions = range(max(len(order), 1))  # without sliced indices, the one slice turns position 0
    # Turning digit p restarts every later digit, so it makes stale whatever varies along a digit at p or later.
    leaves = [tuple(digit[c] for c in v) for v in program.varies]
    return _Order(
        order,
        tuple(sizes[c] for c in order),
        tuple(tuple(i for i, d in enumerate(leaves) if d and max(d) >= p) for p in positions),
        tuple(
            tuple(k for k, dep in enumerate(step_depends) if dep and max(digit[c] for c in dep) >= p) for p in positions
        ),
        tuple(k for k, dep in enumerate(step_depends) if not dep),
        tuple(c for c in program.spec.output if c in sliced),
    )


def _sum_slices(
    c: Compiled,
    registers: list[torch.Tensor | None],
    progress: bool | None,
    share: tuple[int, int],
    check_specials: bool = True,
) -> torch.Tensor:
    """The sum over this rank's block of the slices (all of them on one rank), held in ``c.acc``."""
    program, order = c.program, _order(c.program)
    digit = {label: i for i, label in enumerate(order.indices)}
    leaves = []
    for i, labels in enumerate(program.spec.inputs):
        # sliced programs are never folded (no preset): every operand is given
        base, front = _leading(labels, typing.cast(torch.Tensor, registers[i]), program.sliced, program.varies[i])
        leaves.append((base, tuple(digit[label] for label in front)))
        registers[i] = base if not front else None
    # each step as (its register, the registers it reads, its plan, its permute): what a slice runs, with no
    # attribute lookups in the loop over the slices
    work = [(s.register, s.operands, p, s.perm) for s, p in zip(program.steps, c.plans, strict=True)]
    sizes = program.sizes_of_labels
    for k in order.constant_steps:
        register, operands, plan, perm = work[k]
        # a constant step reads operands given whole, or constant steps run before it
        out = execute(plan, typing.cast("list[torch.Tensor]", [registers[i] for i in operands]), check_specials)
        registers[register] = out if perm is None else out.permute(perm)
    acc = c.acc
    add = torch.Tensor.logical_or_ if c.compute is torch.bool else _add_complex if acc.is_complex else torch.Tensor.add_
    shape = tuple(sizes[label] for label in program.spec.output)
    total = torch.zeros(shape, dtype=acc, device=c.device)
    parts, _ = _leading(program.spec.output, total, order.outer, order.outer)
    outer_digits = tuple(digit[label] for label in order.outer)
    result = program.result
    n = math.prod(order.digits)
    ranks, rank = share
    start, stop = n * rank // ranks, n * (rank + 1) // ranks
    bar, deciding, began = None, progress is not False, time.perf_counter()
    for done, (p, value) in enumerate(_odometer(order.digits, start, stop), start=1):
        for i in order.stale_leaves[p]:
            base, digits = leaves[i]
            registers[i] = base[tuple(value[d] for d in digits)]
        for k in order.stale_steps[p]:
            register, operands, plan, perm = work[k]
            # a stale step reads registers this slice filled (its leaves indexed, steps run in order): a dataflow
            # fact the checker cannot see, and a cast would cost a call per step of every slice
            out = execute(plan, [registers[i] for i in operands], check_specials)  # type: ignore[misc]
            registers[register] = out if perm is None else out.permute(perm)
        out = registers[result]  # type: ignore[assignment]  # as above: the result register is filled
        add(parts[tuple(value[d] for d in outer_digits)], out if out.dtype is acc else _widened(out, acc))
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
    return total


def _add_complex(total: torch.Tensor, t: torch.Tensor) -> None:
    """``total += t`` part by part: torch's complex add multiplies its second operand by alpha=1+0j, a complex
    product that turns inf+1j into inf+nanj and inf+nanj into nan+nanj (the namespace's add avoids it alike,
    ``_api.elementwise._complex_safe``); the sum of the slices keeps each part as IEEE addition leaves it."""
    torch.view_as_real(total).add_(torch.view_as_real(t.resolve_conj().resolve_neg()))


def _widened(t: torch.Tensor, acc: torch.dtype) -> torch.Tensor:
    """A slice in the dtype the slices are summed in (``Compiled.acc``)."""
    return t.to(acc) if t.is_floating_point() or t.is_complex() else _dtypes.compute(t)


def _bar(total: int, done: int):
    """A tqdm bar on stderr counting slices, ``done`` of ``total`` already (None without tqdm)."""
    tqdm = tqdm_bar()
    return None if tqdm is None else tqdm(total=total, initial=done, desc="contract", unit="slice", leave=False)


def tqdm_bar():
    """tqdm's bar, or None when tqdm is not installed (the automatic bar is then left out)."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm


def _odometer_order(sliced: tuple[str, ...], sizes: dict[str, int], depends: list[frozenset[str]]) -> tuple[str, ...]:
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


def _leading(
    labels: str, t: torch.Tensor, sliced: tuple[str, ...], varies: tuple[str, ...]
) -> tuple[torch.Tensor, str]:
    """``t`` at 0 along the sliced indices it broadcasts from size 1, its dimensions of the sliced indices it
    ``varies`` along moved first (in that order; a repeated index's dimensions side by side), and their labels:
    indexing it with the values of those labels gives a view of one slice of ``t``."""
    t = t[tuple(0 if c in sliced and c not in varies else slice(None) for c in labels)]
    rest = [c for c in labels if c not in sliced or c in varies]
    front = sorted((i for i, c in enumerate(rest) if c in varies), key=lambda i: varies.index(rest[i]))
    return t.permute(front + [i for i, c in enumerate(rest) if c not in varies]), "".join(rest[i] for i in front)
