"""Complex element-wise functions at the edges of the floating-point range.

Every function runs on the product grid of special values (signed zeros, subnormals, tiny and huge normals, values
where exp overflows, the largest finite value, infinities, nan) as real and imaginary parts, and is compared with
NumPy 2 on the same values. Where the two differ on a finite input, mpmath decides: NumPy itself is wrong on some
edges (log1p(1e-8j) has real part 5e-17, NumPy answers 0; expm1(710 + 0j) has imaginary part 0, NumPy answers nan;
1/(1e308 + 1e308j) is 5e-309 - 5e-309j, NumPy answers 0). Infinite and nan inputs follow NumPy, which follows
C99 Annex G, except where the array API standard asks otherwise (listed in ``_STANDARD``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import COMPLEX_NAMES, from_numpy, to_numpy

NUMPY = {
    "log1p": np.log1p,
    "expm1": np.expm1,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "exp": np.exp,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
    "reciprocal": np.reciprocal,
    "sign": np.sign,
    "abs": np.abs,
}
MPMATH: dict[str, Callable] = {
    "log1p": lambda z: mpmath.log(1 + z),
    "expm1": lambda z: mpmath.exp(z) - 1,
    "log": mpmath.log,
    "log2": lambda z: mpmath.log(z) / mpmath.log(2),
    "log10": lambda z: mpmath.log(z) / mpmath.log(10),
    "sqrt": mpmath.sqrt,
    "exp": mpmath.exp,
    "sin": mpmath.sin,
    "cos": mpmath.cos,
    "tan": mpmath.tan,
    "sinh": mpmath.sinh,
    "cosh": mpmath.cosh,
    "tanh": mpmath.tanh,
    "asin": mpmath.asin,
    "acos": mpmath.acos,
    "atan": mpmath.atan,
    "asinh": mpmath.asinh,
    "acosh": mpmath.acosh,
    "atanh": mpmath.atanh,
    "reciprocal": lambda z: 1 / z,
    "sign": lambda z: z / abs(z),
    "abs": abs,
}
# the standard requires f(conj(z)) == conj(f(z)) of these, signed zeros included
CONJUGATE_SYMMETRIC = [n for n in NUMPY if n not in ("reciprocal", "sign", "abs")]
# 1 + z and exp(z) - 1 are exact at this precision for every finite input (parts span 2**-1074 .. 2**1024)
PRECISION = {"complex64": 400, "complex128": 2300}
# a signed zero part is evaluated as an infinitesimal of its sign, so that mpmath lands on C99's side of a branch
# cut (log(-1 - 0j) = -pi j) and signs the zeros of the result
INFINITESIMAL = mpmath.mpf(2) ** -(2**20)


def _real(dtype: str) -> type[np.floating]:
    return np.float32 if dtype == "complex64" else np.float64


def _grid(dtype: str) -> np.ndarray:
    f = np.finfo(_real(dtype))
    small, overflows_exp = (1e-4, 89.0) if dtype == "complex64" else (1e-8, 710.0)
    magnitudes = [
        0.0,
        f.smallest_subnormal,
        f.smallest_normal - f.smallest_subnormal,
        f.smallest_normal,
        small,
        1.0,
        overflows_exp,
        float(f.max) / 3,
        f.max,
        math.inf,
    ]
    values = np.array(magnitudes + [-v for v in magnitudes] + [math.nan], _real(dtype))
    re, im = np.meshgrid(values, values, indexing="ij")
    return _complex(re.ravel(), im.ravel(), dtype)


def _complex(re: np.ndarray, im: np.ndarray, dtype: str) -> np.ndarray:
    z = np.empty(re.shape, dtype)  # re + 1j * im would turn inf * 1j into nan + inf j
    z.real, z.imag = re, im
    return z


def _exact(name: str, z: complex, dtype: str, zero: mpmath.mpf = INFINITESIMAL) -> mpmath.mpc:
    def part(p: float) -> mpmath.mpf:
        return mpmath.mpf(p) if p != 0 else math.copysign(1, p) * zero

    with mpmath.workprec(PRECISION[dtype]):
        return mpmath.mpc(MPMATH[name](mpmath.mpc(part(z.real), part(z.imag))))


def _rounded(v: mpmath.mpf, dtype: str) -> float:
    """v rounded to the dtype's precision, the sign of an underflow kept (float() rounds once, to float64); a
    value beyond the dtype's range is its infinity."""
    with np.errstate(over="ignore"):
        r = float(_real(dtype)(float(v)))
    return math.copysign(r, float(v)) if r == 0 else r


def _round_complex(v: mpmath.mpc, dtype: str) -> complex:
    return complex(_rounded(v.real, dtype), _rounded(v.imag, dtype))


def _part_agrees(got: float, expected: float, scale: float, dtype: str, zero_sign: bool) -> bool:
    if math.isnan(expected) or math.isnan(got):
        return math.isnan(expected) and math.isnan(got)  # the sign of a nan is the platform's
    if got == expected:
        return got != 0 or not zero_sign or math.copysign(1, got) == math.copysign(1, expected)
    if math.isinf(got) or math.isinf(expected):
        return False
    # 4 units in the last place of the larger finite part: NumPy's and torch's libms each round a part of a
    # complex function to within a unit or two of that scale; a part much smaller than the other (the real part of
    # log1p(1e-8j) is 5e-17 beside 1e-8j) carries the absolute rounding error of the whole value
    return abs(got - expected) <= 4 * float(np.spacing(_real(dtype)(scale)))


def _agrees(got: complex, expected: complex, dtype: str, zero_sign: bool = True) -> bool:
    finite = [abs(p) for p in (expected.real, expected.imag) if math.isfinite(p)]
    scale = max(finite, default=0.0)
    return all(
        _part_agrees(g, e, scale, dtype, zero_sign) for g, e in ((got.real, expected.real), (got.imag, expected.imag))
    )


def _standard(name: str, z: complex, got: complex) -> bool:
    """Where the array API standard's special cases part from NumPy (and C99), the result follows the standard."""
    if name == "tanh" and math.isinf(z.real) and math.isfinite(z.imag):
        # tanh(+-inf + yj) = +-1 + 0j, the zero signed like y (C99 signs it like sin(2y))
        return (
            got.real == math.copysign(1, z.real)
            and got.imag == 0
            and (math.copysign(1, got.imag) == math.copysign(1, z.imag))
        )
    if name == "expm1" and not (math.isfinite(z.real) and math.isfinite(z.imag)):
        # the standard's expm1 at infinities and nan is C99's cexp(z) - 1; NumPy's expm1 (its own formula) answers
        # expm1(inf + 0j) = inf + nan j
        with np.errstate(all="ignore"):
            e = complex(np.exp(np.complex128(z)))
        return _agrees(got, complex(e.real - 1, e.imag), "complex128")
    if name == "expm1" and z == 0 and math.copysign(1, z.imag) > 0:
        # expm1(-0 + 0j) = 0 + 0j (NumPy: -0 + 0j)
        return got == 0 and math.copysign(1, got.real) > 0 and math.copysign(1, got.imag) > 0
    if name == "reciprocal" and z == 0:
        # as 1/z: a nonzero over zero is an infinity (C99 G.5.1; NumPy's reciprocal answers nan + nan j, its divide
        # inf + nan j)
        return math.isinf(got.real) or math.isinf(got.imag)
    if name == "sign" and (math.isnan(z.real) or math.isnan(z.imag)):
        return math.isnan(got.real) and math.isnan(got.imag)  # NumPy: sign(inf + nan j) = 1
    return False


@pytest.mark.parametrize("dtype", COMPLEX_NAMES)
@pytest.mark.parametrize("name", list(NUMPY))
def test_special_value_grid(name: str, dtype: str) -> None:
    z = _grid(dtype)
    got = to_numpy(getattr(xp, name)(from_numpy(z)))
    with np.errstate(all="ignore"):
        expected = NUMPY[name](z)
    # neither the standard nor C99 signs sign()'s zeros; NumPy's differ by quadrant (sign(1 - 0j) = 1 + 0j, but
    # sign(-0 + 2j) = -0 + 1j)
    zero_sign = name != "sign"
    wrong = []
    for zi, g, e in zip(z.tolist(), got.tolist(), expected.tolist(), strict=True):
        g, e = complex(g), complex(e)
        if _agrees(g, e, dtype, zero_sign) or _standard(name, zi, g):
            continue
        if math.isfinite(zi.real) and math.isfinite(zi.imag):
            # NumPy may be the one that is wrong
            v = _exact(name, zi, dtype)
            if _agrees(g, _round_complex(v, dtype), dtype, zero_sign):
                continue
            # the infinitesimal times the exponential of a huge part may not vanish (expm1(1e308 + 0j) has imaginary
            # part e**1e308 sin(0) = 0): there the value at exact zeros decides, its zeros unsigned
            v0 = _round_complex(_exact(name, zi, dtype, zero=mpmath.mpf(0)), dtype)
            if math.isinf(abs(_round_complex(v, dtype))) and _agrees(g, v0, dtype, zero_sign=False):
                continue
        wrong.append(f"{name}({zi!r}) = {g!r}, NumPy {e!r}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("dtype", COMPLEX_NAMES)
@pytest.mark.parametrize("name", CONJUGATE_SYMMETRIC)
def test_conjugate_symmetry_on_the_grid(name: str, dtype: str) -> None:
    z = _grid(dtype)
    z = z[~np.isnan(z)]  # conj flips a nan's sign bit, which the platform sets
    f = getattr(xp, name)
    direct = to_numpy(f(from_numpy(z))).tolist()
    mirrored = to_numpy(f(from_numpy(np.conj(z)))).tolist()
    wrong = [
        f"{name}({zi!r}) = {d!r}, {name}(conj) = {m!r}"
        for zi, d, m in zip(z.tolist(), direct, mirrored, strict=True)
        # beside a nan part C99 leaves the other part's sign unspecified (ccosh(0 + inf j) = nan +- 0j)
        if not (_agrees(d, m.conjugate(), dtype) or math.isnan(d.real) or math.isnan(d.imag))
    ]
    assert not wrong, "\n".join(wrong)


def test_the_edges_that_numpy_gets_wrong() -> None:
    """The cases the grid settles with mpmath, spelled out."""
    z = np.array([1e-8j, complex(1e-300, 1e-300)])
    np.testing.assert_allclose(to_numpy(xp.log1p(from_numpy(z))), [5e-17 + 1e-8j, complex(1e-300, 1e-300)], rtol=1e-15)
    e = complex(to_numpy(xp.expm1(from_numpy(np.array([complex(710, 1e-300)]))))[0])
    assert math.isinf(e.real) and e.imag == pytest.approx(math.exp(355) * 1e-300 * math.exp(355), rel=1e-13)
    r = complex(to_numpy(xp.reciprocal(from_numpy(np.array([complex(1e308, 1e308)]))))[0])
    assert r == pytest.approx(5e-309 - 5e-309j, rel=1e-15)
    s = complex(to_numpy(xp.sign(from_numpy(np.array([complex(5e-324, 5e-324), complex(0, math.inf)]))))[0])
    assert s == pytest.approx((1 + 1j) / math.sqrt(2), rel=1e-15)
    a = complex(to_numpy(xp.acos(from_numpy(np.array([complex(1, 1e-300)]))))[0])
    assert a == pytest.approx(math.sqrt(1e-300) * (1 - 1j), rel=1e-15)


def _finite(dtype: str) -> st.SearchStrategy[float]:
    """Nonzero finite floats of the dtype over its whole exponent range: a mantissa in [1, 2) times 2**e, signed
    (signed zeros, branch cuts and poles are the grid's)."""
    f = np.finfo(_real(dtype))
    width = 32 if dtype == "complex64" else 64
    mantissa = st.floats(1, 2, exclude_max=True, width=width)
    exponent = st.integers(int(np.log2(f.smallest_subnormal)), f.maxexp - 1)
    magnitude = st.builds(lambda m, e: float(_real(dtype)(math.ldexp(m, e))), mantissa, exponent)
    return magnitude.flatmap(lambda v: st.sampled_from([v, -v]))


@pytest.mark.heavy
@pytest.mark.parametrize("dtype", COMPLEX_NAMES)
@pytest.mark.parametrize("name", ["log1p", "expm1", "log", "sqrt", "exp"])
@given(data=st.data())
def test_accurate_over_the_whole_range(name: str, dtype: str, data: st.DataObject) -> None:
    values = data.draw(st.lists(st.tuples(_finite(dtype), _finite(dtype)), min_size=1, max_size=8))
    z = _complex(np.array([v[0] for v in values]), np.array([v[1] for v in values]), dtype)
    got = to_numpy(getattr(xp, name)(from_numpy(z))).tolist()
    eps = float(np.finfo(_real(dtype)).eps)
    tiny = float(np.finfo(_real(dtype)).smallest_subnormal)
    for zi, g in zip(z.tolist(), got, strict=True):
        v = _exact(name, zi, dtype)
        # the error of the complex value relative to its magnitude: a part far smaller than the other carries the
        # rounding error of the whole (only a correctly rounded algorithm could do better part by part)
        for gp, vp in ((g.real, v.real), (g.imag, v.imag)):
            r = _rounded(vp, dtype)
            if math.isinf(r) or math.isinf(gp):
                assert gp == r, (name, zi, g, complex(v))
            else:
                assert abs(mpmath.mpf(gp) - vp) <= 4 * eps * abs(v) + 2 * tiny, (name, zi, g, complex(v))
