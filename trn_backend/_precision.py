"""Precision modes: the registry, the active-mode context, and resolution of a mode for one contraction.

Every kernel mode is registered here with its algorithm, its cost in bf16 Tensor Engine passes and its error bound:
``bound(dtype, K)`` is componentwise, in units of |A||B|, for K contracted terms, and includes the rounding of the
result to ``dtype`` (the formulas: ``kernels/bounds.py``; derivations and measurements: docs/precision.md).
``resolve`` picks the mode of one binary contraction: an explicit ``precision=`` or ``target_forward_error=``, else
the innermost ``precision(...)`` block, else the device default (native on CPU and CUDA, fast on Neuron). A target
picks, among the modes whose bound meets it, the cheapest on the step's device (``_mode_costs``: a calibration table
on CPU and CUDA, the trn2 cost model on Neuron, pass counts elsewhere). Under ``target_relative_error=`` it picks
the mode to start from; the contraction layer checks the result a posteriori, escalates along ``next_mode`` (the
cheapest mode with a smaller bound), and records each step here (``last_precision_report``).
"""

from __future__ import annotations

import ast
import contextlib
import contextvars
import dataclasses
import functools
import operator
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

import torch

from . import _device, _dtypes, kernels
from .errors import PrecisionError
from .kernels import bounds, reference

# the bounds this registry publishes under its own names (their mathematics: kernels/bounds.py)
from .kernels.bounds import U_BF16, U_FP32, U_FP64, compose, gamma, share, split_representation, sum_bound  # noqa: F401


@dataclasses.dataclass(frozen=True)
class Resolved:
    """The mode one binary contraction runs under: kernel mode name, its parameters, and its error bound
    (componentwise, in units of |A||B|; None where no bound is published); under target_relative_error=,
    also the relative target its result is checked against a posteriori (the mode is where it starts)."""

    mode: str
    params: tuple[tuple[str, object], ...] = ()
    bound: float | None = None
    target_relative_error: float | None = None

    @property
    def kwargs(self) -> dict[str, Any]:
        """The parameters as the keyword arguments of a kernel call (each mode's own types)."""
        return dict(self.params)

    @property
    def label(self) -> str:
        """The mode with its parameters, as a user would write it: ``ozaki(slices=6)``."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.params)
        return f"{self.mode}({args})" if args else self.mode


@dataclasses.dataclass(frozen=True)
class Mode:
    """One registered precision mode: what it computes, what it costs, and how wrong it can be."""

    name: str
    algorithm: str
    kernel: str  # its implementation: kernels.reference.MODES[kernel]
    passes: Callable[[int], int | None]  # bf16 Tensor Engine passes, given the ozaki slice count (reference.PASSES)
    bound: Callable[..., float | None]  # bound(real dtype, K, **params) in units of |A||B|, K >= 1
    params: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    float64_working: bool = False  # computes in float64 and rounds the result to the output dtype once
    # certifies its bound on the data it is given (the split modes' underflow, ozaki's slice count), and raises
    # PrecisionError where it cannot: a refusal that depends on the data
    refuses: bool = False


# --- bounds: kernels/bounds.py (derivations in docs/precision.md) ---

MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode(
            "native",
            "the operand dtype and the device's own arithmetic",
            "native",
            reference.PASSES["native"],
            bounds.native_bound,
        ),
        Mode(
            "fast",
            "inputs rounded to bf16, one pass, fp32 accumulation",
            "fast",
            reference.PASSES["fast"],
            bounds.fast_bound,
            refuses=True,
        ),
        Mode(
            "sr",
            "fast, with stochastic rounding of a bf16/fp16 result (unbiased, seedable)",
            "sr",
            reference.PASSES["sr"],
            bounds.sr_bound,
            params=("generator",),
            refuses=True,
        ),
        Mode(
            "dd",
            "2-word bf16 split, 3 products (hi*hi, hi*lo, lo*hi), fp32 accumulation",
            "dd",
            reference.PASSES["dd"],
            bounds.dd_bound,
            refuses=True,
        ),
        Mode(
            "bf16x6",
            f"3-word bf16 split, 6 products, PSUM chunks of {bounds.BF16X6_CHUNK} of K added "
            f"{bounds.BF16X6_GROUP} at a time, then by TwoSum",
            "bf16x6",
            reference.PASSES["bf16x6"],
            bounds.bf16x6_bound,
            refuses=True,
        ),
        Mode(
            "ozaki",
            "Ozaki-I: 2**e-scaled 8-bit digit slices, exact fp32 sums per K-chunk, float64 combine",
            "ozaki",
            reference.PASSES["ozaki"],
            bounds.ozaki_bound,
            params=("slices",),
            float64_working=True,
            refuses=True,
        ),
        Mode(
            "fp64",
            "promotion to float64 on the host, rounded to the output dtype",
            "fp64",
            reference.PASSES["fp64"],
            bounds.fp64_bound,
            float64_working=True,
        ),
    )
}
ALIASES = {alias: m.name for m in MODES.values() for alias in m.aliases}
# The modes a target may pick, ranked by their cost on the step's device (``_ranking``); this order breaks ties.
# sr never appears: its stochastic rounding removes bias but does not shrink the error bound. native joins
# wherever its bound is honest: not for bf16/fp16 (no bound), not under TF32 or bf16 GEMMs (``_native_ok``), and
# not on Neuron until the precision of fp32 nc_matmul is measured on the hardware.
LADDER = ("native", "fast", "dd", "bf16x6", "ozaki", "fp64")
# The precision of fp32 nc_matmul (and PSUM's accumulation of it) is not documented: check-neuron measures it on
# the device (docs/trainium.md, "What is verified where": the hardware row, not yet run). Until it confirms
# native's bound gamma_K(u_fp32), targets never pick native on Neuron; set True once it has.
NEURON_FP32_MATMUL_VERIFIED = False
# select_precision without a size, and resolve without bmkn=, rank the modes at M = N = this (the calibration's)
DEFAULT_MN = 1024


@functools.lru_cache(maxsize=4096)
def _bound(name: str, dtype: torch.dtype, K: int, slices: int | None) -> float | None:
    if not (dtype.is_floating_point or dtype.is_complex):
        return None  # integer and bool products are exact (modular) in native arithmetic
    if K == 0:
        return 0.0  # an empty sum is exactly zero
    kwargs = {} if slices is None else {"slices": slices}
    if not dtype.is_complex:
        return MODES[name].bound(dtype, K, **kwargs)
    real = dtype.to_real()
    if name == "native":
        return bounds.complex_native(real, K)
    if name == "fp64":
        return bounds.complex_fp64(real, K)
    # only native lacks a bound (on bf16 and fp16), and native took its own branch above
    return bounds.complex_of_real(cast(float, MODES[name].bound(real, K, **kwargs)), real)


# --- argument checks ---

# A mode as explain() and Resolved.label spell it: a name or alias, optionally with parameters, ``ozaki(slices=5)``
_SPELLING = re.compile(r"\s*([A-Za-z_]\w*)\s*(?:\((.*)\))?\s*")


def _spellings() -> str:
    """The valid spellings of the registered modes, for error messages."""
    parts = []
    for n, m in MODES.items():
        parts.append(f"{n} (alias {', '.join(m.aliases)})" if m.aliases else n)
        if "slices" in m.params:
            parts.append(f"{n}(slices=N) with N in 1..{bounds.MAX_SLICES}")
    return ", ".join(parts)


def _mode(mode: object, params: dict[str, Any], func: str) -> tuple[str, tuple[tuple[str, object], ...]]:
    """The registered name and the checked parameters of a mode given as a name or alias (``"dd"``, ``"fp64"``)
    or as explain() prints it (``"ozaki(slices=5)"``), with the keyword ``params`` of the call: the one parser of
    mode spellings. An unknown or malformed spelling is a ValueError listing the valid ones."""
    if not isinstance(mode, str):
        raise TypeError(f"{func}: a precision mode is a string such as 'dd', got {type(mode).__name__}")
    match = _SPELLING.fullmatch(mode)
    if match is not None and match[1] in reference.RENAMED:  # a former name: warns, runs the mode
        name: str | None = reference.renamed(match[1], func)
    else:
        name = match and ALIASES.get(match[1], match[1])
    if match is None or name not in MODES:  # (no match leaves name None, which is not in MODES)
        what = "unknown precision mode" if match else "malformed precision mode"
        raise ValueError(f"{func}: {what} {mode!r}; known: {_spellings()}")
    spelled: dict[str, Any] = {}
    try:
        for item in filter(str.strip, (match[2] or "").split(",")):
            key, eq, text = (part.strip() for part in item.partition("="))
            if not eq or not key.isidentifier() or key in spelled:
                raise ValueError(f"expected key=value, each key once, got {item.strip()!r}")
            try:
                spelled[key] = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                raise ValueError(f"{text!r} is not a Python literal") from None
        _check_params(name, spelled, "parameter")
    except (ValueError, TypeError) as e:
        raise ValueError(f"{func}: malformed precision mode {mode!r} ({e}); known: {_spellings()}") from None
    for key in spelled.keys() & params.keys():
        raise TypeError(f"{func}: {key} given twice, in the mode {mode!r} and as a keyword")
    return name, _check_params(name, {**spelled, **params}, func)


def _check_params(name: str, params: dict[str, Any], func: str) -> tuple[tuple[str, object], ...]:
    for key, value in params.items():
        if key not in MODES[name].params:
            takes = f"; it takes {', '.join(MODES[name].params)}" if MODES[name].params else ""
            raise TypeError(f"{func}: mode {name!r} takes no parameter {key!r}{takes}")
        if key == "slices" and (not isinstance(value, int) or isinstance(value, bool)):
            raise TypeError(f"{func}: slices must be an int, got {type(value).__name__}")
        if key == "slices" and not 1 <= value <= bounds.MAX_SLICES:
            raise ValueError(f"{func}: slices must be in 1..{bounds.MAX_SLICES}, got {value}")
        if key == "generator" and not isinstance(value, torch.Generator | None):
            raise TypeError(f"{func}: generator must be a torch.Generator, got {type(value).__name__}")
    return tuple(sorted(params.items()))


def _check_target(target: object, func: str, name: str = "target_forward_error") -> float:
    if isinstance(target, bool) or not isinstance(target, int | float):
        raise TypeError(f"{func}: {name} must be a real number, got {type(target).__name__}")
    if not target > 0:
        raise ValueError(f"{func}: {name} must be positive, got {target!r}")
    return float(target)


def _check_problem(dtype: object, K: object, func: str) -> tuple[torch.dtype, int]:
    """The dtype (any spelling: trn_backend.float32, np.float32, torch.float32) as the torch dtype, and K."""
    try:
        dtype = _dtypes.to_dtype(dtype, func)
    except TypeError:
        raise TypeError(f"{func}: dtype must be a dtype such as trn_backend.float32, got {dtype!r}") from None
    try:
        k = operator.index(K)  # type: ignore[arg-type]  # any object: what has no __index__ raises TypeError
    except TypeError:
        raise TypeError(f"{func}: K must be an int, got {type(K).__name__}") from None
    if isinstance(K, bool) or k < 0:
        raise ValueError(f"{func}: K must be a non-negative int, got {K!r}")
    return dtype, k


# --- the precision request: contextvars make the active one per thread and per asyncio task, and nestable ---


@dataclasses.dataclass(frozen=True, eq=False)
class Request:
    """What one contraction call asks of its precision: a mode with its parameters, or a forward or a relative
    target, as the caller wrote it (per call, else the innermost ``precision`` block). ``None`` in its place means
    the device default. Requests are interned (``request``): equal requests are the same object, so caches key by
    them at the cost of an identity hash."""

    mode: str | None
    params: tuple[tuple[str, object], ...]
    target: float | None
    relative: float | None = None

    @property
    def is_target(self) -> bool:
        return self.mode is None


_REQUESTS: dict[tuple, Request] = {}


def request(
    mode: str | None, params: tuple[tuple[str, object], ...], target: float | None, relative: float | None = None
) -> Request:
    """The one Request of these fields (bounded: a program that makes endless distinct requests starts over)."""
    key = (mode, params, target, relative)
    found = _REQUESTS.get(key)
    if found is None:
        if len(_REQUESTS) >= 4096:
            _REQUESTS.clear()
        found = _REQUESTS[key] = Request(mode, params, target, relative)
    return found


@dataclasses.dataclass(frozen=True)
class Check:
    """One contraction run under target_relative_error= (a binary step, or an expression of several rounding
    steps checked as a whole): each mode tried, in order, with its a posteriori bound on ``max |C^ - C| / |C|``; the
    last one produced the result (or missed, and raised). ``last_precision_report()`` returns these."""

    #: the contraction checked (a step's subscripts, or the whole expression's)
    subscripts: str
    #: its contracted length (the product of the summed axes' sizes)
    K: int
    #: the target_relative_error= it had to meet
    target: float
    #: each mode tried, in order: (its label, e.g. ``ozaki(slices=4)``, its a posteriori bound)
    tried: tuple[tuple[str, float], ...]

    @property
    def mode(self) -> str:
        """The label of the last mode run, e.g. ``ozaki(slices=4)``."""
        return self.tried[-1][0]

    @property
    def estimate(self) -> float:
        """The a posteriori bound of the last mode run, on ``max |C^ - C| / |C|``."""
        return self.tried[-1][1]

    @property
    def met(self) -> bool:
        """Whether the last mode's bound meets the target: False only in the report of a call that raised
        PrecisionError."""
        return self.estimate <= self.target


_ACTIVE: contextvars.ContextVar[Request | None] = contextvars.ContextVar("trn_precision", default=None)
# the checks of the innermost target_relative_error= scope, and of the last one to finish
_REPORT: contextvars.ContextVar[list[Check] | None] = contextvars.ContextVar("trn_precision_report", default=None)
_LAST: contextvars.ContextVar[list[Check] | None] = contextvars.ContextVar("trn_precision_last", default=None)


def _setting(
    mode: object, target: object, params: dict[str, Any], func: str, relative: object = None
) -> Request | None:
    if sum(x is not None for x in (mode, target, relative)) > 1:
        raise ValueError(
            f"{func}: give a precision mode or one target (target_forward_error= or target_relative_error=), not both"
        )
    if mode is not None:
        return request(*_mode(mode, params, func), None)
    if params:
        raise TypeError(f"{func}: parameters {', '.join(params)} need a mode: precision('ozaki', slices=5)")
    if relative is not None:
        return request(None, (), None, _check_target(relative, func, "target_relative_error"))
    return None if target is None else request(None, (), _check_target(target, func))


@contextlib.contextmanager
def _activate(request: Request) -> Iterator[list[Check] | None]:
    token = _ACTIVE.set(request)
    report: list[Check] | None = None if request.relative is None else []
    report_token = None if report is None else _REPORT.set(report)
    try:
        yield report
    finally:
        if report_token is not None:
            _REPORT.reset(report_token)
            _LAST.set(report)
        _ACTIVE.reset(token)


def precision(
    mode: str | None = None,
    *,
    target_forward_error: float | None = None,
    target_relative_error: float | None = None,
    **params: Any,
) -> contextlib.AbstractContextManager[list[Check] | None]:
    """``with precision("dd"):`` or ``with precision(target_forward_error=1e-6):`` sets how contractions in
    the block (this thread or asyncio task only) are computed; nested blocks override, no argument inherits.
    Mode parameters go by keyword: ``precision("ozaki", slices=5)``, ``precision("sr", generator=g)``.
    ``with precision(target_relative_error=1e-6) as report:`` checks each result a posteriori; ``report``
    collects a ``Check`` per checked contraction."""
    request = _setting(mode, target_forward_error, params, "precision", target_relative_error)
    return contextlib.nullcontext() if request is None else _activate(request)


def request_of(mode: object, target_forward_error: object, target_relative_error: object, func: str) -> Request | None:
    """The request of a call with these per-call arguments (checked here, so errors name ``func``): its own
    choice where it makes one (which replaces the innermost block's entirely), else the block's; None for the
    device default."""
    if mode is None and target_forward_error is None and target_relative_error is None:
        return _ACTIVE.get()
    # the same arguments make the same request: kept by their types and values (True and 1 hash alike but are
    # not the same argument), so a repeated call skips the checks; a refusal is not kept (it names ``func``)
    key: tuple[object, ...] | None  # None: an unhashable argument
    key = (
        mode.__class__,
        mode,
        target_forward_error.__class__,
        target_forward_error,
        target_relative_error.__class__,
        target_relative_error,
    )
    try:
        found = _CALL_REQUESTS.get(key, _UNSEEN)
    except TypeError:  # an unhashable argument: checked (and refused) below
        found = key = None
    if found is not _UNSEEN and key is not None:
        return found  # type: ignore[return-value]  # not the _UNSEEN sentinel: a value of _CALL_REQUESTS
    made = _setting(mode, target_forward_error, {}, func, target_relative_error)
    if key is not None:
        if len(_CALL_REQUESTS) >= 4096:
            _CALL_REQUESTS.clear()
        _CALL_REQUESTS[key] = made
    return made


_CALL_REQUESTS: dict[tuple, Request | None] = {}
_UNSEEN = object()


def reporting(request: Request | None) -> contextlib.AbstractContextManager[list[Check] | None]:
    """Around a call that makes its own choice: where that is a relative target, a scope whose report is the
    call's (what ``last_precision_report`` returns after it)."""
    if request is None or request.relative is None:
        return contextlib.nullcontext()
    return _activate(request)


def record(check: Check) -> None:
    """Add ``check`` to the report of the innermost target_relative_error= scope."""
    report = _REPORT.get()
    if report is not None:
        report.append(check)


# active_setting(): the precision request in force (None for the device default): what a cache of contraction
# results must key them by, since the same operands give different results under different modes. The context
# variable's own ``get``, bound: every contraction call asks, and a call of it costs no Python frame.
active_setting: Callable[[], Request | None] = _ACTIVE.get


@contextlib.contextmanager
def captured_checks() -> Iterator[list[Check]]:
    """The checks recorded inside the block, which still reach the enclosing report: a cache stores them beside
    its result and ``replay``s them when it reuses it, so every report lists every step it depends on."""
    outer = _REPORT.get()
    inner: list[Check] = []
    token = _REPORT.set(None if outer is None else inner)
    try:
        yield inner
    finally:
        _REPORT.reset(token)
        if outer is not None:
            outer.extend(inner)


def replay(checks: Iterable[Check]) -> None:
    """Record again the checks of a cached result that is reused (see ``captured_checks``)."""
    for check in checks:
        record(check)


def last_precision_report() -> list[Check] | None:
    """The checks of the last call or ``precision`` block with target_relative_error= to finish in this
    thread or asyncio task (one ``Check`` per binary contraction, in order); None if there was none."""
    return _LAST.get()


# --- resolution ---


@functools.lru_cache(maxsize=4096)
def _resolved(
    name: str, params: tuple[tuple[str, object], ...], dtype: torch.dtype, K: int, values: torch.dtype | None = None
) -> Resolved:
    """``name`` with ``params`` on ``dtype`` data, its bound for K; ``values``: the dtype the result is finally
    rounded to where the step computes in a wider one (ozaki's default slice count is that dtype's)."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return Resolved("native")  # integer and bool contractions are exact: no mode to choose
    kwargs = dict(params)
    if name == "ozaki" and "slices" not in kwargs:
        held = values if values is not None and (values.is_floating_point or values.is_complex) else dtype
        kwargs["slices"] = bounds.ozaki_default_slices(held.to_real() if held.is_complex else held)
    return Resolved(name, tuple(sorted(kwargs.items())), _bound(name, dtype, K, kwargs.get("slices")))


def _ladder() -> Iterator[tuple[str, tuple[tuple[str, int], ...]]]:
    """Every (mode, params) a target may pick, in LADDER order (ozaki by slice count)."""
    for name in LADDER:
        if name == "ozaki":
            yield from ((name, (("slices", s),)) for s in range(1, bounds.MAX_SLICES + 1))
        else:
            yield name, ()


def _device_type(device: torch.device | str, func: str = "device") -> str:
    """A device's type without requiring the device here: modes are ranked for Neuron from any machine."""
    return device.type if isinstance(device, torch.device) else _device.device_type(device, func)


_KINDS: dict[torch.device | str, str] = {}  # device -> type: torch.device.type builds a new string per read (0.4 us)


def _kind(device: torch.device | str) -> str:
    kind = _KINDS.get(device)
    if kind is None:
        kind = _KINDS[device] = _device_type(device)
    return kind


# torch's float32 matmul precision other than "highest" lets the device's GEMM round float32 (and complex64)
# inputs to fewer bits: TF32 (11 significant bits) under "high" on CUDA, bf16 under "medium" (CUDA and oneDNN on
# the CPU; "high" may also mean bf16x3 on the CPU, more accurate than TF32). The unit of each input's rounding,
# truncation allowed (cuBLAS does not document the TF32 conversion's rounding): 2**-10 for TF32, 2**-7 for bf16.
REDUCED_INPUT_UNIT = {"high": 2.0**-10, "medium": 2.0**-7}
# the dtypes torch's float32 matmul precision applies to, and the setting read straight from torch's C layer
# (torch.get_float32_matmul_precision wraps it: twice the time, on every step of a network)
REDUCIBLE = frozenset((torch.float32, torch.complex64))
_float32_matmul_precision = getattr(torch._C, "_get_float32_matmul_precision", torch.get_float32_matmul_precision)
float32_matmul_precision: Callable[[], str] = _float32_matmul_precision


def default_plan_reusable(a: torch.dtype, b: torch.dtype | None = None) -> bool:
    """Whether a plan cached under the default mode for a step on dtypes ``a`` (and ``b``) can be reused as it is:
    not for float32 and complex64 while torch's float32 matmul precision is reduced, since native's resolved
    bound depends on that setting (``_honest``), which may change between calls. Plan caches check this on every
    lookup (about 0.1 us)."""
    return (a not in REDUCIBLE and b not in REDUCIBLE) or _float32_matmul_precision() == "highest"


def _native_ok(device_type: str, dtype: torch.dtype) -> bool:
    """Whether native's published bound holds for ``dtype`` on ``device_type``, so a target may pick it: not under
    a reduced float32 matmul precision (``REDUCED_INPUT_UNIT``), read per call (it may change at any time)."""
    if device_type in kernels.NEURON_DEVICE_TYPES:
        return NEURON_FP32_MATMUL_VERIFIED and dtype in REDUCIBLE
    return dtype not in REDUCIBLE or _float32_matmul_precision() == "highest"


@functools.lru_cache(maxsize=1024)
def _reduced_native(dtype: torch.dtype, K: int, matmul_precision: str) -> Resolved:
    """native on float32/complex64 under torch's float32 matmul precision ``matmul_precision`` ("high",
    "medium"), with the bound of what the device may then compute: inputs rounded with unit u_in (each product
    off by (1 + u_in)**2 - 1, exact in fp32: at most 2 x 11 significand bits), summed in fp32 (gamma_K, of the
    rounded products); complex as native's complex bound (sqrt(2), K + 2 real roundings)."""
    return Resolved("native", (), bounds.reduced_native(REDUCED_INPUT_UNIT[matmul_precision], K, dtype.is_complex))


def _honest(resolved: Resolved, dtype: torch.dtype, K: int, device: torch.device | str) -> Resolved:
    """``resolved``, with native's bound widened where torch's float32 matmul precision lets the device round
    float32 inputs (see ``REDUCED_INPUT_UNIT``; Neuron's native is its own kernel, unaffected)."""
    if resolved.mode != "native" or dtype not in REDUCIBLE or _kind(device) in kernels.NEURON_DEVICE_TYPES:
        return resolved
    setting = _float32_matmul_precision()
    return resolved if setting == "highest" else _reduced_native(dtype, K, setting)


def _flops(K: int, bmkn: tuple[int, int, int, int] | None) -> float:
    """The step's FLOPs, which its costs are looked up at: 2 B M K N (B M N = DEFAULT_MN**2 without bmkn)."""
    return 2.0 * DEFAULT_MN * K * DEFAULT_MN if bmkn is None else 2.0 * bmkn[0] * bmkn[1] * bmkn[2] * bmkn[3]


@functools.lru_cache(maxsize=1024)
def _ranking(
    device_type: str, real: torch.dtype, flops: float, native_ok: bool
) -> tuple[tuple[str, tuple[tuple[str, object], ...]], ...]:
    """The ladder's rungs, cheapest first on ``device_type`` for a step of ``flops`` FLOPs (ties: LADDER order)."""
    from . import _mode_costs  # on first use: importing trn_backend does not load the cost machinery

    basis = _mode_costs.basis(device_type, real)
    rungs = [r for r in _ladder() if r[0] != "native" or native_ok]
    costs = dict(
        zip(rungs, basis.costs([(name, dict(params).get("slices")) for name, params in rungs], flops), strict=True)
    )
    return tuple(sorted(rungs, key=costs.__getitem__))  # sorted() is stable: equal costs keep LADDER order


@functools.lru_cache(maxsize=4096)
def _select(
    dtype: torch.dtype,
    K: int,
    target: float,
    what: str,
    device_type: str,
    bmkn: tuple[int, int, int, int] | None,
    native_ok: bool,
) -> Resolved:
    """The cheapest mode whose bound meets ``target``; cached by everything the choice depends on (the device by
    its type, a cheap key: resolve runs once per binary step)."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return Resolved("native")
    best = None
    real = dtype.to_real() if dtype.is_complex else dtype
    for name, params in _ranking(device_type, real, _flops(K, bmkn), native_ok):
        candidate = _resolved(name, params, dtype, K)
        if candidate.bound is None:  # native bf16/fp16: no published bound, so no target can rely on it
            continue
        if candidate.bound <= target:
            return candidate
        # best is a candidate with a bound (those without are skipped above)
        best = candidate if best is None or candidate.bound < cast(float, best.bound) else best
    assert best is not None  # the ladder's last rung (float64 on the host) has a bound for every floating dtype
    raise PrecisionError(
        f"no mode reaches {what}={target:g} for {_dtypes.name(dtype)} with K={K}; the best "
        f"available bound is {best.bound:.3g}, from {best.label}",
        "select_precision",
    )


def best_available(
    dtype: torch.dtype, K: int, device: torch.device, bmkn: tuple[int, int, int, int] | None = None
) -> Resolved | None:
    """The candidate a target may pick with the smallest bound for a step of contracted length ``K`` on
    ``device`` (what an error says is the best a step can do); None for exact dtypes."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return None
    kind = _kind(device)
    real = dtype.to_real() if dtype.is_complex else dtype
    found = [
        _resolved(name, params, dtype, K)
        for name, params in _ranking(kind, real, _flops(K, bmkn), _native_ok(kind, dtype))
    ]
    return min((r for r in found if r.bound is not None), key=lambda r: cast(float, r.bound), default=None)


def select_precision(
    dtype: _dtypes.DType,
    K: int,
    target: float,
    *,
    device: torch.device | str = "cpu",
    bmkn: tuple[int, int, int, int] | None = None,
) -> Resolved:
    """The cheapest mode on ``device`` (default: the CPU) whose bound meets ``target`` (units of ``|A||B|``), for a
    step of sizes ``bmkn`` = (B, M, K, N) (default (1, 1024, K, 1024), the calibration's M and N). Candidates:
    native (where its bound holds), fast, dd, bf16x6, ozaki (1..16 slices), fp64; never sr. Costs come from the
    device's calibration table (CPU, CUDA), the trn2 cost model (Neuron), else the bf16 pass count
    (docs/precision.md). An impossible target raises ValueError naming the best bound."""
    dtype, K = _check_problem(dtype, K, "select_precision")
    target = _check_target(target, "select_precision")
    if not isinstance(device, torch.device | str):
        raise TypeError(
            f"select_precision: device must be a torch.device or a string such as 'cpu', got {type(device).__name__}"
        )
    kind = _device_type(device, "select_precision")
    if bmkn is not None:
        if not (
            isinstance(bmkn, tuple)
            and len(bmkn) == 4
            and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in bmkn)
        ):
            raise TypeError(f"select_precision: bmkn must be a tuple of 4 non-negative ints (B, M, K, N), got {bmkn!r}")
        if bmkn[2] != K:
            raise ValueError(f"select_precision: bmkn's K ({bmkn[2]}) is not K ({K})")
    return _select(dtype, K, target, "target_forward_error", kind, bmkn, _native_ok(kind, dtype))


def cost_basis(dtype: torch.dtype, device: torch.device | str) -> str:
    """What targets rank the modes by for ``dtype`` on ``device``, as explain() shows it: "cpu calibration,
    benchmarks <date>", "trn2 cost model", or "pass count (no calibration for <device>)"."""
    from . import _mode_costs

    return _mode_costs.basis(_kind(device), dtype).text


@contextlib.contextmanager
def planted_costs(table: dict[str, Any]) -> Iterator[None]:
    """Rank by ``table`` (the layout of data/mode_costs.json; ``{}``: no entries, so pass counts everywhere but
    on Neuron) inside the block: for tests and what-if comparisons. Swaps a module global: not per thread."""
    from . import _mode_costs

    previous = _mode_costs.plant(table)
    _clear_choices()
    try:
        yield
    finally:
        _mode_costs.plant(previous)
        _clear_choices()


def _clear_choices() -> None:
    for cached in (_ranking, _select, _checked):
        cached.cache_clear()


def error_bound(mode: str, dtype: torch.dtype, K: int, *, ranks: int = 1, **params: Any) -> float | None:
    """The published componentwise bound of ``mode`` on a length-K contraction to ``dtype``, in units of
    |A||B|, output rounding included; None where none is published (native bf16/fp16, integer dtypes).

    ``ranks``: K partitioned over that many ranks of a sharded contraction, each rank's product a summand of a
    pending sum. Summing the R summands adds gamma_{R-1} of their magnitudes (at most (1 + b) |A||B|) in the
    dtype the sum is held in: float64 for the modes that work in float64 (fp64, ozaki; the sharded engine
    resolves them in float64 and rounds once), the output dtype otherwise; sqrt(2) more for complex parts."""
    dtype, K = _check_problem(dtype, K, "error_bound")
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise ValueError(f"error_bound: ranks must be a positive int, got {ranks!r}")
    name, checked = _mode(mode, params, "error_bound")
    bound = _resolved(name, checked, dtype, K).bound
    if ranks == 1 or bound is None:
        return bound
    held = working_dtype(Resolved(name), dtype) or dtype
    u_held, u_out = (bounds.unit(d.to_real() if d.is_complex else d) for d in (held, dtype))
    return bounds.over_ranks(bound, ranks, u_held, u_out, dtype.is_complex)


def working_dtype(resolved: Resolved | None, dtype: torch.dtype) -> torch.dtype | None:
    """float64 (complex128) where ``resolved`` runs a mode that works in float64 on narrower ``dtype`` data: the
    dtype partial results must be summed in to keep that mode's single rounding. None otherwise."""
    if resolved is None or not MODES[resolved.mode].float64_working:
        return None
    return {torch.float32: torch.float64, torch.complex64: torch.complex128}.get(dtype)


def _default_mode(device: torch.device | str) -> str:
    return "fast" if _kind(device) in kernels.NEURON_DEVICE_TYPES else "native"


def mode_for(
    request: Request | None, dtype: torch.dtype, K: int, device: torch.device, values: torch.dtype | None = None
) -> Resolved:
    """The mode of a step of contracted length ``K`` on ``dtype`` data under a mode ``request`` (None: the device
    default), native's bound widened where torch lets the device round float32 inputs (``_honest``); ``values``:
    see ``_resolved``."""
    if request is None:
        return _honest(_resolved(_default_mode(device), (), dtype, K, values), dtype, K, device)
    return _honest(_resolved(request.mode, request.params, dtype, K, values), dtype, K, device)


def select(
    dtype: torch.dtype,
    K: int,
    limit: float,
    device: torch.device,
    bmkn: tuple[int, int, int, int] | None = None,
    what: str = "target_forward_error",
) -> Resolved:
    """The cheapest mode on ``device`` whose bound for a step of contracted length ``K`` meets ``limit`` (a share
    of a target, in units of the step's absolute value); PrecisionError naming ``what`` where none does."""
    kind = _kind(device)
    return _select(dtype, K, limit, what, kind, bmkn, _native_ok(kind, dtype))


def relative_start(
    dtype: torch.dtype, K: int, target: float, device: torch.device, bmkn: tuple[int, int, int, int] | None = None
) -> Resolved:
    """Where the a posteriori check of one binary step under target_relative_error= starts (``_checked``)."""
    kind = _kind(device)
    return _checked(dtype, K, target, kind, bmkn, _native_ok(kind, dtype))


def resolve(
    dtype: torch.dtype,
    K: int,
    device: torch.device,
    *,
    precision: str | None = None,
    target_forward_error: float | None = None,
    bmkn: tuple[int, int, int, int] | None = None,
) -> Resolved:
    """The mode of one binary contraction of contracted length ``K`` (sizes ``bmkn``, default (1, 1024, K,
    1024)) on ``device``, as an expression of its own: explicit precision= or target_forward_error= (not both),
    else the innermost ``precision`` block, else the device default. A forward target picks the cheapest mode
    on ``device`` whose bound meets it; a relative one, where its a posteriori check starts."""
    request = request_of(precision, target_forward_error, None, "resolve")
    if request is None or request.mode is not None:
        return mode_for(request, dtype, K, device)
    if request.target is not None:
        return select(dtype, K, request.target, device, bmkn)
    assert request.relative is not None  # a request holds a mode or one target: here, the relative one
    return relative_start(dtype, K, request.relative, device, bmkn)


# --- a posteriori checks: where one starts and escalates to (whole expressions' ``compose``, ``share`` and
# ``sum_bound``: kernels/bounds.py) ---


@functools.lru_cache(maxsize=4096)
def _checked(
    dtype: torch.dtype, K: int, target: float, device_type: str, bmkn: tuple[int, int, int, int] | None, native_ok: bool
) -> Resolved:
    """Where a target_relative_error= check starts: the cheapest mode whose a priori bound could meet it
    (|C| <= |A||B|, so no estimate falls much below the bound); exact integer contractions need no check."""
    start = _select(dtype, K, target, "target_relative_error", device_type, bmkn, native_ok)
    return start if start.bound is None else dataclasses.replace(start, target_relative_error=target)


def next_mode(
    resolved: Resolved,
    dtype: torch.dtype,
    K: int,
    *,
    device: torch.device | str = "cpu",
    bmkn: tuple[int, int, int, int] | None = None,
) -> Resolved | None:
    """The cheapest mode on ``device`` whose bound is strictly smaller than ``resolved``'s: where an a posteriori
    check that misses its target escalates to. Starting from a target's choice, each step costs at least as
    much as the last (a cheaper mode with a smaller bound would have been chosen first). None at the top, and
    for exact (integer) contractions."""
    if not (dtype.is_floating_point or dtype.is_complex):
        return None
    kind = _kind(device)
    real = dtype.to_real() if dtype.is_complex else dtype
    for name, params in _ranking(kind, real, _flops(K, bmkn), _native_ok(kind, dtype)):
        candidate = _resolved(name, params, dtype, K)
        if candidate.bound is not None and (resolved.bound is None or candidate.bound < resolved.bound):
            return candidate
    return None
