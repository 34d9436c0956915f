"""The intentional differences from NumPy 2: ONE table of data. The harness (compare.py) consults it to relax
exactly these cases; every entry is a documented design choice (docs/numpy.md, "Where the answers differ from
NumPy's" and "In short"), with the condition it applies under. A bug is never an entry here: it is a failure of
the harness until it is fixed.

Fields: ``entries`` the short names it applies to ("*" for all), ``when`` the input condition (a predicate over
the drawn Case, described in ``condition``), ``differs`` what differs, ``relax`` how the harness relaxes it:

- ``scalar``: where NumPy returns a NumPy or Python scalar, a 0-d NeuronArray of the same dtype and value is right;
- ``dtype``: the result dtype is not compared; values are compared in NumPy's dtype;
- ``raises:<Exception>``: the call may raise that exception (or a subclass; several joined by ``|``) where NumPy
  answers;
- ``unordered``: results are compared as sorted multisets (an order NumPy leaves unspecified or unsorted);
- ``reference``: NumPy has no answer to compare with (it raises where the reference library lacks the case);
- ``skip``: the values are not comparable (a documented other dtype whose answer is an ulp step of it);
- ``stable``: NumPy's reference is called with ``kind="stable"`` (our sorts are stable whatever ``kind``);
- ``ulp``: memory after a write is compared within one unit in the last place of the dtype;
- ``shape``: only the result's dtype and shape are compared (and that neither side raises where the other answers).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Case:
    """What a difference's condition looks at: the entry point's short name, the array operands' dtypes and
    layouts, the other arguments, and the kind of check ("call" or "write")."""

    name: str
    dtypes: tuple[str, ...]
    layouts: tuple[str, ...]
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    kind: str = "call"
    source: str = "numpy"  # numpy, fallback, namespace, ufunc, operator, write
    nonfinite: bool = False  # an array operand holds inf or nan


@dataclass(frozen=True)
class Difference:
    entries: frozenset[str] | str
    condition: str
    when: Callable[[Case], bool]
    differs: str
    relax: str
    reason: str


SMALL_INTS = frozenset({"bool", "int8", "uint8", "int16", "uint16"})
# the floating ufuncs (and their namespace and NumPy-function forms): NumPy picks the smallest float that holds
# the input, the namespace its default floating dtype
FLOATING = frozenset(
    {
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atanh",
        "arccos",
        "arccosh",
        "arcsin",
        "arcsinh",
        "arctan",
        "arctanh",
        "atan2",
        "arctan2",
        "cos",
        "cosh",
        "sin",
        "sinh",
        "tan",
        "tanh",
        "exp",
        "expm1",
        "log",
        "log10",
        "log1p",
        "log2",
        "logaddexp",
        "sqrt",
        "hypot",
        "copysign",
        "nextafter",
        "reciprocal",
        "rint",
    }
)
SIGNED = frozenset({"int8", "int16", "int32", "int64"})
INTEGER = SIGNED | {"uint8", "uint16", "uint32", "uint64"}
INEXACT = frozenset({"float16", "bfloat16", "float32", "float64", "complex64", "complex128"})
# test_writes' views that NumPy answers with a view of their (reversed) operand and trn_backend with a read-only
# copy where that operand has negative steps (torch has none)
RESHAPING = frozenset(
    {
        "reshape",
        "ravel",
        "squeeze",
        "expand_dims",
        "transpose",
        "swapaxes",
        "moveaxis",
        "diagonal",
        "x.T",
        "rot90",
        "flip",
        "real",
        "imag",
        "x.real",
        "x.imag",
        "broadcast_to",
    }
)
# the functions that order their operands (the array API leaves complex operands out of them)
ORDERING = frozenset(
    {
        "max",
        "min",
        "argmax",
        "argmin",
        "sort",
        "argsort",
        "maximum",
        "minimum",
        "clip",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "searchsorted",
        "floor",
        "ceil",
        "trunc",
        "cumulative_max",
        "cumulative_min",
    }
)


def _big_int_into_float(case: Case) -> bool:
    """A write of a Python int that float64 cannot hold exactly (beyond 2**53) into a floating array."""
    value = case.kwargs.get("value")
    return case.kind == "write" and type(value) is int and abs(value) > 2**53 and bool(set(case.dtypes) & INEXACT)


# the functions whose answer on inf or nan comes from a BLAS, LAPACK or FFT library (NumPy's as much as torch's)
CONTRACTIONS = frozenset(
    {
        "dot",
        "vdot",
        "vecdot",
        "inner",
        "tensordot",
        "matmul",
        "einsum",
        "kron",
        "tensorinv",
        "tensorsolve",
        "multi_dot",
        "matrix_power",
    }
)


def _library_special_values(case: Case) -> bool:
    return (
        case.nonfinite
        and case.kind == "call"
        and (case.name in CONTRACTIONS or case.name.startswith(("linalg.", "fft.")))
    )


def _uint64_with_signed(case: Case) -> bool:
    return "uint64" in case.dtypes and bool(SIGNED & set(case.dtypes))


TABLE: tuple[Difference, ...] = (
    Difference(
        FLOATING,
        "every array operand is bool, int8, uint8, int16 or uint16",
        lambda c: bool(c.dtypes) and set(c.dtypes) <= SMALL_INTS,
        "result dtype float64 (the default floating dtype) where NumPy gives float16 or float32",
        "dtype",
        "docs/numpy.md, Where the answers differ: integer input of a floating-point operation computes in the "
        "device's default floating dtype",
    ),
    Difference(
        "*",
        "NumPy returns a NumPy scalar or a Python int/float (a reduction to one value)",
        lambda c: True,
        "a 0-d NeuronArray (it stays on the device) instead of a scalar",
        "scalar",
        "docs/numpy.md, Where the answers differ: reductions to a single value return a 0-d NeuronArray",
    ),
    Difference(
        frozenset({"nextafter"}),
        "every array operand is bool, int8, uint8, int16 or uint16",
        lambda c: bool(c.dtypes) and set(c.dtypes) <= SMALL_INTS,
        "the step is one ulp of float64 (the default floating dtype) where NumPy's is one of float16/float32",
        "skip",
        "docs/numpy.md, Where the answers differ: integer input of a floating-point operation computes in the "
        "default floating dtype (the values differ with the dtype for nextafter)",
    ),
    Difference(
        "*",
        "an integer operand with a floating or complex operand narrower than NumPy's result (int16 with "
        "float16, int32/int64 with float32, ...)",
        lambda c: bool(set(c.dtypes) & INTEGER) and bool(set(c.dtypes) & INEXACT),
        "the floating operand's dtype (the higher kind) where NumPy widens to hold the integer",
        "dtype",
        "docs/usage.md: mixing kinds (int with float arrays) gives the higher kind (torch's convention)",
    ),
    Difference(
        frozenset(
            {
                "remainder",
                "fmod",
                "floor_divide",
                "divmod",
                "__mod__",
                "__rmod__",
                "__imod__",
                "__floordiv__",
                "__rfloordiv__",
                "__ifloordiv__",
                "__divmod__",
                "__rdivmod__",
            }
        ),
        "an integer operand with a floating operand narrower than NumPy's result (the entry above)",
        lambda c: bool(set(c.dtypes) & INTEGER) and bool(set(c.dtypes) & INEXACT),
        "the integer is rounded to the floating dtype first, so a remainder or floor quotient of an integer that "
        "dtype cannot hold (2147483647 in float32) differs by far more than a rounding, where NumPy computes in "
        "the wider dtype",
        "skip",
        "docs/usage.md: mixing kinds (int with float arrays) gives the higher kind (torch's convention); a "
        "remainder is not continuous in its operands, so that one rounding can change it entirely",
    ),
    Difference(
        frozenset({"unique", "unique_values", "unique_counts", "unique_inverse", "unique_all"}),
        "any input",
        lambda c: True,
        "the order of the unique values: always sorted (NumPy 2.4's unique_values/unique_counts may not be)",
        "unordered",
        "docs/numpy.md, Where the answers differ: np.unique is always stable and sorted",
    ),
    Difference(
        frozenset({"reciprocal"}),
        "a namespace call on an integer operand",
        lambda c: c.source == "namespace" and bool(set(c.dtypes) & INTEGER),
        "the namespace's reciprocal is floating where NumPy's integer reciprocal truncates",
        "skip",
        "docs/numpy.md, Where the answers differ: the namespace's reciprocal is floating",
    ),
    Difference(
        "*",
        "a bfloat16 operand where NumPy (ml_dtypes) has no promotion or loop: NumPy raises "
        "DTypePromotionError, or OverflowError for a Python int beyond int64, or gives object",
        lambda c: "bfloat16" in c.dtypes,
        "trn_backend answers (bfloat16 as in JAX) where the reference raises or answers in object dtype",
        "reference",
        "docs/numpy.md, What dispatch does: bfloat16 works wherever torch has kernels; ml_dtypes' NumPy "
        "bfloat16 lacks promotions with most integer dtypes, so the reference has no answer",
    ),
    Difference(
        "*",
        "a bfloat16 operand where NumPy (ml_dtypes) computes in float32 or float64 (no bfloat16 loop, or a "
        "promotion with an integer or a Python float)",
        lambda c: "bfloat16" in c.dtypes,
        "the result stays bfloat16 (as in JAX) where NumPy's is float32/float64",
        "dtype",
        "docs/numpy.md, What dispatch does: bfloat16 (ml_dtypes' type, as in JAX) works wherever torch has kernels; "
        "ml_dtypes gives NumPy few bfloat16 loops, so the reference widens",
    ),
    Difference(
        frozenset({"+=", "add out=", "negative out="}),
        "the target is np.asarray(x) (an ndarray) and the value a NeuronArray",
        lambda c: c.kind == "write" and bool(c.args) and c.args[0] == "asarray" and len(c.layouts) > 1,
        "TypeError: out= must be a NeuronArray, where NumPy writes into the ndarray",
        "raises:TypeError",
        "docs/numpy.md, What dispatch does (out= takes NeuronArrays) and What it does not do (no silent "
        "device-to-host copies)",
    ),
    Difference(
        "*",
        "a namespace function (the array API) or an operator of the array object on a bool operand, or "
        "ordering complex operands",
        lambda c: (
            c.source in ("namespace", "operator")
            and (
                "bool" in c.dtypes
                or (
                    c.name in ORDERING
                    and (bool({"complex64", "complex128"} & set(c.dtypes)) or any(type(a) is complex for a in c.args))
                )
            )
        ),
        "TypeError where NumPy computes on bool (add, sum, sign, ... of bools) or orders complex numbers",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: the namespace and the operators are the array API standard's, "
        "which defines arithmetic on numeric dtypes only and no order of complex numbers (array-api-strict "
        "raises TypeError the same way)",
    ),
    Difference(
        frozenset({"matmul"}),
        "an operator with a Python list operand ([[1.0, 2.0]] @ x)",
        lambda c: c.source == "operator" and any(isinstance(a, list) for a in c.args),
        "TypeError where NumPy converts the list to an array",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: the operators take arrays and Python scalars, as the array API "
        "standard's do; np.matmul(list, x) converts lists",
    ),
    Difference(
        frozenset({"round"}),
        "round() of a 0-d array",
        lambda c: c.source == "operator",
        "a Python number, as round() of a NumPy scalar gives, where a 0-d ndarray has no __round__",
        "reference",
        "docs/usage.md, dtypes: a 0-d array behaves like a number where Python asks for one (reductions return "
        "0-d arrays where NumPy returns scalars)",
    ),
    Difference(
        "*",
        "a NumPy function writing into a lazy conjugate (trn_backend.from_torch(t.conj())): np.copyto, a ufunc's out=",
        lambda c: (
            c.kind == "write"
            and "lazy_conj" in c.layouts
            and bool(c.args)
            and c.args[0]
            in (
                "itself",
                "slice",
                "reversed",
                "reshape",
                "ravel",
                "transpose",
                "swapaxes",
                "expand_dims",
                "squeeze",
                "moveaxis",
                "flip",
                "rot90",
                "diagonal",
                "broadcast_to",
                "asarray",
                "x.T",
            )
            and c.name in ("copyto", "add out=", "negative out=")
        ),
        "ValueError: NumPy sees a lazy conjugate as a read-only copy of its values, where NumPy's array is plain",
        "raises:ValueError",
        "docs/numpy.md, Writeability and views (Lazy conjugates): NumPy cannot see torch's conjugate bit, so a NumPy "
        "function writing into such an array raises instead of writing into a copy",
    ),
    Difference(
        frozenset({"np.from_dlpack"}),
        "a write through np.from_dlpack of a view with negative steps",
        lambda c: c.kind == "write" and "reversed" in c.layouts,
        "ValueError (the export is a read-only copy) where NumPy's export is a view the write goes through",
        "raises:ValueError",
        "docs/numpy.md, Writeability and views: torch has no negative strides, so such a view exports a read-only copy",
    ),
    Difference(
        "*",
        "a Python int beyond 2**53 written into a floating array (fill, x[...] =, x.flat, copyto)",
        _big_int_into_float,
        "rounded once, to the nearest value of the dtype, where NumPy rounds it to float64 first and then to "
        "float32/float16/bfloat16 (the two differ by at most one unit in the last place)",
        "ulp",
        "docs/numpy.md, Where the answers differ: a Python int is rounded once to a floating dtype",
    ),
    Difference(
        "*",
        "a product, a solve, a decomposition or an FFT with inf or nan in an operand",
        _library_special_values,
        "which outputs are inf and which nan (and NumPy's own answer differs between np.matmul and np.einsum on "
        "the same data): only the dtype and shape are compared",
        "shape",
        "docs/numpy.md, Where the answers differ: inf and nan in products, solves and FFTs follow the library "
        "kernels' arithmetic; tests/numpy_dispatch/test_special_values.py checks products against the textbook "
        "formula instead",
    ),
    Difference(
        "*",
        "a product, a solve, a decomposition or an FFT with inf or nan in an operand",
        _library_special_values,
        "numpy.linalg.LinAlgError (torch's LAPACK refuses to converge) where NumPy's LAPACK answers with NaNs",
        "raises:LinAlgError",
        "docs/numpy.md, Where the answers differ: inf and nan in products, solves and FFTs follow the library "
        "kernels' arithmetic",
    ),
    Difference(
        frozenset(
            {
                "fft.fft",
                "fft.ifft",
                "fft.rfft",
                "fft.irfft",
                "fft.hfft",
                "fft.ihfft",
                "fft.fftn",
                "fft.ifftn",
                "fft.rfftn",
                "fft.irfftn",
            }
        ),
        "a namespace call on a float16 operand",
        lambda c: c.source == "namespace" and "float16" in c.dtypes,
        "computed and returned in float32 (complex64) where NumPy returns float16 from irfft and hfft",
        "dtype",
        "docs/numpy.md, Where the answers differ: the namespace's FFTs compute half precision in float32",
    ),
    Difference(
        frozenset({"linalg.eig", "linalg.eigvals"}),
        "a namespace call on a real floating matrix",
        lambda c: c.source == "namespace" and not ({"complex64", "complex128"} & set(c.dtypes)),
        "complex eigenvalues always, where NumPy's are real when all of them are",
        "dtype",
        "the array API standard's eig and eigvals return a complex floating-point array; numpy.linalg.eig on a "
        "NeuronArray keeps NumPy's rule (docs/numpy.md, Where the answers differ)",
    ),
    Difference(
        frozenset({"round", "around"}),
        "np.round of bools, or the rint ufunc (named round here, its namespace "
        "function) of bool, int8, uint8, int16 or uint16: floating operations",
        lambda c: (
            (c.source in ("numpy", "fallback") and set(c.dtypes) == {"bool"})
            or (c.source == "ufunc" and bool(c.dtypes) and set(c.dtypes) <= SMALL_INTS)
        ),
        "result dtype float64 (the default floating dtype) where NumPy gives float16",
        "dtype",
        "docs/numpy.md, Where the answers differ: integer input of a floating-point operation computes in the "
        "device's default floating dtype",
    ),
    Difference(
        frozenset({"floor_divide", "remainder"}),
        "the namespace or an operator (// and %)",
        lambda c: c.source in ("namespace", "operator"),
        "the standard's special cases for infinities and NaN (-2.0 // inf is -0.0, inf // 3.0 inf) where NumPy's "
        "floor division gives -1.0 and nan",
        "skip",
        "docs/numpy.md, Where the answers differ: the namespace's floor_divide and remainder follow the standard's "
        "special cases",
    ),
    Difference(
        frozenset({"asarray", "astype"}),
        "a namespace call with a complex operand and a real dtype",
        lambda c: c.source == "namespace" and bool({"complex64", "complex128"} & set(c.dtypes)),
        "TypeError where NumPy keeps the real part (with a ComplexWarning)",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: the namespace's asarray and astype refuse complex input into a "
        "real dtype, a cast the standard leaves out",
    ),
    Difference(
        frozenset({"asarray", "array", "astype", "full", "full_like", "asanyarray", "ascontiguousarray"}),
        "NaN, an infinity or a float beyond an integer dtype's range converted into that integer dtype",
        lambda c: (
            bool(set(c.dtypes) & INEXACT) or any(isinstance(a, float | complex) for a in (*c.args, *c.kwargs.values()))
        ),
        "ValueError or OverflowError where NumPy stores a platform-dependent value with a RuntimeWarning",
        "raises:ValueError|OverflowError",
        "docs/numpy.md, Where the answers differ: values an integer dtype cannot hold raise",
    ),
    Difference(
        frozenset({"take"}),
        "a namespace call without axis on an array of more than one dimension",
        lambda c: c.source == "namespace" and c.kwargs.get("axis") is None,
        "ValueError where NumPy takes from the flattened array",
        "raises:ValueError",
        "the array API standard's take: for an array of more than one dimension, providing an axis is required",
    ),
    Difference(
        frozenset({"pad"}),
        "constant_values out of the range of an unsigned integer dtype",
        lambda c: bool(set(c.dtypes) & {"uint8", "uint16", "uint32", "uint64"}),
        "OverflowError where NumPy's pad wraps the value into the unsigned dtype",
        "raises:OverflowError",
        "docs/numpy.md, Where the answers differ: pad's constant_values are range-checked in every integer dtype",
    ),
    Difference(
        "*",
        "a uint64 operand with a signed integer operand",
        _uint64_with_signed,
        "TypeError where NumPy promotes to float64",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: promotions the array API standard forbids stay errors",
    ),
    Difference(
        frozenset({"reciprocal"}),
        "an integer or bool operand",
        lambda c: bool(set(c.dtypes) & (SIGNED | {"bool", "uint8", "uint16", "uint32", "uint64"})),
        "TypeError where NumPy's integer reciprocal truncates",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: np.reciprocal of integers raises TypeError",
    ),
    Difference(
        frozenset({"argsort", "sort"}),
        "ties",
        lambda c: True,
        "the order of equal elements: always stable (NumPy's default quicksort is not)",
        "stable",
        "docs/numpy.md, Where the answers differ: np.sort, np.argsort and np.unique are always stable",
    ),
    Difference(
        frozenset({"unique", "unique_all", "unique_counts", "unique_inverse", "unique_values"}),
        "a complex operand",
        lambda c: bool({"complex64", "complex128"} & set(c.dtypes)),
        "raises where NumPy sorts complex numbers lexicographically",
        "raises:TypeError",
        "docs/numpy.md, Where the answers differ: np.unique of complex arrays is not supported",
    ),
    Difference(
        "*",
        "a write into the reshape of a reversed view (layout reshape_of_reversed), or through a function "
        "NumPy answers with a view of a reversed one (reshape, ravel, squeeze, expand_dims, ...)",
        lambda c: (
            c.kind == "write"
            and (
                "reshape_of_reversed" in c.layouts
                or ("reversed" in c.layouts and bool(c.args) and c.args[0] in RESHAPING)
            )
        ),
        "ValueError (a read-only copy) where NumPy's reshape is a view that the write goes through",
        "raises:ValueError",
        "docs/numpy.md, In short: torch has no negative strides; where NumPy answers with a view of x[::-1] the "
        "result is a copy that refuses writes with a ValueError rather than dropping them",
    ),
)


def applicable(case: Case) -> list[Difference]:
    """The entries that apply to a case."""
    return [d for d in TABLE if (d.entries == "*" or case.name in d.entries) and d.when(case)]


def relaxations(case: Case) -> set[str]:
    return {d.relax for d in applicable(case)}
