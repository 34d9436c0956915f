"""The compiler: a ``Program``, the call's precision ``Request``, the operands' dtypes and device become
``Compiled``: each step's plan under its mode, and every rounding the call makes, each with its bound.

The roundings of a call, in the order they happen (``Compiled.roundings``; explain() prints one row each):

- the cast of an operand to the dtype the steps compute in, where its values round there (int64 to float32,
  float64 to float32 under numpy.einsum's dtype=, the real parts of a complex cast);
- per step, each pre-sum (an index of one operand only, summed under the step's mode) and its product: a GEMM
  under its mode, or an elementwise product (nothing to contract), one rounding per entry, sqrt(5) u for complex;
- with sharded operands, the sum over the ranks of a step's result wherever it is pending;
- with ``sliced`` indices, the sum of the slices;
- the final rounding to the result's dtype (or out='s), where the steps computed in a wider one.

The dtype the steps compute in: the result dtype by default and under modes that work in their dtype; float64
(complex128) under modes that work in float64 (fp64, ozaki), so that the expression is rounded once, at the end;
under a forward target, the result dtype where its share of the target allows, else float64 carried between the
steps. A target is split so that the roundings the dtypes fix (casts, elementwise products, sums, the final
rounding) are paid first and the rest is shared among the products and pre-sums, each the cheapest mode meeting
its share; where even that fails in both dtypes, PrecisionError says why in numbers. Under a relative target, an
expression of one rounding is checked a posteriori step by step (``posteriori``), any other as a whole
(``whole``, which compiles forward targets of its own).

``COMPILED``, the fast path: compiled programs of the device default and of modes, by what the front door keys
them by (shapes, dtypes, device, request), so a repeated call costs one lookup before the runner.
"""

from __future__ import annotations

import dataclasses
import importlib
import math
import sys
from collections.abc import Callable, Hashable, Sequence

import torch

from .. import _dtypes, _precision, kernels
from ..kernels import bounds
from .parse import ELLIPSIS_LABELS
from .plan import Plan, entry, result_dtype
from .program import Program

__all__ = ["Rounding", "Compiled", "compile", "WIDE", "COMPILED", "ProgramCache", "cacheable", "cache_key", "NOT_KEPT"]

# where a narrower dtype's expression is carried between steps so that it is rounded once, at the end
WIDE = {
    torch.float16: torch.float64,
    torch.bfloat16: torch.float64,
    torch.float32: torch.float64,
    torch.float64: torch.float64,
    torch.complex64: torch.complex128,
    torch.complex128: torch.complex128,
}


@dataclasses.dataclass(frozen=True)
class Rounding:
    """One rounding of a compiled call: its row name in explain() ("c0" a cast of operand 0, "1a" a pre-sum of
    step 1, "1" its product, "1r" a sum over ranks, "slices", "out"), what it is, and its bound in units of its own
    absolute value (None: no rounding a bound describes, such as complex to real). ``chosen``: a mode choice sets
    it (a GEMM or pre-sum), else the dtypes do."""

    row: str
    what: str
    bound: float | None
    chosen: bool = False


@dataclasses.dataclass(frozen=True, eq=False)
class Compiled:
    """A program compiled for one call (see the module docstring). ``casts``: per operand, the dtype it is cast
    to, None where it is not. ``acc``: the dtype slice sums are held in. ``checked``: a target is promised, so
    casts and the final rounding check that values stay in the range of their dtype. ``relative``: the target
    the whole expression is checked against a posteriori (``whole``); ``final_check``: the relative target of a
    call whose only rounding is the final one (exact steps). ``single``: the plan of a call that is one step on
    the operands as they are, what the runner runs directly."""

    program: Program
    request: _precision.Request | None
    device: torch.device
    dtypes: tuple[torch.dtype, ...]
    result: torch.dtype
    compute: torch.dtype
    acc: torch.dtype
    out: torch.dtype
    casts: tuple[torch.dtype | None, ...]
    plans: tuple[Plan, ...]
    roundings: tuple[Rounding, ...]
    ranks: int = 1
    checked: bool = False
    relative: float | None = None
    final_check: float | None = None
    single: Plan | None = None
    # (kernel function, mode) where running the call is that kernel on the two operands as they are, with
    # nothing to check afterwards (no target)
    call: tuple[Callable[..., torch.Tensor], str] | None = None

    @property
    def bound(self) -> float | None:
        """The whole call's bound, in units of the expression on |operands|: every rounding's composed
        (``_precision.compose``); 0 when nothing rounds, None where a rounding has no bound."""
        return _precision.compose(r.bound for r in self.roundings)

    @property
    def final(self) -> Rounding | None:
        """The final rounding to the result's dtype, where there is one."""
        return self.roundings[-1] if self.roundings and self.roundings[-1].row == "out" else None

    @property
    def held(self) -> torch.dtype:
        """The dtype the result is held in before the final rounding."""
        return self.acc if self.program.sliced else self.compute


def compile(
    program: Program,
    request: _precision.Request | None,
    dtypes: Sequence[torch.dtype],
    device: torch.device,
    *,
    result: torch.dtype | None = None,
    out: torch.dtype | None = None,
    ranks: int = 1,
    carry: bool | None = None,
) -> Compiled:
    """``program`` for operands of ``dtypes`` on ``device`` under ``request``: the result in ``result`` (default:
    the operands' promotion; numpy.einsum's dtype=), delivered in ``out`` (default: ``result``; out='s dtype);
    ``ranks``: the size of the mesh of sharded operands; ``carry``: under a forward target, True computes in
    float64 (complex128) and rounds once (what ``whole`` checks), None tries the result dtype first."""
    dtypes = tuple(dtypes)
    result = result_dtype(dtypes) if result is None else result
    out = result if out is None else out
    inexact = result.is_floating_point or result.is_complex
    if request is None or request.mode is not None or not inexact:
        compute = result
        if (
            request is not None
            and request.mode is not None
            and inexact
            and _precision.MODES[request.mode].float64_working
        ):
            compute = WIDE[result]  # fp64 and ozaki work in float64: the expression is rounded once, at the end
        values = out if compute is not out else None

        def choose(dtype: torch.dtype, K: int, bmkn: tuple[int, int, int, int]) -> _precision.Resolved:
            return _precision.mode_for(request, dtype, K, device, values)

        compiled = _assemble(program, request, dtypes, device, result, compute, out, ranks, choose)
        if request is not None and request.mode is None:  # a target on exact steps: only casts and out round
            blocked = next((r for r in compiled.roundings if r.bound is None), None)
            if blocked is not None:
                raise _precision.PrecisionError(_no_rounding(blocked, request), "contraction")
            bound = compiled.bound
            assert bound is not None  # no rounding lacks a bound (refused just above), so their composition has one
            if request.target is not None and bound > request.target:
                costs = ", ".join(f"{r.what} costs {r.bound:.3g}" for r in compiled.roundings)
                raise _precision.PrecisionError(
                    f"no mode reaches target_forward_error={request.target:g} for {program.spec.subscripts!r}: "
                    f"the steps are exact, but {costs}",
                    "contraction",
                )
            if request.relative is not None and compiled.roundings:
                return dataclasses.replace(compiled, final_check=request.relative)
        return compiled
    if request.relative is not None:
        return _for_relative(program, request, dtypes, device, result, out, ranks)
    assert request.target is not None  # a request holds a mode or one target; neither a mode nor relative here
    return _for_target(program, request, request.target, dtypes, device, result, out, ranks, carry)


def _no_rounding(rounding: Rounding, request: _precision.Request) -> str:
    target = "target_forward_error" if request.target is not None else "target_relative_error"
    value = request.target if request.target is not None else request.relative
    return f"{target}={value:g} cannot be promised: {rounding.what} is not a rounding any bound describes"


Chooser = Callable[[torch.dtype, int, tuple[int, int, int, int]], _precision.Resolved]


def _assemble(
    program: Program,
    request: _precision.Request | None,
    dtypes: tuple[torch.dtype, ...],
    device: torch.device,
    result: torch.dtype,
    compute: torch.dtype,
    out: torch.dtype,
    ranks: int,
    choose: Chooser,
) -> Compiled:
    """The plans of ``program`` computed in ``compute``, each GEMM and pre-sum under ``choose``'s mode, and every
    rounding of the call in order."""
    inexact = compute.is_floating_point or compute.is_complex
    roundings: list[Rounding] = []
    casts = tuple(None if d is compute else compute for d in dtypes)
    for i, d in enumerate(dtypes):
        if d is not compute:
            b = bounds.cast_bound(d, compute)
            if b != 0:
                roundings.append(
                    Rounding(f"c{i}", f"cast of operand {i}, {_dtypes.name(d)} to {_dtypes.name(compute)}", b)
                )
    stochastic = request is not None and request.mode == "sr" and compute in (torch.bfloat16, torch.float16)
    plans = []
    for number, step in enumerate(program.steps, start=1):
        found = entry(step.inputs, step.output, step.shapes, (compute,) * len(step.inputs))
        base = found.base
        sums = tuple(None if p is None else choose(p.dtype, p.bmkn[2], p.bmkn) for p in base.sums)
        if base.kernel is None:
            resolved = None
        elif base.kernel == "mul":  # one product per entry: its bound is the dtype's, whatever the mode
            resolved = (
                _precision.Resolved(request.mode, request.params, bounds.product_bound(compute, stochastic))
                if inexact and request is not None and request.mode is not None
                else _precision.Resolved("native", (), bounds.product_bound(compute) if inexact else None)
            )
        else:
            resolved = choose(base.dtype, base.bmkn[2], base.bmkn)
        plan = found.with_modes(resolved, sums)
        plans.append(plan)
        if not inexact:
            continue
        for letter, s in zip("ab", [s for s in plan.sums if s is not None], strict=False):
            assert s.resolved is not None  # each pre-sum was given its mode (``choose``) above
            roundings.append(Rounding(f"{number}{letter}", f"{readable(s.subscripts)}", s.resolved.bound, True))
        if plan.kernel is not None:
            assert resolved is not None  # a step with a kernel was resolved above
            what = (
                readable(plan.subscripts)
                if plan.kernel != "mul"
                else f"elementwise product {readable(plan.subscripts)}"
            )
            roundings.append(Rounding(str(number), what, resolved.bound, plan.kernel != "mul"))
        if ranks > 1 and not program.sliced and plan.roundings:
            roundings.append(
                Rounding(
                    f"{number}r",
                    f"sum over {ranks} ranks, where the result is pending",
                    bounds.sum_bound(compute, ranks),
                )
            )
    acc = compute
    if program.sliced:
        acc = _dtypes.COMPUTE.get(compute, compute)
        if request is not None and compute in (torch.float32, torch.complex64):
            acc = WIDE[compute]  # under a precision choice the slices are summed in float64, then rounded once
        slices = math.prod(program.sizes)
        if inexact and slices > 1:
            roundings.append(
                Rounding("slices", f"sum of {slices} slices in {_dtypes.name(acc)}", bounds.sum_bound(acc, slices))
            )
        if inexact and ranks > 1:
            roundings.append(
                Rounding("ranks", f"sum over {ranks} ranks in {_dtypes.name(acc)}", bounds.sum_bound(acc, ranks))
            )
    held = acc if program.sliced else compute
    if _dtypes.COMPUTE.get(out, out) is not held and held is not out:
        b = bounds.cast_bound(held, out)
        if b != 0:
            roundings.append(Rounding("out", f"final rounding to {_dtypes.name(out)}", b))
    single = None
    if (
        len(plans) == 1
        and not program.sliced
        and all(c is None for c in casts)
        and held is out
        and program.steps[0].operands == tuple(range(program.operands))
        and program.steps[0].perm is None
    ):
        single = plans[0]
    checked = request is not None and request.mode is None  # a target: values must stay in their dtype's range
    # a checked call's one step is run by ``run``, which vouches for its result: no kernel call to make directly
    return Compiled(
        program,
        request,
        device,
        dtypes,
        result,
        compute,
        acc,
        out,
        casts,
        tuple(plans),
        tuple(roundings),
        ranks,
        checked,
        None,
        None,
        single,
        None if checked else _kernel_call(single, program),
    )


def _kernel_call(plan: Plan | None, program: Program) -> tuple[Callable[..., torch.Tensor], str] | None:
    """(kernel function, mode) where running ``plan`` is that kernel called on the two operands in order, as
    they are (``execute``'s direct step with no cast, permute or reshape, and no output layout): a 2-D x 2-D
    matmul, or a bmm of two 3-D operands of one batch size. None for every other plan."""
    if (
        plan is None
        or plan.direct is None
        or plan.out_shape is not None
        or plan.out_perm is not None
        or len(program.steps[0].operands) != 2
    ):
        return None
    i, perm, shape, j, perm_b, shape_b, kernel, mode = plan.direct
    if (i, j) != (0, 1) or perm is not None or shape is not None or perm_b is not None or shape_b is not None:
        return None
    return getattr(kernels, kernel), mode


def _for_target(
    program: Program,
    request: _precision.Request,
    target: float,
    dtypes: tuple[torch.dtype, ...],
    device: torch.device,
    result: torch.dtype,
    out: torch.dtype,
    ranks: int,
    carry: bool | None,
    keyword: str = "target_forward_error",
) -> Compiled:
    """The cheapest plan meeting a forward ``target`` for the whole call: in the result dtype, else carried in
    float64 (see the module docstring). ``keyword``: the target the caller asked for, as a refusal names it (a
    relative target's plan starts from the forward one at the same value)."""
    options = [WIDE[result]] if carry else list(dict.fromkeys((result, WIDE[result])))
    reasons = []
    for compute in options:
        # first the roundings the dtypes fix: what they leave is shared among the choosable ones
        layout = _assemble(program, request, dtypes, device, result, compute, out, ranks, _placeholder)
        fixed = [r for r in layout.roundings if not r.chosen]
        chosen = [r for r in layout.roundings if r.chosen]
        where = (
            "in " + _dtypes.name(compute)
            if compute is result
            else f"carried in {_dtypes.name(compute)} and rounded once"
        )
        blocked = next((r for r in fixed if r.bound is None), None)
        if blocked is not None:
            reasons.append(f"{where}, {blocked.what} is not a rounding any bound describes")
            continue
        cost = _precision.compose(r.bound for r in fixed)
        assert cost is not None  # every fixed rounding has a bound (``blocked`` above), so their composition has one
        budget = (target - cost) / (1 + cost)  # (1 + target) / (1 + cost) - 1, without its cancellation
        if not budget > 0 or (chosen and not _precision.share(budget, len(chosen)) > 0):
            listed = ", ".join(f"{r.what} {r.bound:.3g}" for r in fixed if r.bound)
            reasons.append(
                f"{where}, the roundings the dtypes fix ({listed}) alone cost {cost:.3g}; the target is {target:g}"
                if len(fixed) > 1
                else f"{where}, the {fixed[0].what} alone costs {cost:.3g}; the target is {target:g}"
            )
            continue
        share = _precision.share(budget, len(chosen)) if chosen else budget

        # a def, not a lambda: mypy cannot infer a lambda with the extra ``share`` parameter as a Chooser
        def choose(
            dtype: torch.dtype, K: int, bmkn: tuple[int, int, int, int], share: float = share
        ) -> _precision.Resolved:
            return _precision.select(dtype, K, share, device, bmkn)

        try:
            return _assemble(program, request, dtypes, device, result, compute, out, ranks, choose)
        except _precision.PrecisionError:
            reasons.append(f"{where}, {_short_of(layout, share, device)}")
    raise _precision.PrecisionError(
        f"no mode reaches {keyword}={target:g} for {program.spec.subscripts!r} "
        f"({_dtypes.name(result)}): {'; '.join(reasons)}",
        "contraction",
    )


def _placeholder(dtype: torch.dtype, K: int, bmkn: tuple[int, int, int, int]) -> _precision.Resolved:
    """Stands for a mode not chosen yet: layouts and fixed roundings only."""
    return _precision.Resolved("native", (), 0.0)


def _short_of(layout: Compiled, share: float, device: torch.device) -> str:
    """Which step no mode takes to ``share``, and the best it can do."""
    for number, plan in enumerate(layout.plans, start=1):
        for p in [s for s in plan.sums if s is not None] + ([plan] if plan.kernel not in (None, "mul") else []):
            best = _precision.best_available(p.dtype, p.bmkn[2], device, p.bmkn)
            # best_available picks among bounded modes only: ``best.bound is not None`` always holds
            if best is not None and best.bound is not None and best.bound > share:
                return (
                    f"step {number} ({readable(p.subscripts)}, K={p.bmkn[2]}) needs {share:.3g} and the best "
                    f"available bound is {best.bound:.3g}, from {best.label}"
                )
    return f"each product and pre-sum needs {share:.3g}"


def _for_relative(
    program: Program,
    request: _precision.Request,
    dtypes: tuple[torch.dtype, ...],
    device: torch.device,
    result: torch.dtype,
    out: torch.dtype,
    ranks: int,
) -> Compiled:
    """Under a relative target: one rounding is checked where it runs (``posteriori``), several as a whole."""
    target = request.relative
    assert target is not None  # compile() routes only relative targets here
    if ranks > 1:
        raise _precision.PrecisionError(
            "target_relative_error= is not available for sharded operands (the a posteriori check needs the "
            "whole result and its magnitudes on one rank); use target_forward_error= or a mode",
            "contraction",
        )

    def start(dtype: torch.dtype, K: int, bmkn: tuple[int, int, int, int]) -> _precision.Resolved:
        return _precision.relative_start(dtype, K, target, device, bmkn)

    layout = _assemble(program, request, dtypes, device, result, result, out, ranks, _placeholder)
    if not layout.roundings:  # nothing rounds (a transpose, a diagonal): exact, nothing to check
        return layout
    if len(layout.roundings) == 1 and layout.roundings[0].row[0].isdigit():  # one product or pre-sum, checked
        plain = _assemble(program, request, dtypes, device, result, result, out, ranks, start)
        plan = plain.plans[0]
        if plan.kernel == "mul":
            assert plan.resolved is not None  # _assemble resolves every "mul" step
            # the pre-sums keep their modes (there are none here: a product and a pre-sum would be two roundings)
            sums = tuple(None if s is None else s.resolved for s in plan.sums)
            plan = entry(*_step_key(program, result)).with_modes(
                dataclasses.replace(plan.resolved, target_relative_error=target), sums
            )
            plain = dataclasses.replace(plain, plans=(plan,), single=plan if plain.single is not None else None)
        return plain
    # several roundings: the whole expression, carried in float64 and checked once; its plans are the first
    # forward try's (what explain() shows)
    first = _for_target(
        program, request, target, dtypes, device, result, out, ranks, carry=True, keyword="target_relative_error"
    )
    return dataclasses.replace(first, relative=target, single=None)


def _step_key(program: Program, dtype: torch.dtype) -> tuple:
    step = program.steps[0]
    return step.inputs, step.output, step.shapes, (dtype,) * len(step.inputs)


# the ellipsis labels that do not print, shown as '#' (the first ten are digits, which print)
_ELLIPSIS_MARKS = frozenset(c for c in ELLIPSIS_LABELS if not c.isprintable())


def readable(subscripts: str) -> str:
    """Subscripts fit to print: an ellipsis label that does not print as '#', any other character that does
    not (opt_einsum generates spaces such as U+2003, and surrogates) as its escape."""
    return "".join(c if c.isprintable() else "#" if c in _ELLIPSIS_MARKS else ascii(c)[1:-1] for c in subscripts)


# --- the fast path ---


class ProgramCache:
    """Compiled programs by a key the front door builds (everything the compiled program depends on), bounded."""

    def __init__(self, maxsize: int = 4096) -> None:
        self._store: dict[Hashable, Compiled] = {}
        self.maxsize = maxsize
        self.get = self._store.get  # bound: the lookup every repeated call makes

    def put(self, key: Hashable, compiled: Compiled) -> Compiled:
        if len(self._store) >= self.maxsize:
            self._store.clear()
        self._store[key] = compiled
        return compiled

    def clear(self) -> None:
        """Forget every compiled program (the next calls compile again, to the same programs)."""
        self._store.clear()

    def __len__(self) -> int:
        return len(self._store)


COMPILED = ProgramCache()


def cacheable(request: _precision.Request | None) -> bool:
    """Whether a compiled program for this request may be kept in ``COMPILED`` (under ``cache_key``): all but
    relative targets, whose a posteriori check runs on every call."""
    return request is None or request.relative is None


NOT_KEPT = object()  # ``cache_key`` of a request whose compiled programs are not kept


def cache_key(request: _precision.Request | None) -> object:
    """What a compiled program's cache key holds for its precision request: the request itself for the device
    default and modes, whose choice depends on nothing else in the key. (Native float32's bound also depends on
    torch's float32 matmul precision, which may change between calls, but running a step never reads its bound,
    and explain() compiles afresh.) A forward target's choice also reads the mode-cost table in force and torch's
    float32 matmul precision (which decides whether native's bound holds): both are part of its key. Relative
    targets: ``NOT_KEPT``."""
    if request is None or request.mode is not None:
        return request
    if request.relative is not None:
        return NOT_KEPT
    costs = sys.modules.get(_MODE_COSTS)
    if costs is None:  # loaded on the first target-based choice, not with the package
        costs = importlib.import_module(_MODE_COSTS)
    return request, costs.generation, _precision.float32_matmul_precision()


_MODE_COSTS = "trn_backend._mode_costs"
