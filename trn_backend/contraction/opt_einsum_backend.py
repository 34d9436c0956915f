"""The opt_einsum backend "trn", and ``contract`` / ``contract_expression`` conveniences that use it.

``backend="trn"`` calls ``einsum``, ``tensordot`` and ``transpose`` below, which accept NeuronArray, NumPy and
torch operands (converted without a copy where possible) and return NeuronArrays; expressions called on NumPy
arrays convert back, as opt_einsum's torch backend does. NeuronArray inputs with ``backend="auto"`` come here
too: opt_einsum names the backend after the array's top-level module, ``trn_backend``, aliased to this one.

opt_einsum has no public backend registry, so this module touches its internals (the pyproject pins the
opt_einsum minor series this was written against; ``tests/contraction/test_opt_einsum_backend.py`` checks it), in two
steps:

- ``register()``, when trn_backend is imported, only adds: the names "trn" and "trn_backend" to
  ``opt_einsum.backends.dispatch._aliases``, and this module's conversions to its ``CONVERT_BACKENDS`` and
  ``EVAL_CONSTS_BACKENDS`` tables. Other backends see no change.
- ``_adapt()``, on the first use of the "trn" backend (the first call of ``einsum``, ``tensordot``,
  ``transpose``, ``build_expression`` or ``evaluate_constants`` here, or of ``contract`` or
  ``contract_expression``), replaces ``opt_einsum.sharing._memoize`` and
  ``opt_einsum.contract.ContractExpression._get_evaluated_constants``: opt_einsum keys the memo of
  ``shared_intermediates`` and an expression's folded ``constants=`` by backend name only, so a result computed
  under one precision mode would be reused under another; the replacements key them by the precision setting
  too for this backend, and call opt_einsum's own for every other backend. A step already inside opt_einsum's
  memo or fold when the first use happens is kept by opt_einsum's own (the replacement takes over from the
  next one).
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import opt_einsum
import torch
from opt_einsum import sharing
from opt_einsum.backends import dispatch
from opt_einsum.contract import ContractExpression
from opt_einsum.sharing import to_backend_cache_wrap

from .. import _device, _dtypes, _precision
from .._helpers import PY_SCALARS, NeuronArray, from_numpy, wrap
from . import slicing, whole
from .api import einsum_operands, einsum_tensors, tensordot_tensors
from .axes import canonical_axes, tensordot_entry
from .execute import execute
from .parse import parse
from .plan import Plan, plan_for, result_dtype
from .program import Program, build, label_sizes, run, shape_of

__all__ = ["einsum", "tensordot", "transpose", "contract", "contract_expression", "Expression", "register",
           "OPT_EINSUM_SERIES"]

# The opt_einsum release series whose private dispatch module ``register`` writes into.
OPT_EINSUM_SERIES = "3.4"
_OPT_EINSUM_CALL = "opt_einsum.contract(backend='trn')"  # what precision errors name when opt_einsum calls us


def to_trn(x: object) -> NeuronArray:
    """A NeuronArray for a NeuronArray, torch tensor (same memory) or NumPy array (default device)."""
    if isinstance(x, NeuronArray):
        return x
    if isinstance(x, torch.Tensor):
        return NeuronArray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        t, device, _ = from_numpy(np.asarray(x), None)  # what asarray(x) does with NumPy data
        return wrap(t if _device.same(t.device, device) else t.to(device))
    raise TypeError(f"opt_einsum backend 'trn' got an operand of type {type(x).__name__}; "
                    "pass NeuronArray, NumPy or torch arrays, or Python scalars")


def _operands(operands: tuple[object, ...], func: str) -> list[torch.Tensor]:
    """Operands as tensors: arrays through ``to_trn``, Python scalars as weak scalars (``einsum_operands``)."""
    return einsum_operands([x if isinstance(x, PY_SCALARS) else to_trn(x) for x in operands], func)


# Plans of the steps opt_einsum sends here under the device's default precision, by everything a plan depends on
# (operand shapes, dtypes and devices; canonical axes, or subscripts): a repeated step costs one lookup before
# ``execute`` instead of validation, parsing and the planner's entry lookup. A precision setting takes the full
# path, which resolves the mode per call, and so does a reduced float32 matmul precision (see
# _precision.default_plan_reusable). The plans are the planner's own, every step still one kernel call.
_STEPS: dict[tuple, Plan] = {}
_STEPS_MAX = 4096


def _remember(key: tuple, plan: Plan) -> Plan:
    if len(_STEPS) >= _STEPS_MAX:  # bounded, as the planner's caches are
        _STEPS.clear()
    _STEPS[key] = plan
    return plan


def einsum(subscripts: str, *operands: object, out: NeuronArray | None = None,
           optimize: object = "auto", **kwargs: Any) -> NeuronArray:
    """The einsum opt_einsum calls for steps that are not plain tensordots (batched ones, for instance); an
    ``out`` must have the result's shape and a dtype NumPy's einsum could write it to (casting='safe').
    opt_einsum hands it the keywords it does not know itself: a precision choice among them is refused with
    what to write instead (opt_einsum's own tensordot steps refuse it before they reach this backend)."""
    if not _adapted:
        _adapt()
    if kwargs:
        precision = sorted(set(kwargs) & {"precision", "target_forward_error", "target_relative_error"})
        if precision:
            raise TypeError(f"opt_einsum.contract(backend='trn') takes no {precision[0]}=: write `with "
                            f"trn_backend.precision(...):` around the call, or call trn_backend.contract(..., "
                            f"{precision[0]}=...) with the same arguments")
        raise TypeError(f"einsum() of the opt_einsum backend 'trn' got unexpected keyword arguments "
                        f"{', '.join(sorted(kwargs))}")
    try:
        if len(operands) == 2 and out is None and type(subscripts) is str and type(optimize) is str and \
                optimize == "auto":
            plan = _einsum_step(subscripts, *operands)
            if plan is not None:
                return wrap(execute(plan, (operands[0]._t, operands[1]._t)))
        if all(type(x) is NeuronArray for x in operands) and len({x._t.device for x in operands}) == 1:
            ts = [x._t for x in operands]  # every step of a network: nothing to convert or check
        else:
            ts = _operands(operands, "einsum")
        if out is not None:
            check_out(out, subscripts, ts, "einsum")
        result = wrap(einsum_tensors(subscripts, ts, optimize))
    except _precision.PrecisionError as e:  # raised where a mode is resolved or run: name opt_einsum's call
        raise e.named(_OPT_EINSUM_CALL) from e.__cause__
    if out is None:
        return result
    out[...] = result
    return out


def _einsum_step(subscripts: str, x: object, y: object) -> Plan | None:
    """The cached plan of a two-operand step on NeuronArrays of one device under the default precision; None
    where the full path applies (other operands, devices that differ, a precision setting)."""
    if type(x) is not NeuronArray or type(y) is not NeuronArray or _precision.active_setting() is not None:
        return None
    a, b = x._t, y._t
    if not _precision.default_plan_reusable(a.dtype, b.dtype):
        return None
    key = (subscripts, a.shape, b.shape, a.dtype, b.dtype, a.device, b.device)
    plan = _STEPS.get(key)
    if plan is None and a.device == b.device:
        spec = parse(subscripts, (a.shape, b.shape))  # the same checks, and errors, as einsum_tensors
        plan = _remember(key, plan_for(spec.inputs, spec.output, (a.shape, b.shape), (a.dtype, b.dtype), a.device))
    return plan


def check_out(out: object, subscripts: object, ts: list[torch.Tensor], func: str) -> None:
    """``out=`` of a contraction: a NeuronArray of the result's shape, on its device, of a dtype NumPy's einsum
    would write the result to (casting='safe'); anything else is refused before any work is done."""
    if not isinstance(out, NeuronArray):
        raise TypeError(f"{func}(): out= must be a NeuronArray, got {type(out).__name__}")
    if isinstance(subscripts, str):
        spec = parse(subscripts, tuple(tuple(t.shape) for t in ts), func)
        shape = shape_of(spec.output, list(zip(spec.inputs, (tuple(t.shape) for t in ts), strict=True)))
        if out.shape != shape:
            raise ValueError(f"{func}(): out= has shape {out.shape}, but the result of {subscripts!r} has shape "
                             f"{shape}")
    dtype = result_dtype(tuple(t.dtype for t in ts), func)
    if not np.can_cast(_dtypes.PUBLIC[dtype], out.dtype, casting="safe"):
        raise TypeError(f"{func}(): cannot write the {_dtypes.name(dtype)} result into out= of dtype "
                        f"{_dtypes.name(out.dtype)} (NumPy's einsum casting='safe' rule)")
    if ts and out.device != ts[0].device:
        raise ValueError(f"{func}(): out= is on {out.device}, the operands on {ts[0].device}")


def tensordot(x: object, y: object, axes: int | tuple[Any, Any] = 2) -> NeuronArray:
    """The tensordot opt_einsum calls, lowered by the planner (see ``trn_backend.tensordot``)."""
    if not _adapted:
        _adapt()
    try:
        if type(x) is NeuronArray and type(y) is NeuronArray:
            a, b = x._t, y._t  # every step of a network: nothing to convert
            plan = _tensordot_step(a, b, axes)
            if plan is not None:
                return wrap(execute(plan, (a, b)))
            if a.device == b.device:
                return wrap(tensordot_tensors(a, b, axes))
        a, b = _operands((x, y), "tensordot")
        return wrap(tensordot_tensors(a, b, axes))
    except _precision.PrecisionError as e:  # raised where a mode is resolved or run: name opt_einsum's call
        raise e.named(_OPT_EINSUM_CALL) from e.__cause__


def _tensordot_step(a: torch.Tensor, b: torch.Tensor, axes: object) -> Plan | None:
    """The cached plan of a tensordot step on one device with canonical axes (a pair of int tuples, as opt_einsum
    passes them) under the default precision; None where the full path applies."""
    # checked before the lookup: 1.0 and True hash and compare like 1
    if _precision.active_setting() is not None or canonical_axes(axes) is not axes or \
            not _precision.default_plan_reusable(a.dtype, b.dtype):
        return None
    key = (a.shape, b.shape, a.dtype, b.dtype, a.device, b.device, axes)
    plan = _STEPS.get(key)
    if plan is None and a.device == b.device:
        plan = _remember(key, tensordot_entry(a.shape, b.shape, a.dtype, b.dtype, axes).plan(a.device))
    return plan


def transpose(x: object, axes: tuple[int, ...]) -> NeuronArray:
    """A permuted view (no copy)."""
    if not _adapted:
        _adapt()
    return wrap(to_trn(x)._t.permute(tuple(axes)))


# --- conversions for opt_einsum's ContractExpression on NumPy arrays and for constants ---

@to_backend_cache_wrap
def _to_trn_shared(x: object) -> NeuronArray | None:
    """``to_trn``, memoized inside ``opt_einsum.shared_intermediates``; None marks a non-constant operand."""
    return None if x is None else to_trn(x)


def build_expression(_arrays: object, expr: Any):
    """Evaluate ``expr`` on NumPy arrays: convert in, contract with "trn", convert the result back to NumPy."""
    if not _adapted:
        _adapt()

    def trn_contract(*arrays: object) -> np.ndarray:
        return np.asarray(expr._contract([_to_trn_shared(x) for x in arrays], backend="trn"))

    return trn_contract


def evaluate_constants(const_arrays: list[object], expr: Any) -> Any:
    """Convert the constant operands and contract what depends on them only, once."""
    if not _adapted:
        _adapt()
    return expr(*(_to_trn_shared(x) for x in const_arrays), backend="trn", evaluate_constants=True)


# --- opt_einsum's caches, keyed by the precision setting (see the module docstring) ---

_NAMES = ("trn", "trn_backend")
_CONTRACTIONS = ("tensordot", "einsum")
_opt_einsum_memoize = sharing._memoize
_opt_einsum_constants = ContractExpression._get_evaluated_constants
_adapted = False  # whether ``_adapt`` has run: one global test on every entry point


def _cached(store: dict, key: Any, compute: Any) -> Any:
    """``store[key]``, computed once with the precision checks made on the way, which every reuse replays."""
    if key not in store:
        with _precision.captured_checks() as checks:
            result = compute()
        store[key] = (result, tuple(checks))
        return result
    result, checks = store[key]
    _precision.replay(checks)
    return result


def _memoize(key: tuple, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """opt_einsum's ``shared_intermediates`` memo: for this backend's contractions, keyed by the precision
    setting too."""
    if key[0] not in _CONTRACTIONS or key[1] not in _NAMES:
        return _opt_einsum_memoize(key, fn, *args, **kwargs)
    return _cached(sharing.get_sharing_cache(), (*key, _precision.active_setting()), lambda: fn(*args, **kwargs))


def _evaluated_constants(self: ContractExpression, backend: str) -> list[Any]:
    """``ContractExpression``'s folded constants: for this backend, folded once per precision setting instead
    of once under whichever mode the first call ran."""
    if backend not in _NAMES:
        return _opt_einsum_constants(self, backend)

    def fold() -> list[Any]:
        self.evaluate_constants(backend)
        return self._evaluated_constants[backend]

    return _cached(self.__dict__.setdefault("_trn_folds", {}), (backend, _precision.active_setting()), fold)


def register() -> None:
    """Make ``backend="trn"`` (and ``"auto"`` on NeuronArrays) reach this module: additions to opt_einsum's
    dispatch tables only (see the module docstring)."""
    for name in _NAMES:
        dispatch._aliases[name] = __name__
    dispatch.CONVERT_BACKENDS["trn"] = build_expression
    dispatch.EVAL_CONSTS_BACKENDS["trn"] = evaluate_constants


def _adapt() -> None:
    """The first use of backend "trn": opt_einsum's two caches keyed by the precision setting for it (the only
    place opt_einsum's internals are replaced; see the module docstring)."""
    global _adapted
    sharing._memoize = _memoize
    ContractExpression._get_evaluated_constants = _evaluated_constants
    _adapted = True


# --- conveniences ---

def _precision_scope(precision: str | None, target_forward_error: float | None,
                     target_relative_error: float | None):
    """The precision context for the backend calls opt_einsum makes on our behalf (conflicts raise here)."""
    if precision is None and target_forward_error is None and target_relative_error is None:
        return contextlib.nullcontext()
    return _precision.precision(precision, target_forward_error=target_forward_error,
                                target_relative_error=target_relative_error)


def contract(subscripts: Any, *operands: Any, precision: str | None = None,
             target_forward_error: float | None = None, target_relative_error: float | None = None,
             **kwargs: Any) -> NeuronArray:
    """``opt_einsum.contract(subscripts, *operands, backend="trn", **kwargs)`` under a precision mode or a
    target (with target_relative_error=, ``trn_backend.last_precision_report()`` then tells the modes run)."""
    if not _adapted:
        _adapt()
    if "backend" in kwargs:
        raise TypeError("trn_backend.contract() always uses backend='trn'; call opt_einsum.contract for others")
    try:
        with _precision_scope(precision, target_forward_error, target_relative_error):
            return _contract(subscripts, operands, kwargs)
    except _precision.PrecisionError as e:  # raised where a mode is resolved or run: name this function
        raise e.named("contract()") from e.__cause__


def _contract(subscripts: Any, operands: tuple[Any, ...], kwargs: dict[str, Any]) -> NeuronArray:
    if kwargs.get("out") is not None and isinstance(subscripts, str):
        ts = _operands(operands, "contract")  # converted once: checked here, contracted below
        check_out(kwargs["out"], subscripts, ts, "contract")
        operands = tuple(map(wrap, ts))
    if kwargs.get("memory_limit") is not None:
        # sliced with cotengra (over the ranks of a process group where trn_backend.distributed registered it)
        return slicing.contract(subscripts, *map(to_trn, operands), **kwargs)
    if kwargs.get("optimize", True) is False:
        # opt_einsum sends optimize=False to numpy.einsum whatever the backend: keep it on the engine
        return einsum(subscripts, *operands, out=kwargs.get("out"), optimize=False)
    if isinstance(subscripts, str) and set(kwargs) <= {"optimize", "out"} and \
            _precision.targets(None, None) != (None, None):
        # a target holds for the whole expression: the engine runs opt_einsum's path (the same optimizer) as
        # one program, the target shared among its rounding steps (opt_einsum's own loop sends steps one by one)
        optimize = kwargs.get("optimize", "auto")
        return einsum(subscripts, *operands, out=kwargs.get("out"), optimize="auto" if optimize is True else optimize)
    return opt_einsum.contract(subscripts, *operands, backend="trn", **kwargs)


class Expression:
    """An opt_einsum ContractExpression that evaluates with backend "trn" under a fixed precision choice.

    Called on NeuronArrays of one device (no ``out=``, no ``constants=``, outside ``shared_intermediates``), it
    runs a program made once per operand shapes, dtypes and device: opt_einsum's steps, each the planner entry
    its ``tensordot`` or ``einsum`` call would reach (then its transpose), without opt_einsum's per-step dispatch.
    The plans and kernel calls are those of ``expression(*arrays, backend="trn")``, so are the results, bit for
    bit; each step's mode is resolved per call, under the precision in force. Other calls go through opt_einsum.
    """

    def __init__(self, expression: Any, precision: str | None, target_forward_error: float | None,
                 target_relative_error: float | None = None) -> None:
        _precision_scope(precision, target_forward_error, target_relative_error)  # conflicts raise now
        self.expression = expression
        self.precision = precision
        self.target_forward_error = target_forward_error
        self.target_relative_error = target_relative_error
        self._programs: dict[tuple, Program | None] = {}  # None: opt_einsum runs it

    def __call__(self, *arrays: Any, out: Any = None) -> Any:
        try:
            with _precision_scope(self.precision, self.target_forward_error, self.target_relative_error):
                program = None
                if out is None and not self.expression._constants_dict and not self.expression.kwargs and \
                        not sharing.currently_sharing():  # einsum kwargs (order=...): opt_einsum's call decides
                    program = self._program(arrays)
                if program is None:
                    return self.expression(*arrays, backend="trn", out=out)
                ts = [x._t for x in arrays]
                forward, relative = _precision.targets(None, None)
                # a target is shared among every rounding step of the expression (1: no target, no counting)
                n = 1 if forward is None and relative is None else program.roundings(tuple(t.dtype for t in ts))
                if relative is not None and n > 1:
                    return wrap(self._checked(ts, relative))
                return wrap(run(program, ts, n))
        except _precision.PrecisionError as e:  # raised where a mode is resolved or run: name the expression
            raise e.named("contract_expression(...)()") from e.__cause__

    def _checked(self, ts: list[torch.Tensor], relative: float) -> torch.Tensor:
        """target_relative_error= on the whole expression (``whole.checked``)."""
        spec = parse(self.expression.contraction, tuple(t.shape for t in ts))
        sizes = label_sizes(zip(spec.inputs, (t.shape for t in ts), strict=True))

        def run_wide(tensors) -> tuple[torch.Tensor, list[tuple[str, float | None]]]:
            # the checks run the expression on float64 data: its own program, planned for that dtype
            ledger: list[Plan] = []
            wide = build(tuple(t.shape for t in tensors), contraction_list=self.expression.contraction_list,
                         dtypes=tuple(t.dtype for t in tensors))
            return run(wide, list(tensors), 1, ledger=ledger), whole.rounding_steps(ledger)

        dtype = result_dtype(tuple(t.dtype for t in ts))
        return whole.checked(spec.subscripts, run_wide, [_dtypes.cast(t, dtype) for t in ts], sizes, spec.output,
                             relative)

    def _program(self, arrays: tuple[Any, ...]) -> Program | None:
        """The program for these operands (made on first use); None where opt_einsum's own call applies."""
        if len(arrays) != self.expression.num_args or not all(type(x) is NeuronArray for x in arrays):
            return None
        key = (tuple(x._t.shape for x in arrays), tuple(x._t.dtype for x in arrays), arrays[0]._t.device)
        if len({x._t.device for x in arrays}) != 1:
            return None
        if key not in self._programs:
            if len(self._programs) >= _STEPS_MAX:
                self._programs.clear()
            self._programs[key] = build(key[0], contraction_list=self.expression.contraction_list, dtypes=key[1])
        return self._programs[key]

    def __repr__(self) -> str:
        return f"trn_backend.{self.expression!r}"

    def __str__(self) -> str:
        return str(self.expression)


def contract_expression(subscripts: Any, *shapes: Any, precision: str | None = None,
                        target_forward_error: float | None = None, target_relative_error: float | None = None,
                        **kwargs: Any) -> Expression:
    """``opt_einsum.contract_expression`` (shapes, ``constants=``, ``optimize=``...) evaluated with "trn"."""
    if not _adapted:
        _adapt()
    return Expression(opt_einsum.contract_expression(subscripts, *shapes, **kwargs), precision,
                      target_forward_error, target_relative_error)
