"""Whole-expression precision: every addition and multiplication the engine performs on user data is under the
chosen mode or counted in the bound that ``explain()`` and ``error_bound`` publish, and targets hold for the
whole expression.

The oracle is exact: each result entry is the sum over every assignment of the labels of the product of the
operand entries, in ``fractions.Fraction`` (no floating-point arithmetic, no code of trn_backend). Expressions
are random: 1 to 4 operands, labels repeated inside an operand (diagonals, traces), labels of one operand only
(summed inside it), size-1 dimensions that broadcast, any output order; data is adversarial (cancellation, a
wide dynamic range, products in the subnormal range)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trn_backend as xp
from tests.support import einsum_structures, from_numpy, to_numpy
from trn_backend import kernels

MODES = ("native", "fast", "sr", "dd", "bf16x6", "ozaki", "fp64")
LABELS = "abcd"
# exponent ranges of the data families (entries are +-(1 + m/8) * 2**e): products of up to four entries stay
# inside the dtype's range for "wide", and fall into its subnormal range for "tiny"
FAMILIES = {
    np.float32: {"cancel": (-2, 2), "wide": (-28, 28), "tiny": (-45, -33)},
    np.float64: {"cancel": (-2, 2), "wide": (-200, 200), "tiny": (-300, -240)},
}


@st.composite
def expressions(draw, dtype):
    """(subscripts, operands as NumPy arrays): a random valid einsum with adversarial entries."""
    terms, shapes, output = draw(einsum_structures(LABELS))
    family = draw(st.sampled_from(sorted(FAMILIES[dtype])))
    low, high = FAMILIES[dtype][family]
    entries = st.builds(
        lambda s, m, e: (-1) ** s * (1 + m / 8) * 2.0**e, st.integers(0, 1), st.integers(0, 7), st.integers(low, high)
    )
    operands = []
    for shape in shapes:
        values = draw(st.lists(entries, min_size=math.prod(shape), max_size=math.prod(shape)))
        operands.append(np.array(values, dtype=dtype).reshape(shape))
    return f"{','.join(terms)}->{output}", operands


def exact(subscripts: str, operands: list[np.ndarray], absolute: bool = False) -> dict[tuple, Fraction]:
    """The exact result (or, ``absolute``, the expression on |operands|) as {output index: Fraction}."""
    inputs, output = subscripts.split("->")
    terms = inputs.split(",")
    sizes: dict[str, int] = {}
    for labels, op in zip(terms, operands, strict=True):
        for c, d in zip(labels, op.shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), d)
    names = sorted(sizes)
    values = [[{k: Fraction(float(abs(v) if absolute else v)) for k, v in np.ndenumerate(op)}] for op in operands]
    result = {idx: Fraction(0) for idx in itertools.product(*(range(sizes[c]) for c in output))}
    for assignment in itertools.product(*(range(sizes[c]) for c in names)):
        at = dict(zip(names, assignment, strict=True))
        product = Fraction(1)
        for labels, op, table in zip(terms, operands, values, strict=True):
            product *= table[0][tuple(at[c] if d > 1 else 0 for c, d in zip(labels, op.shape, strict=True))]
        result[tuple(at[c] for c in output)] += product
    return result


def allowance(subscripts: str, operands: list[np.ndarray], dtype) -> Fraction:
    """What gradual underflow (or a flush to zero) may add beyond the relative bounds: a smallest normal per
    scalar rounding, carried to the result by at most the largest entries and every label size."""
    sizes: dict[str, int] = {}
    for labels, op in zip(subscripts.split("->")[0].split(","), operands, strict=True):
        for c, d in zip(labels, op.shape, strict=True):
            sizes[c] = max(sizes.get(c, 1), d)
    total = math.prod(sizes.values())
    largest = math.prod(max(1.0, float(np.abs(op).max())) if op.size else 1.0 for op in operands)
    return Fraction(float(np.finfo(dtype).tiny)) * (len(operands) + 1) * total * total * Fraction(largest)


def assert_within(subscripts, operands, dtype, got: np.ndarray, bound: float, slack: Fraction):
    c, s = exact(subscripts, operands), exact(subscripts, operands, absolute=True)
    got = np.asarray(got)
    for idx, value in c.items():
        entry = got[idx] if got.ndim else got[()]
        assert np.isfinite(entry), (subscripts, idx, entry)
        err = abs(Fraction(float(entry)) - value)
        assert err <= Fraction(bound) * s[idx] + slack, (subscripts, idx, float(err), bound, float(s[idx]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", MODES)
@settings(max_examples=30)
@given(data=st.data())
def test_every_mode_meets_its_whole_expression_bound(mode, dtype, data):
    subscripts, operands = data.draw(expressions(dtype))
    ops = [from_numpy(op) for op in operands]
    with xp.precision(mode):
        bound = xp.explain(subscripts, *ops).bound
        try:
            got = to_numpy(xp.einsum(subscripts, *ops))
        except xp.PrecisionError:  # a split mode that cannot certify its underflow refuses: never a wrong result
            assert mode in ("fast", "sr", "dd", "bf16x6", "ozaki")
            return
    assert bound is not None
    assert_within(subscripts, operands, dtype, got, bound, allowance(subscripts, operands, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", [1e-3, 1e-6])
@settings(max_examples=30)
@given(data=st.data())
def test_a_forward_target_holds_for_the_whole_expression(target, dtype, data):
    subscripts, operands = data.draw(expressions(dtype))
    ops = [from_numpy(op) for op in operands]
    explanation = xp.explain(subscripts, *ops, target_forward_error=target)
    assert explanation.bound <= target
    try:
        got = to_numpy(xp.einsum(subscripts, *ops, target_forward_error=target))
    except xp.PrecisionError:  # a split mode that cannot certify its underflow refuses
        return
    assert_within(subscripts, operands, dtype, got, target, allowance(subscripts, operands, dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("target", [1e-3, 1e-6])
@settings(max_examples=30)
@given(data=st.data())
def test_a_relative_target_is_met_by_every_entry_or_refused(target, dtype, data):
    subscripts, operands = data.draw(expressions(dtype))
    ops = [from_numpy(op) for op in operands]
    try:
        got = np.asarray(to_numpy(xp.einsum(subscripts, *ops, target_relative_error=target)))
    except xp.PrecisionError:
        assert not all(check.met for check in xp.last_precision_report())
        return
    report = xp.last_precision_report()
    assert all(check.met for check in report)
    assert report or xp.explain(subscripts, *ops).roundings == 0  # only an exact rearrangement goes unchecked
    for idx, value in exact(subscripts, operands).items():
        entry = Fraction(float(got[idx] if got.ndim else got[()]))
        assert abs(entry - value) <= Fraction(target) * abs(value), (subscripts, idx, float(entry), float(value))


def test_a_sum_inside_one_operand_runs_under_the_mode():
    # "ij,j->j": i is summed inside the first operand before the product; it is a step of its own (K = 50),
    # run by the mode, shown by explain and counted in the bound
    a = from_numpy(np.full((50, 3), 1 + 2.0**-12, dtype=np.float32))
    b = from_numpy(np.ones(3, dtype=np.float32))
    with kernels.count_calls() as calls:
        got = xp.einsum("ij,j->j", a, b, precision="fp64")
    assert ("matmul", "fp64") in calls
    assert to_numpy(got).tolist() == [np.float32(50 * (1 + 2.0**-12))] * 3
    e = xp.explain("ij,j->j", a, b, precision="fp64")
    assert "ij->j (sum i)" in str(e) and "(1, 3, 50, 1)" in str(e)
    # fp64 works in float64: the sum and the product are carried in float64, then rounded once to float32
    assert [r.row for r in e.rounding_steps] == ["1a", "1", "out"]
    assert e.bound == pytest.approx(xp.error_bound("fp64", xp.float32, "ij,j->j", (50, 3), (3,)))
    assert e.kernel_calls == sum(calls.values()) == 2 and e.flops == 2 * 3 * 50 + 3  # the sum, then the product
    assert xp.explain("ij,j->j", a, b).kernel_calls == 1  # native sums with torch's sum: no kernel call
    # fast rounds each entry to bf16 (1 + 2**-12 becomes 1): the sum is the mode's, not float32's
    assert to_numpy(xp.einsum("ij,j->j", a, b, precision="fast")).tolist() == [50.0] * 3


def test_the_whole_bound_composes_the_steps():
    e = xp.explain("ij,jk,kl->il", (4, 64), (64, 4), (4, 64), precision="dd", dtype=xp.float32)
    steps = [p.bound for p in e.steps]
    assert e.bound == pytest.approx(math.prod(1 + b for b in steps) - 1)
    assert e.bound > max(steps)
    assert "whole expression: bound" in str(e)
    assert xp.error_bound("dd", xp.float32, "ij,jk,kl->il", (4, 64), (64, 4), (4, 64)) == pytest.approx(e.bound)
    # integers are exact
    assert xp.error_bound("native", xp.int32, "ij,jk->ik", (2, 3), (3, 2)) == 0.0
    with pytest.raises(TypeError, match="shapes go with subscripts"):
        xp.error_bound("dd", xp.float32, 8, (2, 8))


def test_a_forward_target_is_shared_among_the_steps():
    # one step alone would meet 1e-6 with native (K = 64); three steps share it, so each needs a third
    a = xp.ones((8, 64), dtype=xp.float32)
    e1 = xp.explain("ij,jk->ik", a, xp.ones((64, 8), dtype=xp.float32), target_forward_error=6e-6)
    e3 = xp.explain(
        "ij,jk,kl,lm->im",
        a,
        xp.ones((64, 8), dtype=xp.float32),
        xp.ones((8, 64), dtype=xp.float32),
        xp.ones((64, 8), dtype=xp.float32),
        target_forward_error=6e-6,
    )
    assert e1.bound <= 6e-6 and e3.bound <= 6e-6
    assert all(p.bound <= 6e-6 / 3 * (1 + 1e-9) for p in e3.steps)


@pytest.mark.parametrize("mode", ["native", "dd", "fp64"])
def test_a_sliced_contraction_counts_its_slice_sum(mode):
    pytest.importorskip("cotengra")
    rng = np.random.default_rng(3)
    operands = [rng.standard_normal(s).astype(np.float32) for s in ((3, 6), (6, 5), (5, 4))]
    ops = [from_numpy(op) for op in operands]
    with xp.precision(mode):
        got = to_numpy(xp.contract("ij,jk,kl->il", *ops, memory_limit=12))
        steps = xp.explain("ij,jk,kl->il", *ops).bound
    # at most 6 * 5 slices, summed in float64 and rounded once under a mode (bound of the sum: below)
    slices = 30
    bound = (1 + steps) * (1 + (slices - 1) * 2.0**-53 / (1 - (slices - 1) * 2.0**-53)) * (1 + 2.0**-24) - 1
    assert_within("ij,jk,kl->il", operands, np.float32, got, bound, Fraction(0))


def test_a_sliced_contraction_checks_a_relative_target_as_a_whole():
    pytest.importorskip("cotengra")
    rng = np.random.default_rng(4)
    operands = [rng.standard_normal(s).astype(np.float32) for s in ((3, 6), (6, 5), (5, 4))]
    ops = [from_numpy(op) for op in operands]
    got = to_numpy(xp.contract("ij,jk,kl->il", *ops, memory_limit=12, target_relative_error=1e-5))
    (check,) = xp.last_precision_report()
    assert check.met and check.K == 30
    for idx, value in exact("ij,jk,kl->il", operands).items():
        assert abs(Fraction(float(got[idx])) - value) <= Fraction(1e-5) * abs(value)


def test_contract_and_expressions_share_a_target_over_the_whole_path():
    rng = np.random.default_rng(5)
    operands = [rng.standard_normal(s).astype(np.float32) for s in ((4, 40), (40, 4), (4, 40))]
    ops = [from_numpy(op) for op in operands]
    for run in (
        lambda: xp.contract("ij,jk,kl->il", *ops, target_relative_error=1e-5),
        lambda: xp.contract_expression("ij,jk,kl->il", *(o.shape for o in ops), target_relative_error=1e-5)(*ops),
    ):
        got = to_numpy(run())
        (check,) = xp.last_precision_report()
        assert check.met and check.subscripts == "ij,jk,kl->il"
        for idx, value in exact("ij,jk,kl->il", operands).items():
            assert abs(Fraction(float(got[idx])) - value) <= Fraction(1e-5) * abs(value)


def test_inf_and_nan_entries_are_left_out_of_a_whole_check():
    a = np.ones((3, 4), dtype=np.float32)
    a[0, 1] = np.inf
    b = np.ones((4, 2), dtype=np.float32)
    got = to_numpy(
        xp.einsum(
            "ij,jk,k->i", from_numpy(a), from_numpy(b), from_numpy(np.ones(2, np.float32)), target_relative_error=1e-6
        )
    )
    assert np.isinf(got[0]) and got[1:].tolist() == [8.0, 8.0]
    assert all(check.met for check in xp.last_precision_report())


def test_torch_float32_sums_are_not_used_for_modes():
    # the pre-sum of a non-native mode is a kernel call, so the torch reference's own float32 sum never adds
    # user data under such a mode (counted per mode)
    a = from_numpy(np.ones((4, 5, 6), dtype=np.float32))
    with kernels.count_calls() as calls:
        xp.einsum("ijk->j", a, precision="dd")
    assert calls == {("matmul", "dd"): 1}
    assert torch.equal(xp.einsum("ijk->j", a, precision="dd")._t, torch.full((5,), 24.0))


@pytest.mark.parametrize("mode_or_target", ["dd", 1e-4, 3e-7])
def test_two_ranks_count_their_sum_in_the_whole_expression(mode_or_target):
    """Operands partitioned along the contracted index over 2 ranks: each rank's product is a summand of a
    pending sum, one more rounding step of the expression (and, under a target, within its share)."""
    import trn_backend.distributed as td
    from tests.distributed_support import spmd

    rng = np.random.default_rng(6)
    operands = [rng.standard_normal(s).astype(np.float32) for s in ((3, 8), (8, 5), (5, 2))]

    def body(rank):
        ops = [td.shard(xp.asarray(operands[0]), 1), td.shard(xp.asarray(operands[1]), 0), xp.asarray(operands[2])]
        if isinstance(mode_or_target, str):
            with xp.precision(mode_or_target):
                out = xp.einsum("ij,jk,kl->il", *ops)
            return np.asarray(out)
        return np.asarray(xp.einsum("ij,jk,kl->il", *ops, target_forward_error=mode_or_target))

    got = spmd(2, body)[0]
    if isinstance(mode_or_target, str):
        steps = xp.explain(
            "ij,jk,kl->il", *(o.shape for o in operands), precision=mode_or_target, dtype=xp.float32
        ).bound
        ranks = 2.0**-24 / (1 - 2.0**-24)  # one addition of two float32 summands
        bound = (1 + steps) * (1 + ranks) - 1
    else:
        bound = mode_or_target
    assert_within("ij,jk,kl->il", operands, np.float32, got, bound, Fraction(0))


def test_two_ranks_carry_float64_where_their_float32_sum_cannot_meet_the_target():
    """1e-7 for float32 on 2 ranks: in float32 the product (fp64, 6e-8) and the sum over ranks (6e-8) together
    miss it, so the partitioned call carries float64: the summands are float64, their sum too, and only the
    result is rounded to float32 (6e-8), on the blocks as they are (nothing gathered), within the target."""
    import trn_backend.distributed as td
    from tests.distributed_support import spmd
    from trn_backend.distributed import _dispatch

    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((3, 8)).astype(np.float32), rng.standard_normal((8, 2)).astype(np.float32)
    before = _dispatch.GATHERED_CALLS["einsum"]

    def body(rank):
        out = xp.einsum("ij,jk->ik", td.shard(xp.asarray(a), 1), td.shard(xp.asarray(b), 0), target_forward_error=1e-7)
        return np.asarray(out), out.dtype

    (got, dtype), _ = spmd(2, body)
    assert _dispatch.GATHERED_CALLS["einsum"] == before and dtype == xp.float32
    assert_within("ij,jk->ik", [a, b], np.float32, got, 1e-7, Fraction(0))


def test_numpy_einsum_into_a_narrower_out_keeps_the_target():
    """np.einsum(..., out=float32, casting='same_kind') on float64 data rounds once more, into out: a rounding of
    the expression, paid out of the target before the product's share."""
    rng = np.random.default_rng(8)
    operands = [rng.standard_normal(s) for s in ((4, 30), (30, 3))]
    ops = [from_numpy(op) for op in operands]
    out = xp.empty((4, 3), dtype=xp.float32)
    np.einsum("ij,jk->ik", *ops, out=out, casting="same_kind", target_forward_error=1e-6)
    assert_within("ij,jk->ik", operands, np.float64, to_numpy(out), 1e-6, Fraction(0))
    with xp.precision(target_relative_error=1e-6) as report:
        np.einsum("ij,jk->ik", *ops, out=out, casting="same_kind")
    assert report and all(check.met and check.target == 1e-6 for check in report)
    for idx, value in exact("ij,jk->ik", operands).items():
        assert abs(Fraction(float(to_numpy(out)[idx])) - value) <= Fraction(1e-6) * abs(value)
    with pytest.raises(
        xp.PrecisionError, match="the final rounding to float32 alone costs 5.96e-08; the target is 1e-08"
    ):
        np.einsum("ij,jk->ik", *ops, out=out, casting="same_kind", target_forward_error=1e-8)


def test_a_relative_target_never_vouches_for_a_subnormal_result():
    """Products in float64's subnormal range keep about 14 bits: 2**-1060 (1 + 2**-16) loses the 2**-16. A
    relative check of 1e-6 must refuse them (the underflow allowance is what counts: half a subnormal is no
    float64, so it must not round to an allowance of 0), never return them as met."""
    a = np.full(2, 2.0**-530)
    b = np.full(2, 2.0**-530 * (1 + 2.0**-16))
    ops = [from_numpy(a), from_numpy(b), from_numpy(np.array(1.0))]
    with pytest.raises(xp.PrecisionError, match="out of reach"):
        xp.einsum("i,i,->", *ops, target_relative_error=1e-6)
    assert not xp.last_precision_report()[-1].met


def test_a_checked_product_never_vouches_for_a_subnormal_float64_entry():
    """The elementwise-product check (one rounding per entry) has the same underflow allowance: 2**-530 times
    2**-530 (1 + 2**-16) keeps 14 bits in float64's subnormal range, 1.5e-5 from the exact product."""
    a, b = from_numpy(np.full(2, 2.0**-530)), from_numpy(np.full(2, 2.0**-530 * (1 + 2.0**-16)))
    with pytest.raises(xp.PrecisionError, match="out of reach"):
        xp.einsum("i,i->i", a, b, target_relative_error=1e-6)
