"""The precision modes as fused NKI kernels on the CPU model: dd, bf16x6 and ozaki (through the kernel layer's
NKI route, with the reference's host scaling) within their bounds on hard inputs for K at the tile edges, float32
and float64, batched too; dd and bf16x6 equal to their reference modes up to the order of fp32 additions, ozaki
bit for bit; the instruction counts that show the fusion; sr unbiased; the modelled cost against fast."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from trn_backend.kernels import nki, reference
from trn_backend.kernels.nki import cost, matmul

import trn_backend as xp
from trn_backend import _precision, config, kernels

KS = (1, 127, 128, 129, 1000, 4096)
SIZES = {1: (3, 5), 127: (129, 2), 128: (1, 513), 129: (64, 130), 1000: (127, 65), 4096: (33, 129)}
KINDS = ("normal", "uniform", "cancel")


def operands(kind: str, m: int, k: int, n: int, seed: int, dtype=torch.float32, batch: int | None = None):
    g = np.random.default_rng(seed)
    lead = () if batch is None else (batch,)
    if kind == "uniform":
        a, b = g.random((*lead, m, k)), g.random((*lead, k, n))
    else:
        a, b = g.standard_normal((*lead, m, k)), g.standard_normal((*lead, k, n))
        if kind == "cancel" and k >= 2:  # large equal-and-opposite terms: |C| far below |A||B|
            big = 1e4 * g.standard_normal((*lead, m))
            a[..., 0], a[..., 1] = big, -big
            b[..., 1, :] = b[..., 0, :]
    return torch.from_numpy(a).to(dtype), torch.from_numpy(b).to(dtype)


def relative(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor, reference_c: torch.Tensor | None = None) -> float:
    """max |C - X| / (|A||B|), X the product in long double (64-bit significands: K u of it stays far below the
    float64 bounds tested here), or ``reference_c``."""
    a_ld, b_ld = (x.double().numpy().astype(np.longdouble) for x in (a, b))
    target = a_ld @ b_ld if reference_c is None else reference_c.double().numpy().astype(np.longdouble)
    scale = np.abs(a_ld) @ np.abs(b_ld)
    error = np.abs(c.double().numpy().astype(np.longdouble) - target)
    mask = scale > 0
    return float(np.max(error[mask] / scale[mask])) if mask.any() else 0.0


def on_nki(a: torch.Tensor, b: torch.Tensor, mode: str) -> torch.Tensor:
    """The mode through the kernel layer's NKI route (on the CPU model), checking it took that route."""
    kernel = "bmm" if a.dim() == 3 else "matmul"
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = getattr(kernels, kernel)(a, b, mode)
    assert calls[f"nki.{kernel}", mode] == 1
    return c


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("k", KS)
@pytest.mark.parametrize("mode", ["dd", "bf16x6", "ozaki"])
def test_within_bound_and_equal_to_the_reference_up_to_addition_order(mode, k, kind):
    m, n = SIZES[k]
    a, b = operands(kind, m, k, n, k)
    c = on_nki(a, b, mode)
    bound = xp.error_bound(mode, xp.float32, k)
    assert relative(c, a, b) <= bound
    ref = reference.MODES[mode](a, b)
    if mode == "ozaki":  # exact level sums, combined on the host as the reference does: the same bits
        assert torch.equal(c, ref)
    else:
        # the same words (one integer split); each order's fp32 accumulation error is within the bound's
        # accumulation part (the bound less the split's representation error), plus an output rounding each
        words = nki.WORDS[mode]
        accumulation = bound - _precision.split_representation(words, torch.float32)
        assert relative(c, a, b, ref) <= 2 * accumulation


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mode", ["dd", "bf16x6", "ozaki", "fast"])
def test_batches_and_float64_data(mode, dtype):
    """Batched steps run the bmm kernels; float64 operands are scaled and split (or cut into digits) on the host
    from the float64 values, and the words multiplied on the chip."""
    a, b = operands("cancel", 70, 300, 40, 3, dtype, batch=3)
    c = on_nki(a, b, mode)
    assert c.dtype == dtype
    assert relative(c, a, b) <= xp.error_bound(mode, dtype, 300)
    ref = reference.MODES[mode](a, b)
    if mode == "ozaki":
        assert torch.equal(c, ref)
    else:
        assert relative(c, a, b, ref) <= 2 * xp.error_bound(mode, dtype, 300)


def test_ozaki_with_more_slices_and_large_k():
    """slices=6 (a setting of the mode) and K beyond one K block: int32 level sums per K block, added exactly."""
    a, b = operands("normal", 40, 5000, 30, 9, torch.float64)
    with config.set(nki="model", nki_min_flops=0), kernels.count_calls() as calls:
        c = kernels.matmul(a, b, "ozaki", slices=6)
    assert calls["nki.matmul", "ozaki"] == 1
    assert torch.equal(c, reference.ozaki(a, b, slices=6))
    assert relative(c, a, b) <= xp.error_bound("ozaki", xp.float64, 5000, slices=6)


@pytest.mark.parametrize("mode, words, products, k, twosums", [("dd", 2, 3, 700, 0), ("bf16x6", 3, 6, 2100, 2)])
def test_instruction_counts_show_the_fusion(mode, words, products, k, twosums):
    """dd issues 3 nc_matmul per (K tile, M tile, N tile), bf16x6 6; every element of A and B is split once per
    call (an exact integer add on GpSimd and a mask on the Vector Engine per word per split sub-tile), not once per
    product, block or reload: the split plan names every piece of A [300, K] and B [K, 600] exactly once (besides
    the spare slots, which split a piece again into the scratch's spare entry), and the GpSimd adds are the words
    of the sub-tiles of the pieces split. bf16x6 TwoSums once per group of 4 chunks of 256: K = 2100 is 9 chunks,
    3 groups, the first copied, then 2 TwoSums (3 GpSimd instructions each) per output tile (two units of 300 x 300:
    3 output tiles each)."""
    m, n = 300, 600
    a, b = operands("normal", m, k, n, 1)
    nki.run("matmul", a, b, mode, "model")
    run = nki.jitted("matmul_split", "model").last_run
    k_tiles = -(-k // 128)
    assert run.instructions("tensor", "nc_matmul") == products * 3 * 2 * k_tiles
    programs = 2
    plans = matmul._split_plan(1, m, k, n, False, programs)
    split_subtiles = 0
    for operand, (rows, columns) in enumerate(((m, k), (k, n))):
        slots, _, (pr, pc), before, during = plans[operand]
        long_rows = operand == 1
        long = matmul.PIECE_LONG_B if operand else matmul.PIECE_LONG
        pieces = matmul._pieces(1, rows, columns, long_rows, long)[1]
        offsets = sorted(matmul._piece_offsets(operand, *piece, 1, m, k, n, False) for piece in pieces)
        spare = matmul._piece_offsets(operand, 1, 0, 0, 1, m, k, n, False)[1]
        split = [pair for p in range(programs) for pair in before[p] + sum(during[p], ())]
        assert sorted(pair for pair in split if pair[1] != spare) == offsets  # each piece once
        subtiles = len(matmul._starts(pr, min(pr, 128))) * len(matmul._starts(pc, min(pc, matmul.PIECE_SHORT)))
        split_subtiles += len(split) * subtiles
    integer_adds = sum(count for core in run.cores for key, count in core.events.items()
                       if key[:2] == ("gpsimd", "tensor_tensor"))
    assert integer_adds == words * split_subtiles + 3 * twosums * 3 * 2
    assert run.banks_peak <= 8


def test_sr_rounds_to_a_neighbour_unbiased_and_reproducibly():
    """Each entry lands on one of the two bf16 values around the fp32 result, up with probability equal to the
    fraction: the mean over many seeds approaches the fp32 result, unlike round to nearest's fixed bias."""
    a = torch.ones(4, 2)
    b = torch.stack([torch.ones(16), torch.full((16,), 2.0**-10)])  # bf16 words; C = 1 + 2**-10 in fp32,
    lo, hi = 1.0, 1 + 2**-7  # between bf16 1 and 1 + 2**-7, 1/8 of the way up
    draws = torch.stack([nki.run("matmul", a, b, "sr", "model", seed=s).float() for s in range(200)])
    assert set(draws.unique().tolist()) == {lo, hi}
    assert abs(float(draws.mean()) - (1 + 2**-10)) < 4 * (2**-7) * (0.125 * 0.875 / draws.numel()) ** 0.5
    assert torch.tensor(1 + 2**-10).to(torch.bfloat16).item() == lo  # round to nearest: always down, biased
    assert torch.equal(nki.run("matmul", a, b, "sr", "model", seed=5), nki.run("matmul", a, b, "sr", "model",
                                                                                seed=5))


def ratios_at_4096(transposed: bool) -> dict[str, float]:
    shape = (1, 4096, 4096, 4096)
    fast = cost.modelled("matmul", "fast", shape, "trn2", transposed).seconds
    return {mode: cost.modelled("matmul", mode, shape, "trn2", transposed).seconds / fast
            for mode in ("native", "dd", "bf16x6")}


def test_native_costs_about_four_bf16_passes_at_4096():
    """fp32 operands take 4 bf16 passes on the Tensor Engine (A as the A^T view: no transposes on chip)."""
    ratio = ratios_at_4096(True)
    assert 3.7 <= ratio["native"] <= 4.01, ratio


def test_dd_within_its_target_at_4096():
    """The target: dd within 3.3x of fast at 4096^3 (its 3 bf16 passes, and room for the split and the unit
    boundaries): the split of the pieces the later units read runs during the products."""
    ratio = ratios_at_4096(True)
    assert ratio["dd"] <= 3.3, ratio


def test_bf16x6_within_its_target_at_4096():
    """The target: bf16x6 within 6.5x of fast at 4096^3 (its 6 bf16 passes, and room for the split and the
    TwoSums)."""
    ratio = ratios_at_4096(True)
    assert ratio["bf16x6"] <= 6.5, ratio
