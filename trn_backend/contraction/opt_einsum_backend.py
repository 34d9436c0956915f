"""The opt_einsum backend "trn", and ``contract`` / ``contract_expression``, which run opt_einsum's path here.

``trn_backend.contract`` and ``trn_backend.contract_expression`` take opt_einsum's arguments and its path
optimizer's choice (``contract_path``'s contraction list), and run the whole expression as one ``Program`` on the
runner: one precision request for the whole, with constants (folded once per request, their roundings part of
the expression's), ``out=`` (the final rounding into it), ``shared_intermediates`` (each step's result kept in
opt_einsum's sharing cache, keyed by its modes) and ``memory_limit=`` (sliced with cotengra, ``slicing``).

``backend="trn"`` in opt_einsum's own calls (``opt_einsum.contract(..., backend="trn")``, an opt_einsum
``ContractExpression`` called with it) reaches ``einsum``, ``tensordot`` and ``transpose`` below: opt_einsum
runs its loop itself and calls them one step at a time, so each call is an expression of its own (its own
program, its own bound, its own share of a target; docs/precision.md says what that accounts for). Where that
is the same arithmetic, the loop's calls run as one program instead (``_core_contract``): each step the call
the loop would make, with the same bits, without the loop's Python per step. They accept
NeuronArray, NumPy and torch operands (converted without a copy where possible) and return NeuronArrays;
expressions called on NumPy arrays convert back, as opt_einsum's torch backend does. NeuronArray inputs with
``backend="auto"`` come here too: opt_einsum names the backend after the array's top-level module,
``trn_backend``, aliased to this one.

opt_einsum has no public backend registry, so this module touches its internals (the pyproject pins the
opt_einsum minor series this was written against; ``tests/contraction/test_opt_einsum_backend.py`` checks it), in two
steps:

- ``register()``, when trn_backend is imported, only adds: the names "trn" and "trn_backend" to
  ``opt_einsum.backends.dispatch._aliases``, and this module's conversions to its ``CONVERT_BACKENDS`` and
  ``EVAL_CONSTS_BACKENDS`` tables. Other backends see no change.
- ``_adapt()``, on the first use of the "trn" backend by opt_einsum's own loop (the first call of ``einsum``,
  ``tensordot``, ``transpose``, ``build_expression`` or ``evaluate_constants`` here), replaces opt_einsum's loop
  ``opt_einsum.contract._core_contract`` (for this backend, one program where that is the loop's arithmetic: see
  ``_as_one_program``; the first call, already inside opt_einsum's loop, finishes there with the same bits), and
  ``opt_einsum.sharing._memoize`` and ``opt_einsum.contract.ContractExpression._get_evaluated_constants``:
  opt_einsum keys the memo of ``shared_intermediates`` and an expression's folded ``constants=`` by backend name
  only, so a result computed under one precision mode would be reused under another; the replacements key them
  by the precision setting too for this backend, and call opt_einsum's own for every other backend. A fold
  that opt_einsum's own lookup makes at the first use is keyed as the replacement keys its own; a step already
  inside opt_einsum's ``shared_intermediates`` memo when the first use happens is kept by opt_einsum's own (the
  replacement takes over from the next one).
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

import numpy as np
import opt_einsum
import torch
from opt_einsum import sharing
from opt_einsum.backends import dispatch
from opt_einsum.contract import ContractExpression
from opt_einsum.parser import convert_interleaved_input
from opt_einsum.sharing import to_backend_cache_wrap

from .. import _device, _dtypes, _precision
from .._helpers import PY_SCALARS, NeuronArray, from_numpy, wrap
from .._precision import Request
from . import paths, runner, slicing
from .api import einsum_operands, einsum_tensors, kept_tensordot, ranks_of, tensordot_tensors
from .compiler import COMPILED, Compiled, cache_key, cacheable, compile
from .front import entry_point
from .parse import parse
from .plan import result_dtype
from .program import Program, build, from_contraction_list, shape_of

__all__ = [
    "einsum",
    "tensordot",
    "transpose",
    "contract",
    "contract_expression",
    "Expression",
    "register",
    "OPT_EINSUM_SERIES",
]


# The opt_einsum release series whose private dispatch module ``register`` writes into.
OPT_EINSUM_SERIES = "3.4"
_OPT_EINSUM_CALL = "opt_einsum.contract(backend='trn')"  # what precision errors name when opt_einsum calls us
_TENSOR = torch.Tensor
# the module opt_einsum.contract (the package's attribute of that name is its function)
_oe_contract = importlib.import_module("opt_einsum.contract")


def to_trn(x: object) -> NeuronArray:
    """A NeuronArray for a NeuronArray, torch tensor (same memory) or NumPy array (default device)."""
    if isinstance(x, NeuronArray):
        return x
    if isinstance(x, torch.Tensor):
        return NeuronArray(x)
    if isinstance(x, (np.ndarray, np.generic)):
        t, device, _ = from_numpy(np.asarray(x), None)  # what asarray(x) does with NumPy data
        return wrap(t if _device.same(t.device, device) else t.to(device))
    raise TypeError(
        f"opt_einsum backend 'trn' got an operand of type {type(x).__name__}; "
        "pass NeuronArray, NumPy or torch arrays, or Python scalars"
    )


def _operands(operands: tuple[object, ...], func: str) -> list[torch.Tensor]:
    """Operands as tensors: arrays through ``to_trn``, Python scalars as weak scalars (``einsum_operands``)."""
    # every step of a network, nothing to convert or check: NeuronArrays only (all() checks that first, which
    # the checker cannot follow; a cast would cost a call per step)
    if all(type(x) is NeuronArray for x in operands) and len({x._t.device for x in operands}) <= 1:  # type: ignore[attr-defined]
        return [x._t for x in operands]  # type: ignore[attr-defined]
    return einsum_operands([x if isinstance(x, PY_SCALARS) else to_trn(x) for x in operands], func)


# --- the functions opt_einsum's loop calls, one step each ---


@entry_point(_OPT_EINSUM_CALL, key="opt_einsum backend: einsum", takes_precision=False)
def einsum(
    request: Request | None,
    subscripts: str,
    *operands: object,
    out: NeuronArray | None = None,
    optimize: object = "auto",
    **kwargs: Any,
) -> NeuronArray:
    """The einsum opt_einsum calls for steps that are not plain tensordots (batched ones, for instance); an
    ``out`` must have the result's shape and a dtype NumPy's einsum could write it to (casting='safe').
    opt_einsum hands it the keywords it does not know itself: a precision choice among them is refused with
    what to write instead (opt_einsum's own tensordot steps refuse it before they reach this backend)."""
    if not _adapted:
        _adapt()
    if kwargs:
        chosen = sorted(set(kwargs) & {"precision", "target_forward_error", "target_relative_error"})
        if chosen:
            raise TypeError(
                f"opt_einsum.contract(backend='trn') takes no {chosen[0]}=: write `with "
                f"trn_backend.precision(...):` around the call, or call trn_backend.contract(..., "
                f"{chosen[0]}=...) with the same arguments"
            )
        raise TypeError(
            f"einsum() of the opt_einsum backend 'trn' got unexpected keyword arguments {', '.join(sorted(kwargs))}"
        )
    ts = _operands(operands, "einsum")
    if out is not None:
        check_out(out, subscripts, ts, "einsum")
    result = einsum_tensors(request, subscripts, ts, optimize, out=None if out is None else out._t.dtype)
    if out is None:
        return wrap(result)
    out[...] = wrap(result)
    return out


@entry_point(_OPT_EINSUM_CALL, key="opt_einsum backend: tensordot", takes_precision=False)
def tensordot(request: Request | None, x: object, y: object, axes: int | tuple[Any, Any] = 2) -> NeuronArray:
    """The tensordot opt_einsum calls, lowered by the planner (see ``trn_backend.tensordot``)."""
    if not _adapted:
        _adapt()
    if type(x) is NeuronArray and type(y) is NeuronArray:
        a, b = x._t, y._t
        kept = kept_tensordot(a, b, axes, request)  # every step of a network
        if kept is not None:
            return wrap(kept)
        if (a.is_cpu and b.is_cpu) or a.device == b.device:  # nothing to convert
            return wrap(tensordot_tensors(request, a, b, axes))
    a, b = _operands((x, y), "tensordot")
    return wrap(tensordot_tensors(request, a, b, axes))


def transpose(x: object, axes: tuple[int, ...]) -> NeuronArray:
    """A permuted view (no copy)."""
    if not _adapted:
        _adapt()
    return wrap(to_trn(x)._t.permute(tuple(axes)))


def check_out(out: object, subscripts: object, ts: list[torch.Tensor], func: str) -> None:
    """``out=`` of a contraction: a NeuronArray of the result's shape, on its device, of a dtype NumPy's einsum
    would write the result to (casting='safe'); anything else is refused before any work is done."""
    if not isinstance(out, NeuronArray):
        raise TypeError(f"{func}(): out= must be a NeuronArray, got {type(out).__name__}")
    if isinstance(subscripts, str):
        spec = parse(subscripts, tuple(tuple(t.shape) for t in ts), func)
        shape = shape_of(spec.output, list(zip(spec.inputs, (tuple(t.shape) for t in ts), strict=True)))
        if out.shape != shape:
            raise ValueError(
                f"{func}(): out= has shape {out.shape}, but the result of {subscripts!r} has shape {shape}"
            )
    dtype = result_dtype(tuple(t.dtype for t in ts), func)
    if not np.can_cast(_dtypes.PUBLIC[dtype], out.dtype, casting="safe"):
        raise TypeError(
            f"{func}(): cannot write the {_dtypes.name(dtype)} result into out= of dtype "
            f"{_dtypes.name(out.dtype)} (NumPy's einsum casting='safe' rule)"
        )
    if ts and out.device != ts[0].device:
        raise ValueError(f"{func}(): out= is on {out.device}, the operands on {ts[0].device}")


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
    if _adapted:
        return expr(*(_to_trn_shared(x) for x in const_arrays), backend="trn", evaluate_constants=True)
    # The first use of "trn": opt_einsum's own lookup is making this fold, before the replacement that keys folds
    # by the precision setting is in place. The fold is keyed here as the replacement keys its own, so the next
    # call under the same setting reuses it (and one under another setting folds again).
    _adapt()
    with _precision.captured_checks() as checks:
        result = expr(*(_to_trn_shared(x) for x in const_arrays), backend="trn", evaluate_constants=True)
    folds = expr.__dict__.setdefault("_trn_folds", {})
    for name in _NAMES:
        folds[(name, _precision.active_setting())] = (result[0], tuple(checks))
    return result


# --- opt_einsum's caches, keyed by the precision setting (see the module docstring) ---

_NAMES = ("trn", "trn_backend")
_CONTRACTIONS = ("tensordot", "einsum")
_opt_einsum_memoize = sharing._memoize
_opt_einsum_constants = ContractExpression._get_evaluated_constants
_opt_einsum_core_contract = _oe_contract._core_contract
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


def _core_contract(
    operands_: Any,
    contraction_list: Any,
    backend: str | None = "auto",
    evaluate_constants: bool = False,
    out: Any = None,
    **kwargs: Any,
) -> Any:
    """opt_einsum's contraction loop (``opt_einsum.contract._core_contract``, what ``opt_einsum.contract`` and a
    ``ContractExpression`` call): for this backend, where running the whole contraction list as one program on
    the runner is the same arithmetic as the loop's calls (``_as_one_program``), that program; every other call
    is opt_einsum's own loop."""
    plain = not (evaluate_constants or out is not None or kwargs)
    if plain and _oe_contract.parse_backend(operands_, backend) in _NAMES:
        result = _as_one_program(operands_, contraction_list)
        if result is not None:
            return result
    return _opt_einsum_core_contract(
        operands_, contraction_list, backend=backend, evaluate_constants=evaluate_constants, out=out, **kwargs
    )


def _as_one_program(operands: Any, contraction_list: Any) -> NeuronArray | None:
    """The contraction list run as one program (``program.from_contraction_list``), or None where that would not
    be what opt_einsum's loop computes: its calls here are each a one-step program under the precision block's
    request, computing in their operands' promotion, so the program must have one dtype (no cast a call would
    not make), a mode or the device default (a target is each call's own, not the whole's), no step of three or
    more operands (the loop's einsum would pick its own path for them), plain NeuronArrays on one device, and no
    ``shared_intermediates`` block (its memo keeps each call's result). Each step of the program is then the
    loop's call, planned alike, and its result is the loop's (``tests/contraction/test_opt_einsum_backend.py``
    compares them bit for bit); the program skips the loop's Python per step and checks a complex product's inf
    and nan once (``runner.partial``)."""
    request = _precision.active_setting()
    if (request is not None and request.mode is None) or sharing.currently_sharing():
        return None
    ts = []
    for x in operands:
        if type(x) is not NeuronArray:
            return None
        ts.append(x._t)
    first = ts[0]
    for t in ts:
        if type(t) is not _TENSOR or t.dtype is not first.dtype or t.device != first.device:
            return None
    steps = _steps_key(contraction_list)
    if steps is None:
        return None
    shapes = tuple(tuple(t.shape) for t in ts)
    key = ("opt_einsum loop", steps, shapes, first.dtype, first.device, request)
    c = COMPILED.get(key)
    try:
        if c is None:
            program = from_contraction_list(contraction_list, _spec(contraction_list, shapes), shapes)
            c = COMPILED.put(key, compile(program, request, tuple(t.dtype for t in ts), first.device))
        return wrap(runner.run(c, ts))
    except _precision.PrecisionError as e:
        raise e.named(_OPT_EINSUM_CALL) from e.__cause__


_STEPS_KEYS: dict[int, tuple[Any, tuple | None]] = {}  # id of a contraction list -> (the list, its steps' key)


def _steps_key(contraction_list: Any) -> tuple | None:
    """What a contraction list's program depends on (each step's operand positions, removed indices, einsum
    string and tensordot flag), found by the list's identity for an expression's repeated calls; None where a
    step takes three or more operands."""
    found = _STEPS_KEYS.get(id(contraction_list))
    if found is not None and found[0] is contraction_list:  # the list is held here, so its id is its own
        return found[1]
    key: tuple | None = tuple(
        (tuple(inds), frozenset(removed), einsum_str, blas) for inds, removed, einsum_str, _, blas in contraction_list
    )
    if any(len(step[0]) > 2 for step in key):  # type: ignore[union-attr]
        key = None
    if len(_STEPS_KEYS) >= 256:
        _STEPS_KEYS.clear()
    _STEPS_KEYS[id(contraction_list)] = (contraction_list, key)
    return key


def _spec(contraction_list: Any, shapes: tuple[tuple[int, ...], ...]) -> Any:
    """The whole contraction's labels, read off the list: each operand's term where a step takes it, and the
    last step's output."""
    terms: list[str | None] = [None] * len(shapes)
    live: list[int | None] = list(range(len(shapes)))  # the loop's operand list: an operand's number, or None
    output = ""
    for inds, _, einsum_str, _, _ in contraction_list:
        inputs, output = einsum_str.split("->")
        for x, term in zip(inds, inputs.split(","), strict=True):
            i = live.pop(x)
            if i is not None:
                terms[i] = term
        live.append(None)
    return parse(",".join(t or "" for t in terms) + "->" + output, shapes, _OPT_EINSUM_CALL)


def register() -> None:
    """Make ``backend="trn"`` (and ``"auto"`` on NeuronArrays) reach this module: additions to opt_einsum's
    dispatch tables only (see the module docstring)."""
    for name in _NAMES:
        dispatch._aliases[name] = __name__
    dispatch.CONVERT_BACKENDS["trn"] = build_expression
    dispatch.EVAL_CONSTS_BACKENDS["trn"] = evaluate_constants


def _adapt() -> None:
    """The first use of backend "trn" by opt_einsum's loop: opt_einsum's two caches keyed by the precision setting
    for it, and its loop run as one program where that is the same arithmetic (the only place opt_einsum's
    internals are replaced; see the module docstring)."""
    global _adapted
    sharing._memoize = _memoize
    ContractExpression._get_evaluated_constants = _evaluated_constants
    # a module found by name (the package's own attribute "contract" is the function): the checker sees no attributes
    _oe_contract._core_contract = _core_contract  # type: ignore[attr-defined]
    _adapted = True


# --- trn_backend.contract and contract_expression: opt_einsum's path, one program ---

_CONTRACT_KEYWORDS = frozenset({"optimize", "memory_limit", "out", "use_blas", "progress"})


@entry_point("contract()")
def contract(request: Request | None, subscripts: Any, *operands: Any, **kwargs: Any) -> NeuronArray:
    """``opt_einsum.contract(subscripts, *operands, **kwargs)`` run here as one program: opt_einsum's path
    (``optimize=``; ``use_blas=`` is taken and changes nothing: every step is planned for the kernels), ``out=``
    (NumPy's einsum casting='safe' rule), ``memory_limit=`` (a number of elements or "max_input": sliced with
    cotengra so that no intermediate exceeds it; None: no limit) with ``progress=``; under ``precision=`` or a
    target for the whole expression (with target_relative_error=, ``trn_backend.last_precision_report()`` then
    tells the modes run)."""
    if "backend" in kwargs:
        raise TypeError("trn_backend.contract() always uses backend='trn'; call opt_einsum.contract for others")
    unknown = sorted(set(kwargs) - _CONTRACT_KEYWORDS)
    if unknown:
        raise TypeError(
            f"contract() got unexpected keyword arguments {', '.join(unknown)}; it takes "
            f"{', '.join(sorted(_CONTRACT_KEYWORDS))} and precision=, target_forward_error=, "
            "target_relative_error="
        )
    if not isinstance(subscripts, str):
        subscripts, operands = convert_interleaved_input((subscripts, *operands))
    ts = _operands(operands, "contract")
    out = kwargs.get("out")
    if out is not None:
        check_out(out, subscripts, ts, "contract")
    out_dtype = None if out is None else out._t.dtype
    if kwargs.get("memory_limit") is not None:
        result = slicing.contract(
            request,
            subscripts,
            ts,
            memory_limit=kwargs["memory_limit"],
            optimize=kwargs.get("optimize", "auto"),
            progress=kwargs.get("progress"),
            out=out_dtype,
        )
    else:
        if kwargs.get("progress"):
            raise TypeError("contract(): progress= goes with memory_limit= (a sliced contraction)")
        shapes = tuple(tuple(t.shape) for t in ts)
        optimize, use_blas = kwargs.get("optimize", "auto"), kwargs.get("use_blas", True)
        device = ts[0].device if ts else _device.default_device()
        dtypes, ranks = tuple(t.dtype for t in ts), ranks_of(ts)
        key = None
        if (
            cacheable(request)
            and ranks == 1
            and (optimize is False or paths.check_optimize(optimize, "contract") is not None)
        ):
            key = (
                "contract",
                subscripts,
                shapes,
                dtypes,
                device,
                optimize if optimize is False else paths.check_optimize(optimize, "contract"),
                bool(use_blas),
                out_dtype,
                cache_key(request),
            )
        c = COMPILED.get(key) if key is not None else None
        if c is None:
            c = compile(
                _opt_einsum_program(subscripts, shapes, optimize, use_blas),
                request,
                dtypes,
                device,
                out=out_dtype,
                ranks=ranks,
            )
            if key is not None:
                COMPILED.put(key, c)
        result = runner.run(c, ts)
    if out is None:
        return wrap(result)
    out[...] = wrap(result)
    return out


def _opt_einsum_program(
    subscripts: str, shapes: tuple[tuple[int, ...], ...], optimize: object, use_blas: bool
) -> Program:
    """The program of opt_einsum's contraction list for this contraction (cached by hashable arguments)."""
    key = paths.check_optimize(optimize, "contract") if optimize is not False else False
    if key is None:  # an optimizer object keeps state: no cache
        return _contraction_list_program(subscripts, shapes, optimize, use_blas)
    return _cached_program(subscripts, shapes, key, bool(use_blas))


@functools.lru_cache(maxsize=1024)
def _cached_program(subscripts: str, shapes: tuple[tuple[int, ...], ...], optimize: object, use_blas: bool) -> Program:
    return _contraction_list_program(
        subscripts, shapes, list(optimize) if isinstance(optimize, tuple) else optimize, use_blas
    )


def _contraction_list_program(
    subscripts: str, shapes: tuple[tuple[int, ...], ...], optimize: object, use_blas: bool
) -> Program:
    """The program along the path of opt_einsum's contraction list (``program.build``): each intermediate in the
    order its kernel produces it, as cotengra keeps them, where opt_einsum's loop transposes some into its
    einsum order. The later steps copy as many elements either way (counted with torch's profiler), but from
    strides that read faster on most networks measured (benchmarks/bench_families.py --heldout: a 3-D lattice
    of 64 tensors 1.4x cotengra's time on torch before, 1.03x after; one of 48, 0.88x before, 0.91x after).
    ``use_blas`` changes opt_einsum's flags, not its path: every step is planned for the kernels either way."""
    spec = parse(subscripts, shapes, "contract")
    if optimize is False:  # opt_einsum's "no optimization": left to right, through the planner
        return paths.program(spec, shapes, False)
    _, contraction_list = opt_einsum.contract_path(
        subscripts, *shapes, shapes=True, optimize=optimize, use_blas=use_blas, einsum_call=True
    )
    return build(spec, shapes, [step[0] for step in contraction_list])


class Expression:
    """An opt_einsum ContractExpression run here: opt_einsum's path as one program on the runner, under the
    precision chosen when it was made (else the one in force at each call).

    Called on NeuronArrays, NumPy arrays (the result converted back to NumPy) or torch tensors, with ``out=``
    (the final rounding into it), inside ``opt_einsum.shared_intermediates`` (steps shared with the block's
    other contractions), with ``constants=`` (every step that depends on constants only, folded once per
    precision request and dtypes: its roundings are the expression's, counted in its bound).
    """

    def __init__(
        self,
        expression: ContractExpression,
        subscripts: str,
        constants: dict[int, NeuronArray],
        request: Request | None,
    ) -> None:
        self.expression = expression
        self.subscripts = subscripts
        self.constants = constants
        self.request = request
        self._programs: dict[tuple, Program] = {}
        self._compiled_programs: dict[tuple, Compiled] = {}
        self._folds: dict[tuple, runner.Folded] = {}

    def __call__(self, *arrays: Any, out: Any = None) -> Any:
        return _evaluate(self, arrays, out)

    def _program(self, shapes: tuple[tuple[int, ...], ...]) -> Program:
        """The program for operands of these shapes (made on first use)."""
        found = self._programs.get(shapes)
        if found is None:
            if len(self._programs) >= 64:
                self._programs.clear()
            spec = parse(self.subscripts, shapes, "contract_expression")
            path = [step[0] for step in self.expression._full_contraction_list]
            found = self._programs[shapes] = build(spec, shapes, path)
        return found

    def _compiled(
        self,
        shapes: tuple[tuple[int, ...], ...],
        request: Request | None,
        dtypes: tuple[torch.dtype, ...],
        device: torch.device,
        out: torch.dtype | None,
        ranks: int,
    ) -> Compiled:
        """The program compiled for this call: kept (``cacheable``) per shapes, dtypes, device, out dtype and
        request (``cache_key``); compiled per call under a relative target."""
        if not cacheable(request) or ranks > 1:
            return compile(self._program(shapes), request, dtypes, device, out=out, ranks=ranks)
        key = (shapes, dtypes, device, out, cache_key(request))
        found = self._compiled_programs.get(key)
        if found is None:
            if len(self._compiled_programs) >= 64:
                self._compiled_programs.clear()
            found = self._compiled_programs[key] = compile(self._program(shapes), request, dtypes, device, out=out)
        return found

    def _folded(self, c: Compiled, tensors: list[torch.Tensor | None]) -> runner.Folded:
        """The steps of ``c`` that depend on the constants only, computed once per compiled program."""
        key = (c.program, c.request, c.dtypes, c.device)
        found = self._folds.get(key)
        if found is None:
            if len(self._folds) >= 16:
                self._folds.clear()
            found = self._folds[key] = runner.fold(c, tensors)
        return found

    def __repr__(self) -> str:
        return f"trn_backend.{self.expression!r}"

    def __str__(self) -> str:
        return str(self.expression)


@entry_point("contract_expression(...)()", takes_precision=False)
def _evaluate(request: Request | None, expression: Expression, arrays: tuple[Any, ...], out: Any) -> Any:
    """One call of ``expression`` (see ``Expression``): the request it was made with, else the one in force."""
    own = expression.request
    if own is not None:
        with _precision.reporting(own):
            return _run_expression(own, expression, arrays, out)
    return _run_expression(request, expression, arrays, out)


def _run_expression(request: Request | None, expression: Expression, arrays: tuple[Any, ...], out: Any) -> Any:
    if expression.expression.kwargs:  # einsum keywords (order=...) that opt_einsum would hand to the backend
        raise TypeError(
            f"contract_expression() got einsum keyword arguments the trn backend does not take: "
            f"{', '.join(sorted(expression.expression.kwargs))}"
        )
    n = expression.expression.num_args
    if len(arrays) != n:
        raise ValueError(f"This `ContractExpression` takes exactly {n} array arguments but received {len(arrays)}.")
    numpy_in = bool(arrays) and all(isinstance(x, np.ndarray) for x in arrays)
    given = iter([x._t for x in (_to_trn_shared(x) for x in arrays)])
    total = expression.expression._full_num_args
    constants = expression.constants
    full = [constants[i]._t if i in constants else next(given) for i in range(total)]
    shapes = tuple(tuple(t.shape) for t in full)
    devices = {t.device for t in full}
    if len(devices) > 1:
        raise ValueError(
            f"contract_expression(...)(): the operands are on different devices, {', '.join(map(str, devices))}"
        )
    out_dtype = out._t.dtype if isinstance(out, NeuronArray) else None
    c = expression._compiled(shapes, request, tuple(t.dtype for t in full), full[0].device, out_dtype, ranks_of(full))
    if constants and c.relative is None:
        folded = expression._folded(c, [t if i in constants else None for i, t in enumerate(full)])
        result = runner.run(c, [None if i in constants else t for i, t in enumerate(full)], preset=folded)
    else:
        result = runner.run(c, full)
    if isinstance(out, NeuronArray):
        out[...] = wrap(result)
        return out
    if out is not None:  # a NumPy out=, as opt_einsum's conversion writes it
        out[()] = np.asarray(wrap(result))
        return out
    return np.asarray(wrap(result)) if numpy_in else wrap(result)


def contract_expression(
    subscripts: Any,
    *shapes: Any,
    precision: str | None = None,
    target_forward_error: float | None = None,
    target_relative_error: float | None = None,
    **kwargs: Any,
) -> Expression:
    """``opt_einsum.contract_expression`` (shapes, ``constants=``, ``optimize=``...) run by this package: the
    expression's path as one program, under ``precision=`` or a target given here for every call (else the
    precision in force at each call)."""
    request = _precision.request_of(precision, target_forward_error, target_relative_error, "contract_expression()")
    if precision is None and target_forward_error is None and target_relative_error is None:
        request = None  # the request in force at each call
    if not isinstance(subscripts, str):
        subscripts, shapes = convert_interleaved_input((subscripts, *shapes))
    constants = {i: to_trn(shapes[i]) for i in kwargs.get("constants") or ()}
    return Expression(opt_einsum.contract_expression(subscripts, *shapes, **kwargs), subscripts, constants, request)
