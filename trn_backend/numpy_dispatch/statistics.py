"""NumPy's "Statistics" section: order statistics (ptp, quantile, percentile and their nan-versions), averages and
variances (median, average, mean, std, var and the nan-versions), correlating (cov, corrcoef, correlate) and
histograms (histogram, bincount).

Values are computed on torch, on the array's device; results follow NumPy's dtype rules, with float64 (complex128)
narrowed to float32 (complex64) on devices without float64. NumPy's warnings are kept (an all-NaN slice, a mean of
an empty slice, degrees of freedom <= 0), and so is its error for empty quantiles. Differences from NumPy: an
integer quantile interpolates in floating point, where NumPy subtracts the two neighbours in the integer dtype first
and can wrap (an int8 median of -100 and 100 is 0.0, not NumPy's 128.0); complex input of median and friends (NumPy
orders complex numbers lexicographically) is a TypeError. correlate computes as convolve does, in the operands'
promoted dtype, integers exactly with the dtype's wraparound.
"""

from __future__ import annotations

import builtins
import functools
import math
import operator
import warnings
from typing import Any

import numpy as np
import torch

from .. import _dtypes
from .._array import wrap
from .._helpers import normalize_axes
from ._common import (
    A,
    Shape,
    _axis_arg,
    _check_sequences,
    _complex_sort,
    _extreme,
    _fill_nan,
    _is_complex,
    _is_floating,
    _mode,
    _name,
    _reduced_shape,
    _refuse_complex,
    _warn,
    _without_nan,
)
from ._registry import as_array, implements, xp
from .mathematical import correlation


def _public(dtype: torch.dtype) -> np.dtype:
    return _dtypes.PUBLIC[dtype]


def _on(device: torch.device, dtype: np.dtype | type[np.generic] | torch.dtype) -> torch.dtype:
    """NumPy's result dtype as the tensor dtype on ``device``: float64 and complex128 narrow to float32 and
    complex64 where the device has no float64."""
    t = _dtypes.to_dtype(dtype)
    if _dtypes.default_float(device) is _dtypes.float32:
        return {_dtypes.float64: _dtypes.float32, _dtypes.complex128: _dtypes.complex64}.get(t, t)
    return t


def _mean_dtype(dtype: torch.dtype, device: torch.device) -> torch.dtype:
    """The dtype of NumPy's mean of ``dtype``: floating dtypes keep theirs, integers and bool give float64."""
    return dtype if dtype in _dtypes.FLOATING else _dtypes.default_float(device)


def _gather(t: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``t.gather(-1, index)`` for every dtype (torch has no gather for uint16/32/64)."""
    return _dtypes.via_compute(lambda c: c.gather(-1, index), t)


class _Slices:
    """``a`` with the axes a reduction runs over moved last and flattened into one: ``t`` has shape
    ``kept + (n,)``; ``shape(keepdims)`` is the reduction's result shape."""

    def __init__(self, a: A, axis: Any, func: str) -> None:
        axes = normalize_axes(_axis_arg(axis), a.ndim, func)
        kept = [i for i in range(a.ndim) if i not in axes]
        t = a._t if kept + list(axes) == list(range(a.ndim)) else a._t.permute(*kept, *axes)
        self.kept: Shape = tuple(a.shape[i] for i in kept)
        self.n = math.prod(a.shape[i] for i in axes)
        self.t = t.reshape(self.kept + (self.n,))
        self.keepdims_shape: Shape = tuple(1 if i in axes else d for i, d in enumerate(a.shape))

    def shape(self, keepdims: bool) -> Shape:
        return self.keepdims_shape if keepdims else self.kept

    def sorted(self) -> torch.Tensor:
        """The slices sorted ascending, NaN last."""
        return xp.sort(wrap(self.t), axis=-1)._t


# ---------------------------------------------------------------- order statistics and medians

QUANTILE_METHODS = (
    "inverted_cdf",
    "averaged_inverted_cdf",
    "closest_observation",
    "interpolated_inverted_cdf",
    "hazen",
    "weibull",
    "linear",
    "median_unbiased",
    "normal_unbiased",
    "lower",
    "higher",
    "midpoint",
    "nearest",
)
# Hyndman and Fan's continuous methods as their (alpha, beta): the virtual index is n q + alpha + q (1 - alpha -
# beta) - 1 (NumPy's formula, evaluated in the same order so the floating-point result is the same)
_PLOTTING_POSITIONS = {
    "interpolated_inverted_cdf": (0.0, 1.0),
    "hazen": (0.5, 0.5),
    "weibull": (0.0, 0.0),
    "median_unbiased": (1 / 3.0, 1 / 3.0),
    "normal_unbiased": (3 / 8.0, 3 / 8.0),
}
# the methods that pick one element (NumPy takes it without interpolating)
_DISCRETE = frozenset({"inverted_cdf", "closest_observation", "lower", "higher", "nearest"})


@functools.cache
def _quantile_dtype(func: str, a_dtype: np.dtype, q_kind: tuple[str, Any], method: str, weighted: bool) -> np.dtype:
    """The dtype NumPy's ``func`` gives, asked of NumPy on a two-element probe. Its rule depends on the method,
    on q's dtype and on whether q is a Python scalar (which promotes weakly), in ways a table here would only
    copy: int8 data with ``q=0.5`` gives float64 but float16 data float16, an integer q keeps integer data
    integer for ``linear`` ... Cached: a few (dtype, q kind, method) combinations occur in a program."""
    probe = np.zeros(2, dtype=a_dtype)
    source, kind = q_kind
    q = kind(0) if source == "python" else np.zeros((), dtype=kind)
    weights = {"weights": np.ones(2)} if weighted else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return np.asarray(getattr(np, func)(probe, q, method=method, **weights)).dtype
        except TypeError:
            raise TypeError(
                f"numpy.{func}(): {a_dtype} input is not supported with method={method!r} (NumPy refuses it too)"
            ) from None


class _Quantiles:
    """The q argument of a quantile function: ``p``, the probabilities flattened, in the dtype NumPy computes
    positions in (q's own floating dtype, else float64); q's shape; its kind for NumPy's dtype rule
    (``("python", int)`` for a Python scalar, which promotes weakly, else ``("numpy", dtype)``: a tagged pair, as
    ``np.dtype("int64") == int`` holds); and whether q is integral."""

    def __init__(self, q: Any, device: torch.device, func: str, percent: bool) -> None:
        if type(q) in (int, float):  # exactly: NumPy's test (np.float64 subclasses float, but is strong)
            self.kind: tuple[str, Any] = ("python", type(q))
            t = torch.tensor(q, dtype=torch.float64).reshape(-1)
            self.shape: Shape = ()
        else:
            q = q if isinstance(q, A) else as_array(q, device)
            self.kind, t, self.shape = ("numpy", _public(q._t.dtype)), q._t.reshape(-1), q.shape
            if _is_complex(t):
                raise TypeError(f"{func}(): q must be real, got {_name(t.dtype)}")
        if len(self.shape) > 2:
            raise ValueError(f"{func}(): q must be a scalar, 1-d or 2-d, got shape {self.shape}")
        self.integral = not percent and t.dtype not in _dtypes.FLOATING
        positions = t.dtype if t.dtype in (_dtypes.float32, _dtypes.float64) else _dtypes.float64
        p = _dtypes.cast(t, _on(device, positions)).to(device)
        self.p = p / 100 if percent else p
        if not bool(torch.all((self.p >= 0) & (self.p <= 1))):  # NaN fails both tests
            bounds = "[0, 100]" if percent else "[0, 1]"
            raise ValueError(f"{func}(): q must be in the range {bounds}")


def _continuous_positions(method: str, n: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """NumPy's virtual index of each quantile (fractional) for the interpolating methods."""
    if method == "linear":
        return (n - 1) * p
    if method == "averaged_inverted_cdf":
        return n * p - 1
    if method == "midpoint":
        return 0.5 * (torch.floor((n - 1) * p) + torch.ceil((n - 1) * p))
    alpha, beta = _PLOTTING_POSITIONS[method]
    return n * p + (alpha + p * (1 - alpha - beta)) - 1


def _discrete_positions(method: str, n: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """The index NumPy takes for the methods that pick one element (and for ``linear`` with integral q)."""
    if method in ("linear", "lower"):
        return torch.floor((n - 1) * p)
    if method == "higher":
        return torch.ceil((n - 1) * p)
    if method == "nearest":
        return torch.round((n - 1) * p)  # half to even, as np.around
    # inverted_cdf and closest_observation: the element below or above n q - 1 (- 0.5) by NumPy's tie rule
    index = n * p - 1 if method == "inverted_cdf" else n * p - 1 - 0.5
    below = torch.floor(index)
    at_boundary = index - below == 0
    if method == "closest_observation":  # the even order statistic (1-based) at a tie
        at_boundary &= torch.remainder(below, 2) == 1
    return torch.where(at_boundary, below, below + 1).clamp(min=0)


def _gamma(method: str, position: torch.Tensor, below: torch.Tensor) -> torch.Tensor:
    """The interpolation weight of the upper neighbour (NumPy's gamma, with its per-method fix)."""
    gamma = position - below
    if method == "averaged_inverted_cdf":
        return torch.where(gamma == 0, 0.5, 1.0).to(position.dtype)
    if method == "midpoint":
        return torch.where(torch.remainder(position, 1) == 0, 0.0, 0.5).to(position.dtype)
    return gamma


def _lerp(lo: torch.Tensor, hi: torch.Tensor, gamma: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """NumPy's interpolation between neighbours: lo + (hi - lo) gamma below gamma 0.5, hi - (hi - lo) (1 - gamma)
    from it, in ``dtype``. Floating data subtract in their own dtype, as NumPy; integers in ``dtype`` (NumPy's
    integer subtraction can wrap)."""
    if lo.dtype in _dtypes.FLOATING:
        diff = _dtypes.cast(hi - lo, dtype)
    else:
        diff = _dtypes.cast(hi, dtype) - _dtypes.cast(lo, dtype)
    lo, hi = _dtypes.cast(lo, dtype), _dtypes.cast(hi, dtype)
    above = hi - diff * _dtypes.cast(1 - gamma, dtype)
    return torch.where(gamma >= 0.5, above, lo + diff * _dtypes.cast(gamma, dtype))


def _pick(s: torch.Tensor, n: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Elements of the sorted slices ``s`` at ``index`` per slice; index -1 is the slice's last valid element
    (NumPy's marker for a position past the end)."""
    index = torch.where(index == -1, n - 1, index).long()
    return _gather(s, index.clamp(0, builtins.max(s.shape[-1] - 1, 0)))


def _quantile_values(s: torch.Tensor, n: torch.Tensor, q: _Quantiles, method: str, dtype: torch.dtype) -> torch.Tensor:
    """The quantiles of each sorted slice of ``s`` (valid elements first, ``n`` of them per slice), shape
    ``kept + (len(p),)``, in ``dtype``."""
    n_pos = n.to(q.p.dtype)
    if method in _DISCRETE or (method == "linear" and q.integral):
        return _dtypes.cast(_pick(s, n, _discrete_positions(method, n_pos, q.p)), dtype)
    position = _continuous_positions(method, n_pos, q.p)
    below = torch.floor(position)
    past_end, before_start = position >= n_pos - 1, position < 0
    below = torch.where(past_end, -1.0, torch.where(before_start, 0.0, below)).to(position.dtype)
    above = torch.where(past_end | before_start, below, below + 1)
    lo, hi = _pick(s, n, below), _pick(s, n, above)
    if dtype not in _dtypes.FLOATING:  # NumPy's integer result (an integral q): the neighbours coincide
        return _dtypes.cast(lo, dtype)
    return _lerp(lo, hi, _gamma(method, position, below), dtype)


def _weighted_values(s: torch.Tensor, w: torch.Tensor, counted: torch.Tensor, q: _Quantiles, func: str) -> torch.Tensor:
    """``inverted_cdf`` with weights: in each sorted slice of ``s`` (weights ``w`` in the same order), the first
    element whose cumulative weight reaches q; shape ``kept + (len(p),)``, in the data's dtype (NumPy's). Only
    the slices in ``counted`` need weights with a positive finite sum (all-NaN slices of the nan-versions are
    NaN whatever their weights)."""
    cdf = torch.cumsum(w.to(_on(w.device, np.float64)), dim=-1)
    cdf = cdf / cdf[..., -1:]
    if not bool(torch.all(torch.isfinite(cdf[..., -1]) | ~counted)):
        raise ValueError(f"{func}(): the weights include NaN or inf, or sum to zero along a slice")
    # zeros of the cdf (leading zero weights, the only ones there are) must not be picked for q = 0: as NumPy,
    # they become -1, below every q
    cdf = torch.where(cdf == 0, -1.0, cdf).to(q.p.dtype)
    index = torch.searchsorted(cdf, q.p.expand(s.shape[:-1] + q.p.shape).contiguous(), side="left")
    return _gather(s, index.clamp(max=builtins.max(s.shape[-1] - 1, 0)))


def _weights_for(a: A, weights: Any, axis: Any, func: str) -> A:
    """Quantile weights (NumPy's rules: a's shape, or the shape of the reduced axes) as an array of a's shape."""
    w = weights if isinstance(weights, A) else as_array(weights, a.device)
    if w.shape != a.shape:
        if axis is None:
            raise TypeError(f"{func}(): weights of shape {w.shape} need axis= when a has shape {a.shape}")
        axes = normalize_axes(_axis_arg(axis), a.ndim, func)
        if w.shape != tuple(a.shape[i] for i in axes):
            raise ValueError(
                f"{func}(): weights of shape {w.shape} do not match a of shape {a.shape} along axis {axis}"
            )
        order = sorted(range(len(axes)), key=lambda i: axes[i])
        w = xp.reshape(xp.permute_dims(w, tuple(order)), tuple(s if i in axes else 1 for i, s in enumerate(a.shape)))
        w = xp.broadcast_to(w, a.shape)
    if _is_complex(w._t):
        raise TypeError(f"{func}(): weights must be real, got {_name(w._t.dtype)}")
    if bool(torch.any(w._t < 0)):
        raise ValueError(f"{func}(): weights must be non-negative")
    return w


def _quantile(
    a: A, q: Any, axis: Any, method: str, keepdims: bool, weights: Any, *, func: str, percent: bool, skip_nan: bool
) -> A:
    """quantile, percentile and their nan-versions: q's shape, then the reduction's."""
    name = f"numpy.{func}"
    _refuse_complex(a, name, "NumPy requires real numbers too")
    if method not in QUANTILE_METHODS:
        raise ValueError(f"{name}(): method={method!r} is not one of NumPy's: {', '.join(QUANTILE_METHODS)}")
    if weights is not None and method != "inverted_cdf":
        raise ValueError(f"{name}(): only method='inverted_cdf' supports weights, got method={method!r}")
    device = a._t.device
    quantiles = _Quantiles(q, device, name, percent)
    result_np = _quantile_dtype(func, _public(a._t.dtype), quantiles.kind, method, weights is not None)
    dtype = _on(device, result_np)
    slices = _Slices(a, axis, name)
    nan_function, skip_nan = skip_nan, skip_nan and _is_floating(a._t)
    shape = quantiles.shape + slices.shape(keepdims)
    if slices.n == 0:
        if not nan_function:  # NumPy's nan-quantiles of no data are NaN, integer data included
            raise IndexError(f"{name}(): cannot take a quantile along axes of total length 0 (a has shape {a.shape})")
        _warn("Mean of empty slice")  # NumPy's warning here: its nan-quantiles of no data are nanmean's
        return xp.full(shape, math.nan, dtype=dtype, device=a.device)
    if weights is None:
        s = slices.sorted()
        n = _valid_counts(s, slices, skip_nan)
        values = _quantile_values(s, n, quantiles, method, dtype)
    else:
        w = _Slices(_weights_for(a, weights, axis, name), axis, name).t
        if skip_nan:  # NumPy drops NaN elements with their weights: as weight 0, sorted last
            w = torch.where(torch.isnan(slices.t), torch.zeros((), dtype=w.dtype, device=w.device), w)
        order = xp.argsort(wrap(slices.t), axis=-1)._t  # NaN last, as in the sort
        s, w = _gather(slices.t, order), _gather(w, order)
        n = _valid_counts(s, slices, skip_nan)
        values = _dtypes.cast(_weighted_values(s, w, n[..., 0] > 0, quantiles, name), dtype)
    values = _nan_slices(values, s, n, skip_nan)
    if skip_nan and n.numel() and not bool(n.reshape(-1)[0]):
        # NumPy's nan-quantiles take the result's dtype from the first slice, and an all-NaN slice's is the
        # data's (float32 data and a float64 q then give float32)
        values = _dtypes.cast(values, a._t.dtype)
    return wrap(values.movedim(-1, 0).reshape(shape))


def _valid_counts(s: torch.Tensor, slices: _Slices, skip_nan: bool) -> torch.Tensor:
    """The number of elements each slice's quantile is taken over, shape ``kept + (1,)``: all of them, or
    those that are not NaN (sorted first)."""
    if skip_nan:
        return torch.sum(~torch.isnan(s), dim=-1, keepdim=True)
    return torch.full(slices.kept + (1,), slices.n, dtype=torch.int64, device=s.device)


def _nan_slices(values: torch.Tensor, s: torch.Tensor, n: torch.Tensor, skip_nan: bool) -> torch.Tensor:
    """NaN where NumPy gives NaN: slices holding a NaN, or, skipping NaNs, slices of nothing but NaN (with
    NumPy's warning). The slices are not empty."""
    if not _is_floating(s) or values.dtype not in _dtypes.FLOATING:
        return values
    if skip_nan:
        empty = n == 0
        if bool(torch.any(empty)):
            _warn("All-NaN slice encountered")
    else:
        empty = torch.isnan(s[..., -1:])
    return _fill_nan(values, empty, math.nan)


@implements(np.quantile, arrays="a q weights", weak="q")
def quantile(
    a: A,
    q: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    weights: A | None = None,
) -> A:
    """numpy.quantile: every method of NumPy's; weights with method='inverted_cdf' (overwrite_input is a hint)."""
    return _quantile(a, q, axis, method, keepdims, weights, func="quantile", percent=False, skip_nan=False)


@implements(np.percentile, arrays="a q weights", weak="q")
def percentile(
    a: A,
    q: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    weights: A | None = None,
) -> A:
    """numpy.percentile: numpy.quantile of q / 100."""
    return _quantile(a, q, axis, method, keepdims, weights, func="percentile", percent=True, skip_nan=False)


@implements(np.nanquantile, arrays="a q weights", weak="q")
def nanquantile(
    a: A,
    q: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    weights: A | None = None,
) -> A:
    """numpy.nanquantile: quantiles of the elements that are not NaN; NaN, with a warning, for all-NaN slices."""
    return _quantile(a, q, axis, method, keepdims, weights, func="nanquantile", percent=False, skip_nan=True)


@implements(np.nanpercentile, arrays="a q weights", weak="q")
def nanpercentile(
    a: A,
    q: Any,
    axis: Any = None,
    overwrite_input: bool = False,
    method: str = "linear",
    keepdims: bool = False,
    weights: A | None = None,
) -> A:
    """numpy.nanpercentile: numpy.nanquantile of q / 100."""
    return _quantile(a, q, axis, method, keepdims, weights, func="nanpercentile", percent=True, skip_nan=True)


def _median(a: A, axis: Any, keepdims: bool, *, func: str, skip_nan: bool) -> A:
    """NumPy's median: the middle element, or the mean of the two middle ones, as NumPy's mean computes it (in
    float32 for float16 data, in float64 for integers)."""
    device = a._t.device
    dtype = _mean_dtype(a._t.dtype, device)
    slices = _Slices(a, axis, func)
    if _is_complex(a._t):
        return _complex_median(a, slices, keepdims, func=func, skip_nan=skip_nan)
    skip_nan = skip_nan and _is_floating(a._t)
    if slices.n == 0:
        _warn("Mean of empty slice")
        return xp.full(slices.shape(keepdims), math.nan, dtype=dtype, device=device)
    s = slices.sorted()
    n = _valid_counts(s, slices, skip_nan)
    lo, hi = _pick(s, n, torch.div(n - 1, 2, rounding_mode="floor")), _pick(s, n, n // 2)
    accumulate = _dtypes.float32 if dtype in _dtypes.EXTENSION_FLOAT else dtype
    lo, hi = _dtypes.cast(lo, accumulate), _dtypes.cast(hi, accumulate)
    middle = torch.where(n % 2 == 1, lo, (lo + hi) / 2).to(dtype)
    middle = _nan_slices(middle, s, n, skip_nan)
    return wrap(middle.reshape(slices.shape(keepdims)))


def _complex_median(a: A, slices: _Slices, keepdims: bool, *, func: str, skip_nan: bool) -> A:
    """The median of complex slices as NumPy's: the middle of NumPy's lexicographic order (the mean of the two
    middle elements for an even count); a slice holding a NaN gives its last element in that order (a NaN)."""
    if skip_nan:
        _refuse_complex(a, func)  # nanmedian: NumPy drops complex NaNs by a test its order does not share
    if slices.n == 0:
        _warn("Mean of empty slice")
        return xp.full(slices.shape(keepdims), complex(math.nan, math.nan), dtype=a.dtype, device=a.device)
    s = _complex_sort(wrap(slices.t), -1)._t
    lo, hi = s[..., (slices.n - 1) // 2], s[..., slices.n // 2]
    if slices.n % 2:
        middle = lo
    else:
        # NumPy's mean divides the complex sum by the count as a complex number (Smith's algorithm, which
        # multiplies the other part by the zero imaginary part of the divisor: inf there gives a NaN part)
        # The sum is taken by parts: torch's complex addition can give NaN parts where NumPy's does not.
        re, im = lo.real + hi.real, lo.imag + hi.imag
        zero = torch.zeros((), dtype=re.dtype, device=re.device)
        middle = torch.complex((re + im * zero) * 0.5, (im - re * zero) * 0.5)
    last = s[..., -1]
    middle = torch.where(torch.isnan(last.real) | torch.isnan(last.imag), last, middle)
    return wrap(middle.reshape(slices.shape(keepdims)))


@implements(np.median, arrays="a")
def median(a: A, axis: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> A:
    """numpy.median (float64 for integer data; NaN for slices holding NaN)."""
    return _median(a, axis, keepdims, func="numpy.median", skip_nan=False)


@implements(np.nanmedian, arrays="a")
def nanmedian(a: A, axis: Any = None, overwrite_input: bool = False, keepdims: bool = False) -> A:
    """numpy.nanmedian: the median of the elements that are not NaN; NaN, with a warning, for all-NaN slices."""
    return _median(a, axis, keepdims, func="numpy.nanmedian", skip_nan=True)


@implements(np.ptp, arrays="a")
def ptp(a: A, axis: Any = None, keepdims: bool = False) -> A:
    """numpy.ptp: max minus min (complex numbers in NumPy's lexicographic order)."""
    return xp.subtract(_extreme("max", a, axis, keepdims, None), _extreme("min", a, axis, keepdims, None))


# ---------------------------------------------------------------- averages and variances


@implements(np.mean, arrays="a")
def mean(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> A:
    """numpy.mean (integers average in the default float, float32, where NumPy uses float64)."""
    return xp.mean(a if dtype is None else xp.astype(a, dtype), axis=axis, keepdims=keepdims)


def _cast(a: A, dtype: torch.dtype | None) -> A:
    return a if dtype is None or a._t.dtype is dtype else xp.astype(a, dtype)


def _counts(mask: torch.Tensor, axis: Any, keepdims: bool) -> A:
    """The number of elements that are not NaN along ``axis`` (int64)."""
    return xp.sum(wrap(~mask), axis=_axis_arg(axis), dtype=_dtypes.int64, keepdims=keepdims)


@implements(np.nanmean, arrays="a")
def nanmean(a: A, axis: Any = None, dtype: Any = None, keepdims: bool = False) -> A:
    """numpy.nanmean: the mean of the elements that are not NaN; NaN, with a warning, for all-NaN slices."""
    filled, mask = _without_nan(_cast(a, dtype), 0.0)
    if mask is None:  # integers: numpy.mean (float64)
        return xp.mean(
            _cast(filled, _mean_dtype(filled._t.dtype, filled._t.device)), axis=_axis_arg(axis), keepdims=keepdims
        )
    total = xp.sum(filled, axis=_axis_arg(axis), keepdims=keepdims)
    count = _counts(mask, axis, keepdims)
    if bool(xp.any(xp.equal(count, 0))):
        _warn("Mean of empty slice")
    return xp.divide(total, xp.astype(count, _dtypes.real_of(total._t.dtype)))


def _moment(which: str, a: A, axis: Any, dtype: Any, ddof: float, keepdims: bool, correction: Any) -> A:
    if correction is not None and ddof != 0:
        raise ValueError(f"numpy.{which}(): give ddof= or correction=, not both")
    a = a if dtype is None else xp.astype(a, dtype)
    return getattr(xp, which)(a, axis=axis, correction=ddof if correction is None else correction, keepdims=keepdims)


@implements(np.var, arrays="a")
def var(
    a: A, axis: Any = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False, correction: Any = None
) -> A:
    """numpy.var (ddof or correction)."""
    return _moment("var", a, axis, dtype, ddof, keepdims, correction)


@implements(np.std, arrays="a")
def std(
    a: A, axis: Any = None, dtype: Any = None, ddof: float = 0, keepdims: bool = False, correction: Any = None
) -> A:
    """numpy.std (ddof or correction)."""
    return _moment("std", a, axis, dtype, ddof, keepdims, correction)


def _ddof(ddof: Any, correction: Any, func: str) -> Any:
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"{func}(): give ddof= or correction=, not both")
    return correction


def _nanvar(a: A, axis: Any, dtype: Any, ddof: Any, keepdims: bool, func: str) -> A:
    """NumPy's nanvar: squared deviations from the mean of the elements that are not NaN, over their count minus
    ddof; NaN, with a warning, where that is <= 0."""
    a = _cast(a, dtype)
    filled, mask = _without_nan(a, 0.0)
    if mask is None:  # integers: numpy.var (float64)
        return xp.var(
            _cast(a, _mean_dtype(a._t.dtype, a._t.device)), axis=_axis_arg(axis), correction=ddof, keepdims=keepdims
        )
    count = _counts(mask, axis, keepdims=True)
    real = _dtypes.real_of(filled._t.dtype)
    mean = xp.divide(xp.sum(filled, axis=_axis_arg(axis), keepdims=True), xp.astype(count, real))
    deviation = wrap(_fill_nan(xp.subtract(filled, mean)._t, mask, 0.0))
    squares = (
        xp.real(xp.multiply(deviation, xp.conj(deviation)))
        if _is_complex(deviation._t)
        else xp.multiply(deviation, deviation)
    )
    dof = xp.subtract(xp.astype(count, real), ddof)
    if not keepdims:
        dof = xp.reshape(dof, _reduced_shape(a, _axis_arg(axis), False, func))
    var = xp.divide(xp.sum(squares, axis=_axis_arg(axis), keepdims=keepdims), dof)
    bad = xp.less_equal(dof, 0)
    if bool(xp.any(bad)):
        _warn("Degrees of freedom <= 0 for slice.")
        var = xp.where(bad, xp.asarray(math.nan, dtype=real, device=a.device), var)
    return var


@implements(np.nanvar, arrays="a")
def nanvar(
    a: A, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False, correction: Any = None
) -> A:
    """numpy.nanvar (ddof or correction; real for complex data)."""
    return _nanvar(a, axis, dtype, _ddof(ddof, correction, "numpy.nanvar"), keepdims, "numpy.nanvar")


@implements(np.nanstd, arrays="a")
def nanstd(
    a: A, axis: Any = None, dtype: Any = None, ddof: Any = 0, keepdims: bool = False, correction: Any = None
) -> A:
    """numpy.nanstd: the square root of numpy.nanvar."""
    return xp.sqrt(_nanvar(a, axis, dtype, _ddof(ddof, correction, "numpy.nanstd"), keepdims, "numpy.nanstd"))


def _average_weights(a: A, w: A, axes: tuple[int, ...] | None, func: str) -> A:
    """``weights`` shaped to broadcast against ``a`` (NumPy's rules: a's shape, or the reduced axes' shape)."""
    if w.shape == a.shape:
        return w
    if axes is None:
        raise TypeError(f"{func}(): axis must be given when the weights' shape {w.shape} differs from a's {a.shape}")
    if w.shape != tuple(a.shape[i] for i in axes):
        raise ValueError(f"{func}(): weights of shape {w.shape} do not match a of shape {a.shape} along axis {axes}")
    order = sorted(range(len(axes)), key=lambda i: axes[i])
    return xp.reshape(xp.permute_dims(w, tuple(order)), tuple(s if i in axes else 1 for i, s in enumerate(a.shape)))


@implements(np.average, arrays="a weights")
def average(
    a: A, axis: Any = None, weights: A | None = None, returned: bool = False, keepdims: bool = False
) -> A | tuple[A, A]:
    """numpy.average: the mean, or the weights-weighted mean (float64 at least for integer data); with
    returned=True also the sum of the weights (the count without weights), shaped like the average."""
    func = "numpy.average"
    axes = None if axis is None else normalize_axes(_axis_arg(axis), a.ndim, func)
    if weights is None:
        avg = xp.mean(_cast(a, _mean_dtype(a._t.dtype, a._t.device)), axis=axes, keepdims=keepdims)
        if avg.size == 0:
            # NumPy's count of elements per average is a.size / avg.size: its ZeroDivisionError for no averages
            raise ZeroDivisionError(f"{func}(): no averages to take (a has shape {a.shape}, the result none)")
        scale = xp.full(avg.shape, a.size / avg.size, dtype=avg._t.dtype, device=avg.device)
    else:
        w = _average_weights(a, weights, axes, func)
        extra = ("f8",) if a._t.dtype not in _dtypes.FLOATING else ()
        dtype = _on(a._t.device, np.result_type(_public(a._t.dtype), _public(w._t.dtype), *extra))
        scale = xp.sum(_cast(w, dtype), axis=axes, keepdims=keepdims)
        if bool(xp.any(xp.equal(scale, 0))):
            raise ZeroDivisionError(f"{func}(): the weights sum to zero, so they cannot be normalized")
        avg = xp.divide(xp.sum(xp.multiply(_cast(a, dtype), _cast(w, dtype)), axis=axes, keepdims=keepdims), scale)
    if not returned:
        return avg
    if scale.shape != avg.shape:
        scale = xp.asarray(xp.broadcast_to(scale, avg.shape), copy=True)
    return avg, scale


# ---------------------------------------------------------------- correlating


def _rows(x: A, dtype: torch.dtype, name: str, func: str) -> A:
    """``x`` as a 2-d array of ``dtype`` (NumPy's ndmin=2: a 1-d array is one row)."""
    if x.ndim > 2:
        raise ValueError(f"{func}(): {name} has {x.ndim} dimensions; at most 2 are allowed")
    if _is_complex(x._t) and dtype not in _dtypes.COMPLEX_FLOAT:
        raise TypeError(f"{func}(): {name} is {_name(x._t.dtype)}; dtype={_name(dtype)} would drop its imaginary part")
    x = _cast(x, dtype)
    return xp.reshape(x, (1,) * (2 - x.ndim) + x.shape) if x.ndim < 2 else x


def _frequency_weights(w: A | None, kind: str, samples: int, dtype: torch.dtype, func: str) -> A | None:
    """fweights / aweights checked as NumPy checks them (with its exception types), as floating arrays."""
    if w is None:
        return None
    w = _cast(w, dtype)
    if kind == "fweights" and not bool(xp.all(xp.equal(w, xp.round(w)))):
        raise TypeError(f"{func}(): fweights must be integers")
    if w.ndim > 1:
        raise RuntimeError(f"{func}(): {kind} must be 1-dimensional, got shape {w.shape}")
    if w.shape[0] != samples:
        raise RuntimeError(f"{func}(): {kind} has {w.shape[0]} entries for {samples} observations")
    if bool(xp.any(xp.less(w, 0))):
        raise ValueError(f"{func}(): {kind} cannot be negative")
    return w


@implements(np.cov, arrays="m y fweights aweights")
def cov(
    m: A,
    y: A | None = None,
    rowvar: bool = True,
    bias: bool = False,
    ddof: Any = None,
    fweights: A | None = None,
    aweights: A | None = None,
    dtype: Any = None,
) -> A:
    """numpy.cov: variables in rows (rowvar) or columns, float64 at least (complex stays complex)."""
    return _covariance(m, y, rowvar, bias, ddof, fweights, aweights, dtype, "numpy.cov")


def _covariance(
    m: A,
    y: A | None,
    rowvar: bool,
    bias: bool,
    ddof: Any,
    fweights: A | None,
    aweights: A | None,
    dtype: Any,
    func: str,
) -> A:
    """NumPy's cov, its errors naming ``func``."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError(f"{func}(): ddof must be an integer, got {ddof!r}")
    device = m._t.device
    if dtype is None:
        operands = [_public(m._t.dtype)] + ([] if y is None else [_public(y._t.dtype)])
        dtype = _on(device, np.result_type(*operands, np.float64))
    X = _rows(m, dtype, "m", func)
    if not rowvar and m.ndim != 1:
        X = xp.matrix_transpose(X)
    if X.shape[0] == 0:
        return xp.zeros((0, 0), dtype=_on(device, np.float64), device=device)
    if y is not None:
        Y = _rows(y, dtype, "y", func)
        if not rowvar and Y.shape[0] != 1:
            Y = xp.matrix_transpose(Y)
        if Y.shape[1] != X.shape[1]:
            raise ValueError(f"{func}(): m has {X.shape[1]} observations but y has {Y.shape[1]}")
        X = xp.concat([X, Y], axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    float_dtype = _on(device, np.float64)
    samples = X.shape[1]
    fw = _frequency_weights(fweights, "fweights", samples, float_dtype, func)
    aw = _frequency_weights(aweights, "aweights", samples, float_dtype, func)
    w = fw if aw is None else aw if fw is None else xp.multiply(fw, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    w_sum = _real_float(w_sum[0])  # complex data average in complex: the weights' sum is its real part
    if w is None:
        fact = float(samples - ddof)
    elif ddof == 0:
        fact = w_sum
    elif aw is None:
        fact = w_sum - ddof
    else:
        fact = w_sum - ddof * _real_float(xp.sum(xp.multiply(w, aw))) / w_sum
    if fact <= 0:
        _warn("Degrees of freedom <= 0 for slice")
        fact = 0.0
    X = _cast(xp.subtract(X, xp.expand_dims(avg, axis=1)), X._t.dtype)
    X_T = xp.matrix_transpose(X if w is None else xp.multiply(X, w))
    c = xp.matmul(X, xp.conj(X_T) if _is_complex(X_T._t) else X_T)
    c = _cast(xp.multiply(c, 1.0 / fact if fact else math.inf), c._t.dtype)
    ones = tuple(i for i, d in enumerate(c.shape) if d == 1)
    return xp.squeeze(c, axis=ones) if ones else c


def _real_float(x: A) -> float:
    return float(xp.real(x)) if _is_complex(x._t) else float(x)


def _clip_unit(x: torch.Tensor) -> torch.Tensor:
    return x.clamp(-1, 1)


@implements(np.corrcoef, arrays="x y")
def corrcoef(x: A, y: A | None = None, rowvar: bool = True, dtype: Any = None) -> A:
    """numpy.corrcoef: numpy.cov scaled by the standard deviations, its real and imaginary parts clipped to
    [-1, 1]; a single variable gives cov / cov (1, or NaN)."""
    c = _covariance(x, y, rowvar, False, None, None, None, dtype, "numpy.corrcoef")
    if c.ndim == 0:
        return xp.divide(c, c)
    std = xp.sqrt(xp.real(xp.linalg.diagonal(c)) if _is_complex(c._t) else xp.linalg.diagonal(c))
    c = xp.divide(xp.divide(c, xp.expand_dims(std, axis=1)), xp.expand_dims(std, axis=0))
    t = c._t
    if _is_complex(t):
        return wrap(torch.complex(_clip_unit(t.real), _clip_unit(t.imag)))
    return wrap(_clip_unit(t))


@implements(np.correlate, arrays="a v")
def correlate(a: A, v: A, mode: str = "valid") -> A:
    """numpy.correlate: c[k] = sum_n a[n + k] * conj(v[n]) for two 1-d sequences, in their promoted dtype."""
    func = "numpy.correlate"
    mode = _mode(mode, func)
    if a.ndim == 0 or v.ndim == 0:
        raise ValueError(f"{func}(): a and v must be 1-d, got shapes {a.shape} and {v.shape}")
    _check_sequences(a, v, func)
    if v._t.dtype in _dtypes.COMPLEX_FLOAT:
        v = xp.conj(v)
    return correlation(a, v, mode)


# ---------------------------------------------------------------- histograms


def _host_scalar(value: Any) -> Any:
    """A range bound or a data extreme as NumPy holds it: a NumPy scalar of the array's dtype (a NeuronArray
    copies its one value to the host), Python numbers as they are."""
    if isinstance(value, A):
        return np.asarray(value)[()]
    return value


def _outer_edges(a: A, range: Any, func: str) -> tuple[Any, Any]:
    """NumPy's first and last edge: ``range``, or the data's extremes (0 and 1 for no data), widened by 0.5 on
    each side when equal."""
    if range is not None:
        first, last = (_host_scalar(v) for v in range)
        if first > last:
            raise ValueError(f"{func}(): range=({first}, {last}) has max below min")
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"{func}(): range=({first}, {last}) is not finite")
    elif a.size == 0:
        first, last = 0, 1
    else:
        first, last = _host_scalar(xp.min(a)), _host_scalar(xp.max(a))
        if not (np.isfinite(first) and np.isfinite(last)):
            raise ValueError(f"{func}(): the data's range [{first}, {last}] is not finite; give range=")
    if first == last:
        first, last = first - 0.5, last + 0.5
    return first, last


def _bin_edges(a: A, bins: Any, range: Any, func: str) -> tuple[A, torch.dtype]:
    """The edges (a NeuronArray) and the dtype values compare with them in: the edges' own for equal bins (NumPy
    casts the data to them), else the common dtype of data and edges."""
    if isinstance(bins, str):
        raise TypeError(
            f"{func}(): bins={bins!r} (a bin-width estimator) is not supported on NeuronArray; give "
            "the number of bins or the edges"
        )
    if np.ndim(bins) == 0:
        try:
            count = operator.index(bins)
        except TypeError:
            raise TypeError(
                f"{func}(): bins must be an integer or an array of edges, got {type(bins).__name__}"
            ) from None
        if count < 1:
            raise ValueError(f"{func}(): bins must be positive, got {count}")
        first, last = _outer_edges(a, range, func)
        bin_type = np.result_type(first, last, _public(a._t.dtype))
        if np.issubdtype(bin_type, np.integer):
            bin_type = np.result_type(bin_type, float)
        # bins + 1 values from NumPy's own linspace: the same edges, so values on an edge fall in the same bin
        host_edges = np.linspace(first, last, count + 1, endpoint=True, dtype=bin_type)
        if np.any(host_edges[:-1] >= host_edges[1:]):
            raise ValueError(
                f"{func}(): {count} bins are too many for the range [{first}, {last}]: they are not all of finite size"
            )
        dtype = _on(a._t.device, bin_type)
        return xp.asarray(host_edges.astype(_public(dtype)), device=a.device), dtype
    edges = bins if isinstance(bins, A) else as_array(bins, a.device)
    if edges.ndim != 1:
        raise ValueError(f"{func}(): bins must be 1-d when an array, got shape {edges.shape}")
    if edges.shape[0] < 2:
        raise ValueError(f"{func}(): bins needs at least 2 edges, got {edges.shape[0]}")
    if bool(xp.any(xp.greater(edges[:-1], edges[1:]))):
        raise ValueError(f"{func}(): the bin edges must increase monotonically")
    return edges, _on(a._t.device, np.result_type(_public(a._t.dtype), _public(edges._t.dtype)))


def _bin_index(values: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """Each value's bin: i where edges[i] <= v < edges[i + 1], the last bin closed; values outside the edges
    (and NaN) get the extra index len(edges) - 1."""
    values, edges = _dtypes.ordered(values, values.dtype), _dtypes.ordered(edges, edges.dtype)
    bins = edges.shape[0] - 1
    index = (torch.searchsorted(edges, values, right=True) - 1).clamp(max=bins - 1)
    inside = (values >= edges[0]) & (values <= edges[-1])
    return torch.where(inside, index, bins)


def _accumulator(dtype: torch.dtype, device: torch.device) -> torch.dtype:
    """The dtype weights sum in: int64 for integers and bool (exact), else the widest float or complex."""
    if dtype in _dtypes.COMPLEX_FLOAT:
        return _on(device, np.complex128)
    return _on(device, np.float64) if dtype in _dtypes.FLOATING else _dtypes.int64


@implements(np.histogram, arrays="a weights")
def histogram(a: A, bins: Any = 10, range: Any = None, density: Any = None, weights: A | None = None) -> tuple[A, A]:
    """numpy.histogram: (counts, edges), counts int64 (the weights' dtype with weights; float64 with density),
    bins a count (equal bins over range or the data's extremes) or increasing edges; the last bin is closed."""
    func = "numpy.histogram"
    _refuse_complex(a, func, "NumPy bins complex numbers by their lexicographic order, torch does not")
    if a._t.dtype is _dtypes.bool:
        _warn("Converting input from bool to <class 'numpy.uint8'> for compatibility.")
        a = xp.astype(a, _dtypes.uint8)
    flat = xp.reshape(a, (-1,))
    if weights is not None and weights.shape != a.shape:
        raise ValueError(f"{func}(): weights have shape {weights.shape}, a has {a.shape}; they must be equal")
    edges, compare = _bin_edges(flat, bins, range, func)
    nbins = edges.shape[0] - 1
    index = _bin_index(_dtypes.cast(flat._t, compare), _dtypes.cast(edges._t, compare))
    if weights is None:
        counts = torch.bincount(index, minlength=nbins + 1)[:nbins]
    else:
        w = weights._t.reshape(-1)
        total = torch.zeros(nbins + 1, dtype=_accumulator(w.dtype, w.device), device=w.device)
        counts = _dtypes.cast(total.index_add_(0, index, _dtypes.cast(w, total.dtype))[:nbins], w.dtype)
    if density:  # NumPy's counts / widths / total, in float64 (complex128 for complex weights)
        real = _on(counts.device, np.float64)
        counts = _dtypes.cast(counts, _on(counts.device, np.result_type(_public(counts.dtype), np.float64)))
        widths = _dtypes.cast(torch.diff(edges._t), real)  # as NumPy: differences in the edges' dtype
        counts = counts / widths / counts.sum()
    return wrap(counts), edges


@implements(np.bincount, arrays="x weights")
def bincount(x: A, weights: A | None = None, minlength: Any = 0) -> A:
    """numpy.bincount: occurrences of each non-negative integer of the 1-d ``x`` (int64), or the sums of their
    weights (float64)."""
    func = "numpy.bincount"
    if x.ndim != 1:
        raise ValueError(f"{func}(): x must be 1-dimensional, got shape {x.shape}")
    if x._t.dtype not in _dtypes.INTEGER and x._t.dtype is not _dtypes.bool:
        raise TypeError(f"{func}(): x must hold integers, got {_name(x._t.dtype)}")
    if minlength is None:
        raise TypeError(f"{func}(): minlength=None is not allowed; use 0")
    minlength = operator.index(minlength)
    if minlength < 0:
        raise ValueError(f"{func}(): minlength must not be negative, got {minlength}")
    t = _dtypes.cast(x._t, _dtypes.int64)
    if t.numel() and bool(torch.any(t < 0)):
        raise ValueError(f"{func}(): x must have no negative elements")
    w = None
    if weights is not None:
        if weights.shape != x.shape:
            raise ValueError(f"{func}(): weights have shape {weights.shape}, x has {x.shape}; they must be equal")
        if _is_complex(weights._t):
            raise TypeError(f"{func}(): weights must be real, got {_name(weights._t.dtype)}")
        w = _dtypes.cast(weights._t, _on(weights._t.device, np.float64))
    return wrap(torch.bincount(t, weights=w, minlength=minlength))
