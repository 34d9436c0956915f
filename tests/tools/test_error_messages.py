"""Errors that say what to write: half precision in fft and linalg, dask percentiles of NeuronArray chunks,
torch.Tensor operands, and precision modes spelled as explain() prints them.

Half precision follows NumPy 2: its fft transforms float16 in float32 precision (complex64 results), so every
fft function here does (float32 for the real results of irfft/hfft/irfftn; NumPy's 1-d irfft and hfft round
those to float16, its irfftn does not: one rule here); its linalg refuses float16 with a TypeError, so the
decompositions and solvers here refuse float16 and bfloat16 with a TypeError naming the function, the dtype and
the cast to write. The matmul-based and elementwise linalg functions (NumPy keeps float16 there) compute as usual.
"""

from __future__ import annotations

import functools
import operator
from unittest import mock

import dask.array as da
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import assert_same, to_numpy
from trn_backend import _precision
from trn_backend.kernels import reference

HALF = ("float16", "bfloat16")
MATRIX = np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]])

# ---------------------------------------------------------------- fft and linalg on float16 / bfloat16

_ONE_ARRAY_FFT = (
    "fft",
    "ifft",
    "rfft",
    "irfft",
    "hfft",
    "ihfft",
    "fftn",
    "ifftn",
    "rfftn",
    "irfftn",
    "fftshift",
    "ifftshift",
)


def test_every_fft_function_is_covered():
    assert set(xp.fft.__all__) == set(_ONE_ARRAY_FFT) | {"fftfreq", "rfftfreq"}


@pytest.mark.parametrize("name", _ONE_ARRAY_FFT)
@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize("numpy_route", [False, True], ids=["xp", "np"])
def test_fft_of_half_precision_computes_in_float32(name, half, numpy_route):
    """The namespace computes half-precision transforms in float32; NumPy's functions on a float16 NeuronArray
    answer as NumPy does on float16 (its normalization factor rounded to float16, irfft and hfft in float16)."""
    x = xp.astype(xp.asarray(MATRIX), half)
    got = getattr(np.fft if numpy_route else xp.fft, name)(x)
    if numpy_route and half == "float16" and not name.endswith("shift"):
        assert_same(got, getattr(np.fft, name)(np.asarray(x)), rtol=1e-3)
        return
    wide = np.asarray(xp.astype(x, xp.float32))  # the half values, exactly, in float32
    expected = getattr(np.fft, name)(wide)
    if name.endswith("shift"):
        assert got.dtype == x.dtype  # data movement keeps the dtype
        np.testing.assert_array_equal(np.asarray(got).astype(np.float32), expected)
        return
    assert_same(got, expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["fftfreq", "rfftfreq"])
@pytest.mark.parametrize("half", HALF)
def test_fft_frequencies_in_half_precision(name, half):
    got = getattr(xp.fft, name)(8, dtype=half)
    assert got.dtype == np.dtype(xp.float16 if half == "float16" else xp.bfloat16)
    np.testing.assert_array_equal(np.asarray(got), getattr(np.fft, name)(8).astype(got.dtype))


# (function, arguments from one matrix x); every linalg function of the namespace appears once
_LINALG = {
    "cholesky": lambda x: (x,),
    "det": lambda x: (x,),
    "eig": lambda x: (x,),
    "eigh": lambda x: (x,),
    "eigvals": lambda x: (x,),
    "eigvalsh": lambda x: (x,),
    "inv": lambda x: (x,),
    "matrix_rank": lambda x: (x,),
    "pinv": lambda x: (x,),
    "qr": lambda x: (x,),
    "slogdet": lambda x: (x,),
    "solve": lambda x: (x, x),
    "svd": lambda x: (x,),
    "svdvals": lambda x: (x,),
    # NumPy keeps float16 in these: they compute in x's dtype
    "cross": lambda x: (x, x),
    "diagonal": lambda x: (x,),
    "matmul": lambda x: (x, x),
    "matrix_norm": lambda x: (x,),
    "matrix_power": lambda x: (x, 2),
    "matrix_transpose": lambda x: (x,),
    "outer": lambda x: (x[0], x[1]),
    "tensordot": lambda x: (x, x),
    "trace": lambda x: (x,),
    "vecdot": lambda x: (x, x),
    "vector_norm": lambda x: (x,),
}
_REFUSED = (
    "cholesky",
    "det",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "inv",
    "matrix_rank",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "svd",
    "svdvals",
)


def test_every_linalg_function_is_covered():
    assert set(xp.linalg.__all__) == set(_LINALG)


@pytest.mark.parametrize("name", sorted(_LINALG))
@pytest.mark.parametrize("half", HALF)
def test_linalg_of_half_precision(name, half):
    x = xp.astype(xp.asarray(MATRIX), half)
    if name in _REFUSED:
        arg = "x1" if name == "solve" else "x"
        with pytest.raises(
            TypeError,
            match=rf"linalg\.{name}\(\).*{arg} of dtype {half}.*"
            rf"xp\.astype\({arg}, xp\.float32\)",
        ):
            getattr(xp.linalg, name)(*_LINALG[name](x))
        return
    result = getattr(xp.linalg, name)(*_LINALG[name](x))
    assert result.dtype == x.dtype
    expected = getattr(np.linalg, name)(
        *(to_numpy(xp.astype(a, xp.float64)) if isinstance(a, xp.NeuronArray) else a for a in _LINALG[name](x))
    )
    np.testing.assert_allclose(to_numpy(xp.astype(result, xp.float64)), expected, rtol=2e-2)


@pytest.mark.parametrize("half", HALF)
@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda x: np.linalg.inv(x), "inv"),
        (lambda x: np.linalg.solve(x, x), "solve"),
        (lambda x: np.linalg.svd(x), "svd"),
        (lambda x: np.linalg.eigh(x), "eigh"),
        (lambda x: np.linalg.norm(x, 2), "matrix_norm"),
        (lambda x: xp.linalg.matrix_norm(x, ord="nuc"), "matrix_norm"),
        (lambda x: np.linalg.matrix_power(x, -1), "inv"),
    ],
)
def test_numpy_linalg_of_half_precision_names_the_cast(call, name, half):
    x = xp.astype(xp.asarray(MATRIX), half)
    with pytest.raises(TypeError, match=rf"linalg\.{name}\(\).*{half}.*xp\.astype"):
        call(x)


# ---------------------------------------------------------------- dask percentiles of NeuronArray chunks


@given(
    values=st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=40, unique=True),
    chunk=st.integers(1, 9),
    q=st.lists(st.floats(0, 100), min_size=1, max_size=4).map(sorted),
    method=st.sampled_from(["linear", "lower", "higher", "midpoint", "nearest"]),
)
def test_dask_percentile_of_neuron_chunks_matches_numpy_chunks(values, chunk, q, method):
    """The oracle is dask on NumPy chunks, with its merge step's argsort made stable: dask merges the per-chunk
    percentiles sorted with NumPy's default (unstable) argsort, whose order of equal values decides some results;
    NeuronArray's sort is stable. q is sorted: dask's merge assumes it (it takes differences of q as counts)."""
    data = np.array(values)
    stable = functools.partial(np.argsort, kind="stable")
    with mock.patch.object(np, "argsort", stable):
        expected = da.percentile(da.from_array(data, chunks=chunk), q, method=method).compute(scheduler="sync")
    got = da.percentile(da.from_array(data, chunks=chunk).map_blocks(xp.asarray), q, method=method).compute(
        scheduler="sync"
    )
    assert isinstance(got, xp.NeuronArray)
    assert_same(got, expected)


def test_dask_percentile_of_a_chunked_neuron_array():
    x = xp.asarray(np.arange(20.0)[::-1].copy())
    got = da.percentile(da.from_array(x, chunks=5), [25, 50]).compute()
    assert_same(got, da.percentile(da.from_array(np.arange(20.0)[::-1].copy(), chunks=5), [25, 50]).compute())


# ---------------------------------------------------------------- torch.Tensor operands

_OPERATORS = (
    operator.add,
    operator.sub,
    operator.mul,
    operator.truediv,
    operator.floordiv,
    operator.mod,
    operator.pow,
    operator.matmul,
    operator.and_,
    operator.or_,
    operator.xor,
    operator.lshift,
    operator.rshift,
    operator.lt,
    operator.le,
    operator.gt,
    operator.ge,
    operator.eq,
    operator.ne,
    operator.iadd,
    operator.isub,
    operator.imul,
    operator.imatmul,
)


@pytest.mark.parametrize("op", _OPERATORS, ids=lambda op: op.__name__)
@pytest.mark.parametrize("tensor_first", [False, True])
def test_torch_tensor_operand_says_what_to_write(op, tensor_first):
    x, t = xp.ones((2, 2), dtype=xp.int32), torch.ones((2, 2), dtype=torch.int32)
    before = to_numpy(x).copy()
    with pytest.raises(TypeError, match=r"torch\.Tensor.*trn_backend\.asarray\(t\)"):
        op(t, x) if tensor_first else op(x, t)
    np.testing.assert_array_equal(to_numpy(x), before)


def test_wrapped_tensor_combines_without_a_copy():
    t = torch.arange(4.0)
    wrapped = xp.asarray(t)
    assert wrapped._t.data_ptr() == t.data_ptr()
    assert_same(xp.ones(4) + wrapped, np.arange(4.0) + 1)


# ---------------------------------------------------------------- precision modes spelled as explain() prints them


def _spellable_modes():
    """Every registered mode with every value of the parameters a string can spell (a torch.Generator cannot:
    sr's generator goes by keyword only)."""
    for name, mode in _precision.MODES.items():
        if "slices" in mode.params:
            for slices in range(1, reference.MAX_SLICES + 1):
                yield name, {"slices": slices}
        yield name, {}


@pytest.mark.parametrize(("name", "params"), list(_spellable_modes()))
def test_explain_spelling_round_trips(name, params):
    """The label explain() prints is accepted back by einsum, the context manager, explain and error_bound, and
    means the mode it was printed for."""
    a = xp.asarray(MATRIX.astype(np.float32))
    with xp.precision(name, **params):
        label = xp.explain("ij,jk->ik", a, a).steps[0].resolved.label
        by_keyword = xp.einsum("ij,jk->ik", a, a)
    assert_same(xp.einsum("ij,jk->ik", a, a, precision=label), to_numpy(by_keyword))
    with xp.precision(label):
        assert xp.explain("ij,jk->ik", a, a).steps[0].resolved.label == label
    assert xp.explain("ij,jk->ik", a, a, precision=label).steps[0].resolved.label == label
    assert xp.error_bound(label, xp.float32, 3) == xp.error_bound(name, xp.float32, 3, **params)


@given(
    name=st.sampled_from(sorted(_precision.MODES)),
    slices=st.integers(1, reference.MAX_SLICES),
    spaces=st.sampled_from(["", " "]),
)
def test_mode_spellings_parse_back(name, slices, spaces):
    params = {"slices": slices} if "slices" in _precision.MODES[name].params else {}
    inner = f"{spaces},{spaces}".join(f"{k}{spaces}={spaces}{v!r}" for k, v in params.items())
    spelled = f"{spaces}{name}{spaces}({spaces}{inner}{spaces}){spaces}"
    expected = _precision.Resolved(name, tuple(params.items())).label
    assert _precision.resolve(torch.float32, 8, torch.device("cpu"), precision=spelled).label == expected


@pytest.mark.parametrize(
    "spelled",
    [
        "ozaki(slices=5",
        "ozaki(5)",
        "ozaki(slices=x)",
        "ozaki(slices=5, slices=6)",
        "dd(slices=2)",
        "ozaki(slices=99)",
        "ozaki(slices=2.0)",
        "ozaki[slices=2]",
        "",
        "quad",
        "ozaki(slices=5)x",
    ],
)
@pytest.mark.parametrize("use", ["einsum", "context", "error_bound"])
def test_malformed_spellings_list_the_valid_ones(spelled, use):
    a = xp.ones((2, 2))
    with pytest.raises(ValueError, match=r"precision mode .*known: native, .*ozaki\(slices=N\) with N in 1\.\.16"):
        if use == "einsum":
            xp.einsum("ij,jk->ik", a, a, precision=spelled)
        elif use == "context":
            xp.precision(spelled)
        else:
            xp.error_bound(spelled, xp.float32, 8)


def test_a_parameter_given_twice_is_refused():
    with pytest.raises(TypeError, match="slices given twice"):
        xp.precision("ozaki(slices=4)", slices=5)


@pytest.mark.parametrize(
    "keyword, value", [("precision", "dd"), ("target_forward_error", 1e-6), ("target_relative_error", 1e-6)]
)
def test_opt_einsum_contract_with_a_precision_keyword_says_what_to_write(keyword, value):
    # a batched step: opt_einsum sends it to the backend's einsum, with the keywords it does not know itself
    import opt_einsum

    a, b = xp.ones((2, 3, 5)), xp.ones((3, 5))
    with pytest.raises(
        TypeError,
        match=rf"takes no {keyword}=: write `with trn_backend.precision\(...\):` "
        rf"around the call, or call trn_backend.contract",
    ):
        opt_einsum.contract("ijk,jk->ij", a, b, backend="trn", **{keyword: value})
    with pytest.raises(TypeError, match="unexpected keyword arguments bogus"):
        opt_einsum.contract("ijk,jk->ij", a, b, backend="trn", bogus=1)
