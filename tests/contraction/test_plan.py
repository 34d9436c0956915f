"""The planner: plans as plain data, the cache, views instead of copies, output order, per-step precision, and
the exact integer kernel behind native mode."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import assert_same, from_numpy
from trn_backend import _precision, kernels, testing
from trn_backend.contraction import plan as planner
from trn_backend.contraction.compiler import compile
from trn_backend.contraction.parse import Spec, parse
from trn_backend.contraction.program import single
from trn_backend.kernels import reference

CPU = torch.device("cpu")
F32 = torch.float32


def _step_plan(inputs, output, shapes, dtypes, precision=None, target_forward_error=None) -> planner.Plan:
    """The plan of one step, compiled as its own program under the request these arguments make (or the
    precision block in force)."""
    request = _precision.request_of(precision, target_forward_error, None, "test")
    program = single(Spec(tuple(inputs), output), tuple(tuple(s) for s in shapes))
    return compile(program, request, dtypes, CPU).plans[0]


def _plan(subscripts: str, *shapes, dtype=F32, **kw) -> planner.Plan:
    spec = parse(subscripts, shapes)
    return _step_plan(spec.inputs, spec.output, shapes, (dtype,) * len(shapes), **kw)


def test_plans_are_plain_frozen_hashable_printable_data():
    p = _plan("bij,bjk->bik", (2, 3, 4), (2, 4, 5))
    assert p.kernel == "bmm" and p.bmkn == (2, 3, 4, 5) and p.resolved.mode == "native" and p.shape == (2, 3, 5)
    assert p.flops == 2 * 2 * 3 * 4 * 5 and p.size == 30
    assert "bij,bjk->bik" in repr(p) and "bmm" in repr(p)
    assert hash(p) == hash(dataclasses.replace(p)) and p == dataclasses.replace(p)
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.kernel = "matmul"  # type: ignore[misc]


def test_cache_by_labels_shapes_dtypes_and_mode():
    planner.entry.cache_clear()
    p1 = _plan("ij,jk->ik", (2, 3), (3, 4))
    assert _plan("ij,jk->ik", (2, 3), (3, 4)) is p1
    assert planner.entry.cache_info().hits == 1
    assert _plan("ij,jk->ik", (2, 3), (3, 5)) is not p1  # shapes
    assert _plan("ij,jk->ik", (2, 3), (3, 4), dtype=torch.float64).dtype == torch.float64  # dtypes
    fast = _plan("ij,jk->ik", (2, 3), (3, 4), precision="fast")
    assert fast.resolved.mode == "fast" and fast is not p1
    assert dataclasses.replace(fast, resolved=p1.resolved) == p1
    assert _plan("ij,jk->ik", (2, 3), (3, 4), precision="fast") is fast
    with xp.precision("dd"):  # the active context reaches the plan
        assert _plan("ij,jk->ik", (2, 3), (3, 4)).resolved.mode == "dd"


def test_matmul_without_batch_bmm_with_one():
    assert _plan("ij,jk->ik", (2, 3), (3, 4)).kernel == "matmul"
    assert _plan("bij,bjk->bik", (1, 3, 4), (1, 4, 5)).kernel == "matmul"  # a batch of one is no batch
    assert _plan("ij,ij->ij", (2, 3), (2, 3)).bmkn == (6, 1, 1, 1)  # Hadamard: batch only
    assert _plan("i,j->ij", (2,), (3,)).bmkn == (1, 2, 1, 3)  # outer: K = 1
    assert _plan("ii->", (3, 3)).kernel is None  # one operand: a trace is no contraction


def test_output_order_needs_no_permute_when_the_second_operand_leads():
    p = _plan("ij,jk->ki", (2, 3), (3, 4))
    assert p.order == (1, 0) and p.out_perm is None and p.out_shape is None
    p = _plan("bij,bjk->bki", (2, 3, 4), (2, 4, 5))
    assert p.order == (1, 0) and p.out_perm is None


def test_pre_reductions_diagonals_and_broadcast():
    p = _plan("iij,jkl->ik", (3, 3, 4), (4, 5, 6))
    a, b = p.operands
    assert a.diagonals == ((0, 1),) and b.summed == (2,)  # l is summed on its own side, before the kernel
    assert p.bmkn == (1, 3, 4, 5)
    p = _plan("ij,jk->ik", (2, 1), (3, 4))  # j broadcasts: A lacks it, B sums it out
    assert p.operands[1].summed == (0,) and p.bmkn[2] == 1


class _Recorder:
    """Replaces the kernels and records their operands."""

    def __init__(self, monkeypatch):
        self.operands: list[tuple[torch.Tensor, torch.Tensor]] = []
        for name in ("matmul", "bmm"):
            real = getattr(kernels, name)
            monkeypatch.setattr(kernels, name, self._wrap(real))

    def _wrap(self, real):
        def kernel(a, b, mode="native", **params):
            self.operands.append((a, b))
            return real(a, b, mode, **params)

        return kernel


@pytest.mark.parametrize(
    "subscripts, shapes",
    [
        ("ij,jk->ik", [(4, 5), (5, 6)]),
        ("ji,jk->ik", [(5, 4), (5, 6)]),  # transposed operand: a strided view, no copy
        ("abc,cd->abd", [(2, 3, 5), (5, 6)]),  # merged free indices
        ("abcd,cdef->abef", [(2, 3, 4, 5), (4, 5, 6, 7)]),  # merged contracted indices
        ("bij,bjk->bik", [(3, 4, 5), (3, 5, 6)]),
        ("bij,bkj->bik", [(3, 4, 5), (3, 6, 5)]),
    ],
)
def test_operands_reach_the_kernel_as_views(monkeypatch, subscripts, shapes):
    rec = _Recorder(monkeypatch)
    ts = [torch.randn(s) for s in shapes]
    out = xp.einsum(subscripts, *map(xp.NeuronArray, ts))
    ((a, b),) = rec.operands
    ptrs = {t.untyped_storage().data_ptr() for t in ts}
    assert {a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()} == ptrs
    np.testing.assert_allclose(out._t.numpy(), np.einsum(subscripts, *(t.numpy() for t in ts)), rtol=1e-5, atol=1e-5)


def test_intermediates_leave_the_kernel_in_the_order_the_next_step_uses():
    ops = [xp.NeuronArray(torch.randn(s)) for s in ((2, 3, 4), (4, 5), (3, 5, 6))]
    steps = _step_plan  # the path's own plans
    spec = parse("abc,cd,bde->ae", tuple(o.shape for o in ops))
    from trn_backend.contraction import paths

    for step in paths.steps(spec, tuple(o.shape for o in ops)).steps[:-1]:
        assert steps(step.inputs, step.output, step.shapes, (F32,) * len(step.inputs)).out_perm is None


def test_each_binary_step_resolves_its_own_k(monkeypatch):
    seen = []
    mode_for, select = _precision.mode_for, _precision.select

    def spy_mode(request, dtype, K, *args, **kw):
        seen.append(K)
        return mode_for(request, dtype, K, *args, **kw)

    def spy_select(dtype, K, *args, **kw):
        seen.append(K)
        return select(dtype, K, *args, **kw)

    monkeypatch.setattr(_precision, "mode_for", spy_mode)
    monkeypatch.setattr(_precision, "select", spy_select)
    testing.reset_caches()  # compiled afresh, not found in the fast path
    a, b, c = (xp.NeuronArray(torch.randn(s)) for s in ((2, 16), (16, 700), (700, 3)))
    xp.einsum("ij,jk,kl->il", a, b, c, optimize=[(0, 1), (0, 1)])
    assert seen == [16, 700]
    # with a target, on the CPU, native's bound meets it at K = 16 but fp64 is needed at K = 700; resolving from
    # the product of the contracted sizes (16 * 700) would give fp64 twice
    target = 3e-5
    assert [_precision.select_precision(F32, K, target).mode for K in (16, 700, 16 * 700)] == ["native", "fp64", "fp64"]
    seen.clear()
    with kernels.count_calls() as calls:
        xp.einsum("ij,jk,kl->il", a, b, c, optimize=[(0, 1), (0, 1)], target_forward_error=target)
    assert seen == [16, 700] and calls == {("matmul", "native"): 1, ("matmul", "fp64"): 1}


def test_single_operand_results_are_views_where_numpy_would_allow():
    t = torch.randn(3, 4)
    out = xp.einsum("ij->ji", xp.NeuronArray(t))
    assert out._t.untyped_storage().data_ptr() == t.untyped_storage().data_ptr()


@pytest.mark.parametrize("dtype", ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"])
def test_native_kernel_is_exact_for_integers_and_bool(dtype):
    rng = np.random.default_rng(0)
    info = np.iinfo(dtype) if dtype != "bool" else None
    if info is None:
        a, b = rng.random((2, 3, 7)) < 0.3, rng.random((2, 7, 4)) < 0.3
    else:  # full-range values: products and sums wrap modulo 2**bits, as NumPy's do
        a = rng.integers(info.min, info.max, (2, 3, 7), dtype=dtype, endpoint=True)
        b = rng.integers(info.min, info.max, (2, 7, 4), dtype=dtype, endpoint=True)
    expected = np.matmul(a, b)
    ta, tb = from_numpy(a)._t, from_numpy(b)._t
    assert_same(xp.NeuronArray(reference.native(ta, tb)), expected)
    assert_same(xp.NeuronArray(reference.native(ta[0], tb[0])), expected[0])
    if dtype != "bool":  # the broadcast multiply-sum used where torch has no integer GEMM (CUDA)
        got = reference._native._multiply_sum(
            *(x.view(torch.int64) if dtype == "uint64" else x.long() for x in (ta, tb))
        )
        assert_same(xp.NeuronArray(got.view(torch.uint64) if dtype == "uint64" else got.to(ta.dtype)), expected)


@pytest.mark.parametrize(
    "subscripts, shapes, dtype, calls",
    [
        ("Qmn,mi->Qni", [(64, 32, 48), (32, 8)], "float64", 1),  # the DF-MP2 first step
        ("mi,Qmn->iQn", [(32, 8), (64, 32, 48)], "float64", 1),  # as opt_einsum's tensordot orders it
        ("Qmn,mi->inQ", [(64, 32, 48), (32, 8)], "int64", 1),
        ("bQmn,bmi->bQni", [(2, 40, 32, 40), (2, 32, 5)], "complex128", 2),  # with a shared batch index too
        ("bQmn,bmi->bQni", [(40, 2, 32, 40), (40, 32, 5)], "float64", 2),  # ... longer than the broadcast one
        ("bcQmn,bcmi->cbQni", [(2, 3, 20, 32, 40), (2, 3, 32, 5)], "int64", 6),  # two shared indices
    ],
)
def test_broadcast_batching_keeps_both_operands_views(monkeypatch, subscripts, shapes, dtype, calls):
    """[lead, K, trail] operands would be copied to [lead*trail, K]; the planner batches over lead instead, with
    the small operand broadcast (stride 0), so the large one reaches bmm as a view, and so does the small one: a
    shared batch index, which a stride-0 dimension cannot merge with, makes the kernel run once per entry of
    the shorter of the two batch axes rather than copy the broadcast."""
    rec = _Recorder(monkeypatch)
    rng = np.random.default_rng(0)
    arrays = [rng.integers(-3, 4, s).astype(dtype) for s in shapes]
    ts = [from_numpy(a) for a in arrays]
    got = xp.einsum(subscripts, *ts)
    assert_same(got, np.einsum(subscripts, *arrays))
    inputs = {t._t.untyped_storage().data_ptr() for t in ts}
    assert len(rec.operands) == calls == xp.explain(subscripts, *ts).kernel_calls
    for a, b in rec.operands:
        assert {a.untyped_storage().data_ptr(), b.untyped_storage().data_ptr()} <= inputs  # views, no copies


@settings(max_examples=30)
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=2),
    st.integers(2, 4),
    st.integers(2, 3),
    st.integers(2, 3),
    st.integers(1, 3),
    st.booleans(),
    st.sampled_from(["float64", "complex128", "int64"]),
    st.sampled_from([{}, {"precision": "dd"}, {"target_relative_error": 1e-9}]),
)
def test_broadcast_batching_beside_shared_batch_indices_matches_numpy(shared, q, m, n, i, reorder, dtype, how):
    """Every size of shared and broadcast batch axes (the kernel looping over the shorter, or one call where
    nothing is shared), output orders, dtypes, and the modes and targets that run the step another way."""
    if dtype == "int64" and how or dtype == "complex128" and "target_relative_error" in how:
        how = {}  # integer products are exact, in native only; complex parts can cancel to 0, out of a relative reach
    s = "bc"[: len(shared)]
    out = f"{s[::-1]}inQ" if reorder else f"{s}Qni"
    subscripts = f"{s}Qmn,{s}mi->{out}"
    shapes = [(*shared, q, m, n), (*shared, m, i)]  # the first the larger: [shared, Q, contracted, trail]
    rng = np.random.default_rng(sum(shapes[0]) + 7 * sum(shapes[1]))
    arrays = [rng.integers(1, 4, sh).astype(dtype) for sh in shapes]  # positive: no entry of C cancels to 0
    if dtype == "complex128":
        arrays = [a + 1j * rng.integers(-3, 4, a.shape) for a in arrays]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(planner, "SPREAD_MIN_ELEMENTS", 0)
        mp.setattr(planner, "SPREAD_MIN_SLICE", 0)
        testing.reset_caches()
        try:
            (step,) = xp.explain(subscripts, *shapes, dtype=getattr(xp, dtype), precision=how.get("precision")).steps
            got = xp.einsum(subscripts, *map(from_numpy, arrays), **how)
        finally:
            testing.reset_caches()
    assert (step.loop is not None) == (np.prod(shared) > 1)
    assert step.loop is None or step.loop[1] == min(np.prod(shared), q)
    assert_same(got, np.einsum(subscripts, *arrays))  # small integers: every mode's products and sums are exact


def test_broadcast_batching_only_where_it_pays():
    assert _plan("Qmn,mi->Qni", (64, 32, 48), (32, 8)).kernel == "bmm"
    assert _plan("Qmn,mi->Qni", (4, 8, 8), (8, 2)).kernel == "matmul"  # small: the copy is cheap
    assert _plan("Qmn,mi->Qni", (4096, 4, 4), (4, 2)).kernel == "matmul"  # tiny per-batch products


def test_paths_keep_broadcast_batched_intermediates_unpermuted():
    from trn_backend.contraction import paths

    shapes = ((64, 32, 48), (32, 8), (48, 7))
    spec = parse("Qmn,mi,na->Qia", shapes)
    step = paths.steps(spec, shapes, [(0, 1), (0, 1)]).steps[0]
    p = _step_plan(step.inputs, step.output, step.shapes, (F32, F32))
    assert p.kernel == "bmm" and p.out_perm is None
    arrays = [np.random.default_rng(1).standard_normal(s) for s in shapes]
    got = xp.einsum("Qmn,mi,na->Qia", *map(from_numpy, arrays), optimize=[(0, 1), (0, 1)])
    np.testing.assert_allclose(got._t.numpy(), np.einsum("Qmn,mi,na->Qia", *arrays), rtol=1e-10)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.complex64, torch.int32])
@pytest.mark.parametrize(
    "kernel, shapes",
    [
        ("matmul", [(5, 7), (7, 3)]),
        ("matmul", [(1, 9), (9, 1)]),
        ("bmm", [(4, 5, 7), (4, 7, 3)]),
    ],
)
def test_native_kernel_calls_match_the_reference_bit_for_bit(kernel, shapes, dtype):
    """The kernel layer runs floating-point native steps as mm / bmm (dot for a dot product) directly: the
    same results as ``reference.native``, each call counted."""
    g = torch.Generator().manual_seed(0)
    a, b = ((torch.randn(s, generator=g, dtype=torch.float64) * 8).to(dtype) for s in shapes)
    if kernel == "bmm":  # a stride-0 operand, as broadcast batching makes them
        b = b[:1].expand(b.shape)
    with kernels.count_calls() as calls:
        got = getattr(kernels, kernel)(a, b, "native")
    assert calls == {(kernel, "native"): 1}
    want = reference.native(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    if shapes[0][0] == 1 and dtype.is_floating_point:  # dot: another summation order, within native's bound
        torch.testing.assert_close(got.double(), want.double(), rtol=0.05, atol=2.0)
    else:
        assert torch.equal(got, want)
    with pytest.raises(ValueError, match="unknown kernel mode"):
        getattr(kernels, kernel)(a, b, "nonesuch")


def test_plans_made_for_a_mode_equal_the_replaced_base():
    e = planner.entry(("abc", "cd"), "abd", ((2, 3, 4), (4, 5)), (F32, F32))
    shapes = ((2, 3, 4), (4, 5))
    p = _step_plan(("abc", "cd"), "abd", shapes, (F32, F32))
    assert p == dataclasses.replace(e.base, resolved=p.resolved) and p.resolved.mode == "native"
    assert p.direct == (0, None, (6, 4), 1, None, None, "matmul", "native")
    assert _step_plan(("abc", "cd"), "abd", shapes, (F32, F32), precision="fast").direct[-1] == "fast"
    ozaki = _step_plan(("abc", "cd"), "abd", shapes, (F32, F32), precision="ozaki")
    assert (ozaki.direct is None) == bool(ozaki.resolved.params)
    with _precision.precision(target_relative_error=1e-3):  # checked a posteriori: not the direct path
        assert _step_plan(("abc", "cd"), "abd", shapes, (F32, F32)).direct is None
