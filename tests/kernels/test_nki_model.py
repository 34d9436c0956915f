"""The CPU model of the NeuronCore: each documented hardware rule is enforced with an error naming it, and the
arithmetic is the documented datapath (bf16 storage rounds to nearest even, bf16 products are exact, PSUM
accumulates in fp32 in K order)."""

from __future__ import annotations

import dataclasses
import sys
from typing import NamedTuple

import ml_dtypes
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from trn_backend.kernels.nki import model
from trn_backend.kernels.nki.model import ModelError, core
from trn_backend.kernels.nki.model import isa as nisa
from trn_backend.kernels.nki.model import language as nl


@pytest.fixture(autouse=True)
def one_core_runtime(monkeypatch):
    """Tests of single rules run on a runtime of LNC=1 (a plain launch); the LNC tests set their own."""
    monkeypatch.setenv(core.LNC_VARIABLE, "1")


def run(kernel, *args):
    """Run ``kernel`` on the model (a jit-ed copy) at LNC=1, returning (output, launch)."""
    k = model.jit(kernel)
    return k(*args), k.last_run


def on_core(target="trn2"):
    return core.running(core.Core(core.TARGETS[target]))


def sbuf_tile(shape, value=1.0, dtype=nl.float32):
    t = nl.ndarray(shape, dtype, buffer=nl.sbuf)
    nisa.memset(t, value)
    return t


def test_partition_dimension_at_most_128():
    with on_core(), pytest.raises(ModelError, match="partition dimension 129 exceeds 128"):
        nl.ndarray((129, 4), nl.float32, buffer=nl.sbuf)
    with on_core(), pytest.raises(ModelError, match="at least one free dimension"):
        nl.ndarray((128,), nl.float32, buffer=nl.sbuf)


def test_moving_tile_of_513_and_stationary_of_129_are_rejected():
    with on_core():
        psum = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        with pytest.raises(ModelError, match="moving free size 513 exceeds 512"):
            nisa.nc_matmul(
                nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)[:, 0:513],
                sbuf_tile((128, 128)),
                sbuf_tile((128, 513)),
            )
        with pytest.raises(ModelError, match="stationary free size 129 exceeds 128"):
            nisa.nc_matmul(psum, sbuf_tile((128, 129)), sbuf_tile((128, 512)))


def test_matmul_result_must_stay_in_one_psum_bank():
    with on_core():
        wide = nl.ndarray((128, 1024), nl.float32, buffer=nl.psum)  # two banks
        nisa.nc_matmul(wide[:, 512:1024], sbuf_tile((128, 128)), sbuf_tile((128, 512)))  # the second bank: fine
        with pytest.raises(ModelError, match="crossing a 2048-byte PSUM bank boundary"):
            nisa.nc_matmul(wide[:, 256:768], sbuf_tile((128, 128)), sbuf_tile((128, 512)))


def psum_kernel(rounds, held):
    """A kernel filling ``rounds`` PSUM banks one after another, keeping the first ``held`` in use until the end."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        first = ()
        for i in range(rounds):
            bank = nl.ndarray((128, 512), nl.float32, buffer=nl.psum, name=f"bank {i}")
            nisa.memset(bank, 0.0)
            first = first + (bank,) if i < held else first
        for bank in first:
            nisa.tensor_copy(dst=bank, src=bank)  # a last use at the end keeps these banks live throughout
        nisa.dma_copy(dst=out, src=x)
        return out

    return kernel


def test_a_ninth_live_psum_bank_is_rejected_and_dead_tiles_free_theirs():
    """PSUM banks are live from allocation to last use (the compiler's liveness): 20 banks used one after the
    other need 1 at a time, 8 held and a ninth in use are refused."""
    x = np.ones((2, 2), np.float32)
    _, c = run(psum_kernel(20, 0), x)
    assert c.banks_peak == 1
    _, c = run(psum_kernel(20, 7), x)  # 7 held, and one more at a time
    assert c.banks_peak == 8
    with pytest.raises(
        ModelError,
        match=r"PSUM banks exhausted: 9 banks are live at instruction 8 \(vector "
        r"memset\), over the 8 of trn2.*largest live: bank 0",
    ):
        run(psum_kernel(20, 8), x)
    with on_core(), pytest.raises(ModelError, match="needs 20480 bytes per partition; PSUM has 16384"):
        nl.ndarray((128, 5120), nl.float32, buffer=nl.psum)


def test_accumulate_onto_memset_or_uninitialized_psum_is_rejected():
    with on_core():
        s, m = sbuf_tile((128, 128)), sbuf_tile((128, 512))
        psum = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        with pytest.raises(ModelError, match="accumulate=True onto PSUM uninitialized"):
            nisa.nc_matmul(psum, s, m, accumulate=True)
        nisa.memset(psum, 0.0)
        with pytest.raises(ModelError, match="accumulate=True onto PSUM written by a non-matmul instruction"):
            nisa.nc_matmul(psum, s, m, accumulate=True)
        with pytest.raises(ModelError, match="non-matmul instruction .* undefined behaviour"):
            nisa.nc_matmul(psum, s, m)  # accumulate=None infers accumulation onto the memset: also undefined
        nisa.nc_matmul(psum, s, m, accumulate=False)  # a fresh accumulation group overwrites: fine
        nisa.nc_matmul(psum, s, m, accumulate=True)
        nisa.nc_matmul(psum, s, m)  # inferred: accumulates onto matmul-written memory
        assert np.all(psum.data == 3 * 128)


def test_dma_cannot_touch_psum():
    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        p = nl.ndarray(x.shape, nl.float32, buffer=nl.psum)
        nisa.memset(p, 1.0)
        nisa.dma_copy(dst=out, src=p)
        return out

    with pytest.raises(ModelError, match="dma_copy cannot read PSUM; copy the tile to SBUF with nisa.tensor_copy"):
        run(kernel, np.ones((4, 4), np.float32))


def test_uninitialized_reads_are_errors_in_strict_mode(monkeypatch):
    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t[0:2, :], src=x[0:2, :])  # half the tile
        nisa.dma_copy(dst=out, src=t)
        return out

    with pytest.raises(ModelError, match="reads memory that was allocated but never written"):
        run(kernel, np.ones((4, 4), np.float32))
    monkeypatch.setenv(model.STRICT_VARIABLE, "0")  # the simulator's behaviour: NaN garbage flows on
    out, _ = run(kernel, np.ones((4, 4), np.float32))
    assert np.all(out[:2] == 1) and np.all(np.isnan(out[2:]))


def test_outputs_must_be_shared_hbm_and_fully_written():
    def private(x):
        return nl.ndarray(x.shape, nl.float32, buffer=nl.hbm)

    def partial(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0:1, :], src=x[0:1, :])
        return out

    with pytest.raises(ModelError, match="is in private_hbm; outputs must be allocated with buffer=nl.shared_hbm"):
        run(private, np.ones((2, 2), np.float32))
    with pytest.raises(ModelError, match="2 elements were never written"):
        run(partial, np.ones((2, 2), np.float32))


def sbuf_kernel(kib, tiles, overlap):
    """A kernel of ``tiles`` SBUF tiles of ``kib`` KiB per partition, each used once in turn; with ``overlap`` the
    first stays in use to the end."""

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        first = None
        for i in range(tiles):
            t = nl.ndarray((128, kib * 256), nl.float32, buffer=nl.sbuf, name=f"tile {i}")
            nisa.memset(t, 1.0)
            first = t if first is None else first
        if overlap:
            nisa.memset(first, 2.0)
        nisa.dma_copy(dst=out, src=x)
        return out

    return kernel


def test_sbuf_budget_per_generation():
    """The usable SBUF is 224 KiB less the runtime's 16648 bytes on trn2 (192 KiB less the same on trn1), and the
    budget holds the peak of the tiles live at once: dead tiles (past their last use) take no room."""
    x = np.ones((2, 2), np.float32)
    assert core.TARGETS["trn2"].sbuf_partition_bytes == 224 * 1024 - 16384 - 8 - 256 == 212728
    with on_core("trn2"):
        assert nl.tile_size.sbuf_fmax_bytes == 212728
    _, c = run(sbuf_kernel(150, 3, False), x)  # 3 x 150 KiB one after the other: fits, one at a time
    assert c.sbuf_peak == 150 * 1024
    _, c = run(sbuf_kernel(100, 2, True), x)
    assert c.sbuf_peak == 200 * 1024
    with pytest.raises(
        ModelError,
        match=r"SBUF budget exceeded: 307200 bytes per partition are live at "
        r"instruction 1 \(vector memset\), over the 212728 usable bytes per "
        r"partition of trn2; largest live: tile 0 \(128, 38400\) float32",
    ):
        run(sbuf_kernel(150, 2, True), x)
    with model.targeting("trn1"), pytest.raises(ModelError, match="over the 179960 usable bytes per partition of trn1"):
        run(sbuf_kernel(100, 2, True), x)
    with on_core("trn2"), pytest.raises(ModelError, match="SBUF budget exceeded allocating big: 215040 bytes"):
        nl.ndarray((128, 210 * 256), nl.float32, buffer=nl.sbuf, name="big")


def test_partition_access_rules():
    with on_core():
        t = sbuf_tile((128, 8))
        psum = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        nisa.tensor_copy(dst=psum[64:128, 0:8], src=t[0:64, :])  # 64 partitions from 0 or 64: fine
        nisa.tensor_copy(dst=psum[96:128, 0:8], src=t[32:64, :])  # 32 from 0, 32, 64, 96: fine
        with pytest.raises(ModelError, match="over 64 partitions must start at partition 0 or 64, not 1"):
            nisa.tensor_copy(dst=psum[0:64, 0:8], src=t[1:65, :])
        with pytest.raises(ModelError, match="stride along the partition dimension"):
            nisa.tensor_copy(dst=psum[0:64, 0:8], src=t[0:128:2, :])
        with pytest.raises(ModelError, match="out of bounds for dimension 1 of size 8"):
            t[:, 0:9]


def test_matmul_operand_rules():
    with on_core():
        psum = nl.ndarray((128, 512), nl.float32, buffer=nl.psum)
        bf16 = sbuf_tile((128, 128), dtype=nl.bfloat16)
        with pytest.raises(ModelError, match="fp32 operands multiply only with fp32"):
            nisa.nc_matmul(psum, bf16, sbuf_tile((128, 512)))
        with pytest.raises(ModelError, match="dst must be fp32 in PSUM"):
            nisa.nc_matmul(
                nl.ndarray((128, 512), nl.bfloat16, buffer=nl.psum), bf16, sbuf_tile((128, 512), dtype=nl.bfloat16)
            )
        with pytest.raises(ModelError, match="stationary 'psum tensor' is in psum; it must be in sbuf"):
            nisa.nc_matmul(psum[:, 0:128], psum[:, 0:128], sbuf_tile((128, 128)))
        with pytest.raises(ModelError, match="GpSimd cannot access PSUM"):
            nisa.tensor_copy(dst=sbuf_tile((128, 512)), src=psum, engine=nisa.gpsimd_engine)


def test_bf16_storage_rounds_to_nearest_even():
    values = np.array([[1 + 2**-8, 1 + 3 * 2**-8, 1 + 2**-8 + 2**-20, -(1 + 2**-8), 3.0e38]], np.float32)

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        b = nl.ndarray(x.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_copy(dst=b, src=t)
        nisa.tensor_copy(dst=t, src=b)
        nisa.dma_copy(dst=out, src=t)
        return out

    out, _ = run(kernel, values)
    np.testing.assert_array_equal(out, [[1.0, 1 + 2**-6, 1 + 2**-7, -1.0, float(ml_dtypes.bfloat16(3.0e38))]])


def test_matmul_arithmetic_exact_bf16_products_fp32_sums_in_k_order():
    rng = np.random.default_rng(0)
    with on_core():
        a = rng.standard_normal((128, 64)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((128, 32)).astype(ml_dtypes.bfloat16)
        sa, sb = nl.ndarray(a.shape, nl.bfloat16, buffer=nl.sbuf), nl.ndarray(b.shape, nl.bfloat16, buffer=nl.sbuf)
        nisa.memset(sa, 0.0), nisa.memset(sb, 0.0)
        sa.data[...], sb.data[...] = a, b
        psum = nl.ndarray((64, 32), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(psum, sa, sb)
        expected = np.zeros((64, 32), np.float32)
        for k in range(128):  # fp32 sums in K order of exact products
            expected += (a[k].astype(np.float64)[:, None] * b[k].astype(np.float64)[None, :]).astype(np.float32)
        np.testing.assert_array_equal(psum.data, expected)
        # 1 followed by 127 terms of 2**-25: each add rounds back to 1 in K order (an exact sum would not)
        col = np.full((128, 1), 2.0**-25, np.float32)
        col[0] = 1.0
        sc, ones = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf), nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.memset(sc, 0.0), nisa.memset(ones, 1.0)
        sc.data[...] = col
        one = nl.ndarray((1, 1), nl.float32, buffer=nl.psum)
        nisa.nc_matmul(one, sc, ones)
        assert one.data[0, 0] == 1.0


def test_instructions_are_counted_per_engine():
    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(x.shape, nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_tensor(dst=t, data1=t, data2=t, op=nl.add)
        nisa.activation(dst=t, op=nl.copy, data=t)
        nisa.dma_copy(dst=out, src=t)
        return out

    out, run_core = run(kernel, np.full((8, 16), 1.5, np.float32))
    np.testing.assert_array_equal(out, 3.0)
    assert run_core.instructions("dma") == 2 and run_core.instructions("vector", "tensor_tensor") == 1
    assert run_core.instructions("scalar", "activation") == 1
    assert run_core.events["dma", "dma_copy", 8 * 16 * 4, 16 * 4 * 8, False] == 2  # bytes, run, dynamic


def test_target_follows_the_simulator_variable(monkeypatch):
    monkeypatch.setenv(core.TARGET_VARIABLE, "trn1")
    assert core.target_from_environment().sbuf_partition_bytes == 192 * 1024 - 16384 - 8 - 256
    monkeypatch.setenv(core.TARGET_VARIABLE, "trn3")
    with pytest.raises(ModelError, match="knows trn1, trn2"):
        core.target_from_environment()


def test_engine_arithmetic_bitwise_integer_and_fp32():
    with on_core():
        x = sbuf_tile((4, 8), 1.5)
        bits = nl.ndarray((4, 8), nl.uint32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=bits, src=x.view(nl.uint32))  # same dtype: the bits, not a conversion
        mask = nl.ndarray((4, 8), nl.int32, buffer=nl.sbuf)
        nisa.memset(mask, -65536)  # 0xFFFF0000 as an int32 constant
        hi = nl.ndarray((4, 8), nl.uint32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=hi, data1=bits, data2=mask.view(nl.uint32), op=nl.bitwise_and, engine=nisa.vector_engine)
        assert hi.data[0, 0] == np.float32(1.5).view(np.uint32) & 0xFFFF0000
        with pytest.raises(ModelError, match="needs integer operands"):
            nisa.tensor_tensor(dst=x, data1=x, data2=x, op=nl.bitwise_and, engine=nisa.vector_engine)
        big = nl.ndarray((4, 8), nl.int32, buffer=nl.sbuf)
        nisa.memset(big, 0)
        big.data[...] = 2**24 + 1  # not an fp32 value: exact only on GpSimd's integer path
        total = nl.ndarray((4, 8), nl.int32, buffer=nl.sbuf)
        nisa.tensor_tensor(dst=total, data1=big, data2=big, op=nl.add)  # all int32: GpSimd by default
        assert np.all(total.data == 2**25 + 2)
        nisa.tensor_tensor(dst=total, data1=big, data2=big, op=nl.add, engine=nisa.vector_engine)
        assert np.all(total.data == 2**25)  # the Vector Engine computes in fp32
        with pytest.raises(ModelError, match="no broadcasting"):
            nisa.tensor_tensor(dst=x, data1=x, data2=sbuf_tile((4, 4)), op=nl.add)


def test_transposes_on_the_tensor_and_vector_engines():
    with on_core():
        x = sbuf_tile((32, 16), 0.0)
        x.data[...] = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
        on_tensor = nl.ndarray((16, 32), nl.float32, buffer=nl.psum)
        nisa.nc_transpose(dst=on_tensor, data=x)
        on_vector = nl.ndarray((16, 32), nl.float32, buffer=nl.sbuf)
        nisa.nc_transpose(dst=on_vector, data=x, engine=nisa.vector_engine)
        np.testing.assert_array_equal(on_tensor.data, x.data.T)
        np.testing.assert_array_equal(on_vector.data, x.data.T)
        with pytest.raises(ModelError, match="the vector engine transposes at most 32 x 32"):
            nisa.nc_transpose(
                dst=nl.ndarray((16, 64), nl.float32, buffer=nl.sbuf),
                data=sbuf_tile((64, 16)),
                engine=nisa.vector_engine,
            )
        with pytest.raises(ModelError, match="dst dtype bfloat16 must equal data dtype float32"):
            nisa.nc_transpose(dst=nl.ndarray((16, 32), nl.bfloat16, buffer=nl.psum), data=x)
    with on_core("trn1"):
        assert nisa.get_nc_version() == nisa.nc_version.gen2
    with on_core("trn2"):
        assert nisa.get_nc_version() == nisa.nc_version.gen3


def test_raise_in_a_kernel_module_is_refused_assert_is_fine(tmp_path, monkeypatch):
    """Only ``assert`` is documented for checks inside kernels: jit refuses a module with a ``raise``, naming
    file:line."""
    source = (
        "def helper(x):\n    assert x.shape[0] > 0, 'empty'\n    return x\n\n\n"
        "def kernel(x):\n    if x.shape[0] > 128:\n        raise ValueError('too big')\n    return helper(x)\n"
    )
    (tmp_path / "raising_kernel.py").write_text(source)
    (tmp_path / "asserting_kernel.py").write_text(source.replace("raise ValueError('too big')", "assert False"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import asserting_kernel
    import raising_kernel

    with pytest.raises(ModelError, match=r"raising_kernel.py:8: `raise` in a kernel module.*write `assert"):
        model.jit(raising_kernel.kernel)
    model.jit(asserting_kernel.kernel)


def test_shapes_that_cannot_fit_are_refused_on_the_host_before_launching():
    from trn_backend.kernels import nki

    a, b = [torch.ones((512, 1), dtype=torch.bfloat16)] * 40, [torch.ones((1, 1024), dtype=torch.bfloat16)] * 40
    with pytest.raises(ValueError, match=r"nki.matmul_levels\[ozaki\]: 40 digit slices .* do not fit"):
        nki.level_sums(a, b)  # 80 bytes per element of A and B: a 512 x 1024 block's K tile alone is too big


def test_integer_constants_are_int32():
    """Integer values in the kernel language are 32-bit signed: 0xFFFF0000 is out of range wherever an instruction
    takes a constant; the same bits go in as int32 and a .view(nl.uint32)."""
    with on_core():
        t = nl.ndarray((4, 8), nl.int32, buffer=nl.sbuf)
        with pytest.raises(
            ModelError,
            match=r"nisa.memset: value 4294901760 \(0xffff0000\) is outside int32.*"
            r"-65536 has the same bits.*\.view\(nl.uint32\)",
        ):
            nisa.memset(t.view(nl.uint32), 0xFFFF0000)
        with pytest.raises(ModelError, match="nisa.activation: scale 2147483648 .* is outside int32"):
            nisa.activation(dst=sbuf_tile((4, 8)), op=nl.copy, data=sbuf_tile((4, 8)), scale=2**31)
        nisa.memset(t, -65536)
        assert np.all(t.view(nl.uint32).data == 0xFFFF0000)


@given(
    st.sampled_from((nl.int32, nl.uint32, nl.int16, nl.uint8)),
    st.one_of(st.integers(-(2**33), 2**33), st.integers(-(2**24) - 2, -(2**24) + 2), st.integers(2**24 - 2, 2**24 + 2)),
)
def test_memset_value_matches_the_dtype_and_integers_are_exact(dtype, value):
    """memset takes an int in the dtype's range and within [-2**24, 2**24] for integer tiles (written exactly, not
    through fp32) and a float for float tiles; oracle: Python ints."""
    info = np.iinfo(dtype)
    with on_core():
        t = nl.ndarray((2, 3), dtype, buffer=nl.sbuf)
        if info.min <= value <= info.max and -(2**24) <= value <= 2**24:
            nisa.memset(t, value)
            assert all(int(v) == value for v in t.data.ravel())
        else:
            with pytest.raises(
                ModelError,
                match=r"(outside int32|an integer dst takes an int in|is outside "
                r"\[-2\*\*24, 2\*\*24\])",
            ):
                nisa.memset(t, value)
        with pytest.raises(ModelError, match="an integer dst takes an int"):
            nisa.memset(t, 1.0)


def test_integer_memset_values_stay_within_2_24_larger_constants_come_from_exact_int32_adds():
    """memset's exactness for int32 values beyond 2**24 is not documented: a kernel memsetting 2**24 + 1 is
    refused; the allowed form memsets 2**24 and 1 and adds them exactly on GpSimd. Floats take floats."""

    def kernel(x, direct):
        out = nl.ndarray((2, 3), nl.int32, buffer=nl.shared_hbm)
        big = nl.ndarray((2, 3), nl.int32, buffer=nl.sbuf)
        if direct:
            nisa.memset(big, 2**24 + 1)
        else:
            one = nl.ndarray((2, 3), nl.int32, buffer=nl.sbuf)
            nisa.memset(big, 2**24)
            nisa.memset(one, 1)
            nisa.tensor_tensor(dst=big, data1=big, data2=one, op=nl.add, engine=nisa.gpsimd_engine)
        nisa.dma_copy(dst=out, src=big)
        return out

    with pytest.raises(
        ModelError,
        match=r"nisa.memset: integer value 16777217 is outside \[-2\*\*24, 2\*\*24\]: "
        r"memset's exactness for larger int32 values is not documented.*exact int32 "
        r"nisa.tensor_tensor adds",
    ):
        run(kernel, np.zeros(1, np.float32), True)
    out, _ = run(kernel, np.zeros(1, np.float32), False)
    assert np.all(out == 2**24 + 1)
    with on_core():
        t = nl.ndarray((2, 3), nl.int32, buffer=nl.sbuf)
        nisa.memset(t, -(2**24))
        assert np.all(t.data == -(2**24))
        with pytest.raises(ModelError, match=r"a float dst takes a float value \(write 0.0\)"):
            nisa.memset(nl.ndarray((2, 3), nl.float32, buffer=nl.sbuf), 0)


def test_bitvec_operators_are_refused_on_gpsimd_chosen_or_defaulted():
    with on_core():
        a = nl.ndarray((4, 8), nl.uint32, buffer=nl.sbuf)
        nisa.memset(a, 7)
        for engine in (nisa.gpsimd_engine, None):  # None: all-uint32 operands default to GpSimd
            with pytest.raises(
                ModelError,
                match="nl.bitwise_and is a bitvec operator, documented on the Vector "
                "Engine only, not gpsimd.*engine=nisa.vector_engine",
            ):
                nisa.tensor_tensor(dst=a, data1=a, data2=a, op=nl.bitwise_and, engine=engine)
        nisa.tensor_tensor(dst=a, data1=a, data2=a, op=nl.add)  # integer add stays on GpSimd, exact
        assert np.all(a.data == 14)


def spmd_kernel(x):
    """Program p of the launch writes row p of the shared output (x [programs, F]) through its private scratch."""
    p = nl.program_id(axis=0)
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.private_hbm)  # legal: only outputs are shared
    nisa.dma_copy(dst=scratch, src=x[p : p + 1, :])
    t = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=scratch)
    nisa.activation(dst=t, op=nl.copy, data=t, scale=float(nl.num_programs() * 10 + p))
    nisa.dma_copy(dst=out[p : p + 1, :], src=t)
    assert nl.program_ndim() == 1
    return out


def test_the_launch_lnc_must_match_the_runtime(monkeypatch):
    """nki.jit kernels launch at LNC=1 unless called kernel[lnc]; the runtime's LNC is NEURON_LOGICAL_NC_CONFIG,
    else the target's default (trn2: 2, trn1: 1); a mismatch is an error saying what to write."""
    k = model.jit(spmd_kernel)
    x = np.ones((2, 4), np.float32)
    monkeypatch.delenv(core.LNC_VARIABLE)
    assert model.runtime_lnc() == 2
    with pytest.raises(
        ModelError,
        match=r"spmd_kernel launched with LNC=1 on a runtime of LNC=2 \(the default of "
        r"trn2\).*launch it as spmd_kernel\[2\]\(\.\.\.\)",
    ):
        k(x)
    np.testing.assert_array_equal(k[2](x), [[20.0] * 4, [21.0] * 4])
    monkeypatch.setenv(core.LNC_VARIABLE, "1")
    with pytest.raises(
        ModelError,
        match=r"LNC=2 on a runtime of LNC=1 \(NEURON_LOGICAL_NC_CONFIG=1\).*"
        r"spmd_kernel\[1\]",
    ):
        k[2](x)
    np.testing.assert_array_equal(k[1](x[:1]), [[10.0] * 4])
    monkeypatch.delenv(core.LNC_VARIABLE)
    with model.targeting("trn1"):
        assert model.runtime_lnc() == 1
        monkeypatch.setenv(core.LNC_VARIABLE, "2")
        with pytest.raises(ModelError, match="NEURON_LOGICAL_NC_CONFIG='2': trn1 runs logical NeuronCores of 1 "):
            k(x)
    with pytest.raises(ModelError, match=r"spmd_kernel\[3\]: a logical NeuronCore has 1 or 2 physical cores"):
        k[3]


def test_an_lnc_2_launch_runs_two_programs_on_two_cores(monkeypatch):
    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    k = model.jit(spmd_kernel)
    k[2](np.ones((2, 4), np.float32))
    launch = k.last_run
    assert launch.lnc == 2 and len(launch.cores) == 2 and launch.cores[0] is not launch.cores[1]
    assert [c.instructions("scalar", "activation") for c in launch.cores] == [1, 1]
    assert launch.instructions("dma") == 6 and launch.events["scalar", "activation", 4] == 2
    assert launch.sbuf_peak == 16 and launch.banks_peak == 0


def test_outputs_must_be_written_by_the_programs_together(monkeypatch):
    """A kernel whose program 0 alone writes (its share, guarded by program_id == 0) leaves program 1's rows of
    the shared output unwritten."""

    def only_program_0(x):
        p = nl.program_id(0)
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        if p == 0:
            nisa.dma_copy(dst=out[p : p + 1, :], src=x[p : p + 1, :])
        return out

    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    with pytest.raises(
        ModelError,
        match=r"kernel output .* \(2, 4\): 4 elements were never written \(by any of "
        r"the 2 programs\)",
    ):
        model.jit(only_program_0)[2](np.ones((2, 4), np.float32))


def test_shared_hbm_allocations_are_the_same_tensor_in_every_program(monkeypatch):
    def mismatched(x):
        out = nl.ndarray((x.shape[0] + nl.program_id(0), x.shape[1]), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out[0:2, :], src=x)
        return out

    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    with pytest.raises(
        ModelError,
        match=r"program 1 makes shared_hbm allocation 0 as \(3, 4\) float32, an "
        r"earlier program as \(2, 4\) float32",
    ):
        model.jit(mismatched)[2](np.ones((2, 4), np.float32))
    with on_core(), pytest.raises(ModelError, match="the model launches a one-axis grid"):
        nl.program_id(1)


def rng_kernel(seeding):
    """Draws 32 random bits on GpSimd after seeding (``seeding``: "vector": set_rng_seed, "gpsimd":
    rand_set_state) from ``seed`` ([1, 1] uint32, or [P, 6] XORWOW states)."""

    def kernel(seed):
        out = nl.ndarray((4, 8), nl.uint32, buffer=nl.shared_hbm)
        state = nl.ndarray(seed.shape, nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=state, src=seed)
        if seeding == "vector":
            nisa.set_rng_seed(state)
        else:
            nisa.rand_set_state(state, engine=nisa.gpsimd_engine)
        bits = nl.ndarray((4, 8), nl.uint32, buffer=nl.sbuf)
        nisa.rng(bits, engine=nisa.gpsimd_engine)
        nisa.dma_copy(dst=out, src=bits)
        return out

    return kernel


def test_each_engine_has_its_own_generator_gpsimd_seeded_by_rand_set_state():
    """set_rng_seed seeds the Vector Engine's generator, not GpSimd's: drawing on GpSimd after it reads an unseeded
    generator (refused); rand_set_state with 6 uint32 per lane seeds GpSimd's: seeds decide the bits."""
    with pytest.raises(
        ModelError,
        match=r"nisa.rng on gpsimd: partitions 0..3 draw from a generator this program "
        r"did not seed.*nisa.rand_set_state\(\.\.\., engine=gpsimd\)",
    ):
        run(rng_kernel("vector"), np.full((1, 1), 7, np.uint32))
    states = np.arange(1, 4 * 6 + 1, dtype=np.uint32).reshape(4, 6)
    first, _ = run(rng_kernel("gpsimd"), states)
    again, _ = run(rng_kernel("gpsimd"), states)
    other, _ = run(rng_kernel("gpsimd"), states + 1)
    assert np.array_equal(first, again) and not np.array_equal(first, other)
    with pytest.raises(
        ModelError,
        match=r"XORWOW state is 6 uint32 per lane: src_seeds must be a uint32 "
        r"\[lanes, 6\] tile, got \(4, 5\)",
    ):
        run(rng_kernel("gpsimd"), states[:, :5].copy())
    with pytest.raises(ModelError, match="partitions 0..3 draw from a generator this program did not seed"):
        run(rng_kernel("gpsimd"), states[:2].copy())  # lanes 2, 3 unseeded
    zero = states.copy()
    zero[1, :5] = 0
    with pytest.raises(ModelError, match="five xorshift words all zero, which draws only zeros"):
        run(rng_kernel("gpsimd"), zero)
    with model.targeting("trn1"), pytest.raises(ModelError, match="rand_set_state needs NeuronCore-v3"):
        run(rng_kernel("gpsimd"), states)


@given(st.lists(st.one_of(st.integers(1, 80), st.integers(-8, -1)), min_size=1, max_size=14))
def test_sbuf_peak_is_the_most_bytes_live_between_creation_and_last_use(plan):
    """Brute-force oracle: step by step, the KiB of tiles created at or before an instruction whose last use is at
    or after it. ``plan``: a positive entry allocates a tile of that many KiB per partition and memsets it, a
    negative one -j memsets the j-th newest tile again (when there is one)."""
    created, last_use, sizes, uses = [], [], [], []  # the oracle's instruction indices
    step = 0
    for entry in plan:
        if entry > 0:
            created.append(step)
            last_use.append(step)
            sizes.append(entry * 1024)
            uses.append(len(sizes) - 1)
            step += 1
        elif len(sizes) >= -entry:
            last_use[len(sizes) + entry] = step
            uses.append(len(sizes) + entry)
            step += 1
    peak = max(
        (sum(s for s, c, u in zip(sizes, created, last_use, strict=True) if c <= t <= u) for t in range(step)),
        default=0,
    )

    def kernel(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        tiles = ()
        for index in uses:
            if index == len(tiles):
                tiles = tiles + (nl.ndarray((128, sizes[index] // 4), nl.float32, buffer=nl.sbuf),)
            nisa.memset(tiles[index], 1.0)
        nisa.dma_copy(dst=out, src=x)
        return out

    if peak <= 224 * 1024 - 16384 - 8 - 256:
        _, launch = run(kernel, np.ones((1, 1), np.float32))
        assert launch.sbuf_peak == peak
    else:
        with pytest.raises(ModelError, match=f"SBUF budget exceeded: {peak} bytes per partition are live"):
            run(kernel, np.ones((1, 1), np.float32))


# --- LNC: the programs' control flow, core_barrier, shared memory between programs ---------------------------------
def looping(upper, extra_loop=False):
    """Program p writes p to its row of out; it runs a fori_loop of range(0, upper(p)) (and, with ``extra_loop``,
    program 1 one more loop). Static code differs between the programs (their rows, their values): fine."""

    def kernel(x):
        p = nl.program_id(0)
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.sbuf)
        nisa.memset(t, float(p))
        nl.fori_loop(0, upper(p), lambda i: nisa.tensor_copy(dst=t, src=t))
        if extra_loop and p == 1:
            nl.fori_loop(0, 1, lambda i: nisa.tensor_copy(dst=t, src=t))
        nisa.dma_copy(dst=out[p : p + 1, :], src=t)
        return out

    return kernel


@pytest.mark.parametrize(
    "upper, extra, difference",
    [
        (
            lambda p: 2 + p,
            False,
            r"program 0 runs loop #1 with range\(0, 2, 1\), program 1 runs loop #1 with "
            r"range\(0, 3, 1\)",
        ),
        (
            lambda p: 2,
            True,
            r"program 0 has no such loop \(its control flow ends after 1 steps\), program 1 runs loop "
            r"#2 with range\(0, 1, 1\)",
        ),
    ],
    ids=["different-trips", "an-extra-loop"],
)
def test_the_programs_of_a_launch_run_the_same_dynamic_control_flow(monkeypatch, upper, extra, difference):
    """Control flow that differs between the cores of a multi-core launch is undefined behaviour (lnc.rst): the
    launch is refused, naming the first difference; the same loops with program-dependent static code are fine."""
    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(
        ModelError,
        match=r"looping.kernel|kernel: the programs of an LNC=2 launch run different "
        r"dynamic control flow: " + difference + r".*lnc.rst.*program_id-dependent "
        r"static offsets",
    ):
        model.jit(looping(upper, extra))[2](x)
    k = model.jit(looping(lambda p: 2))
    np.testing.assert_array_equal(k[2](x), [[0.0] * 4, [1.0] * 4])
    assert [c.control_flow for c in k.last_run.cores] == [[("fori_loop", 0, 2, 1)]] * 2


def exchange(barrier, reader=None):
    """Program p writes x's row p into row p of a shared scratch, waits at a core_barrier about it (``barrier``),
    then copies row 1 - p of the scratch into out's row p. ``reader``: only that program reads (the other writes
    both rows of the scratch)."""

    def kernel(x):
        p = nl.program_id(0)
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        scratch = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm, name="scratch")
        t = nl.ndarray((1, x.shape[1]), nl.float32, buffer=nl.sbuf)
        if reader is None or p != reader:
            rows = slice(p, p + 1) if reader is None else slice(0, 2)
            nisa.dma_copy(dst=scratch[rows, :], src=x[rows, :])
        if barrier:
            nisa.core_barrier(scratch, (0, 1))
        nisa.dma_copy(dst=t, src=scratch[1 - p : 2 - p, :])
        nisa.dma_copy(dst=out[p : p + 1, :], src=t)
        return out

    return kernel


def test_core_barrier_lets_programs_read_what_the_other_wrote(monkeypatch):
    """Each program writes half of a shared scratch, waits at nisa.core_barrier(scratch, (0, 1)), and reads the
    other half: fine with the barrier; without it the read is of memory the reader may not see written (strict),
    even where the other program already ran (the model runs programs one at a time)."""
    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    k = model.jit(exchange(True))
    np.testing.assert_array_equal(k[2](x), x[::-1])
    launch = k.last_run
    assert [c.instructions("gpsimd", "core_barrier") for c in launch.cores] == [1, 1]
    assert [c.control_flow for c in launch.cores] == [[("core_barrier", (0, 1))]] * 2
    assert launch.cores[0].trace[1][:3] == ("gpsimd", "core_barrier", (1,))
    for reader in (None, 1):  # program 1 reads what program 0 wrote (it ran first) without a barrier
        with pytest.raises(ModelError, match="scratch' .* reads memory that was allocated but never written"):
            model.jit(exchange(False, reader))[2](x)
    np.testing.assert_array_equal(model.jit(exchange(True, 1))[2](x)[1], x[0])


def test_core_barrier_reached_by_one_program_only_and_errors_while_another_waits(monkeypatch):
    """A barrier only program 1 reaches is a control-flow difference (the launch does not hang); an error in one
    program while the other waits at a barrier is raised in the caller."""
    monkeypatch.setenv(core.LNC_VARIABLE, "2")

    def lonely(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        p = nl.program_id(0)
        if p == 1:
            nisa.core_barrier(out, (0, 1))
        nisa.dma_copy(dst=out[p : p + 1, :], src=x[p : p + 1, :])
        return out

    with pytest.raises(
        ModelError,
        match=r"program 0 has no such barrier \(its control flow ends after 0 steps\), "
        r"program 1 reaches nisa.core_barrier #1 \(cores \(0, 1\)\).*lnc.rst",
    ):
        model.jit(lonely)[2](np.ones((2, 4), np.float32))

    def failing(x):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        p = nl.program_id(0)
        if p == 1:
            nisa.memset(nl.ndarray((1, 4), nl.float32, buffer=nl.sbuf), 1)  # an int into a float tile
        nisa.core_barrier(out, (0, 1))
        nisa.dma_copy(dst=out[p : p + 1, :], src=x[p : p + 1, :])
        return out

    with pytest.raises(ModelError, match="a float dst takes a float value"):
        model.jit(failing)[2](np.ones((2, 4), np.float32))
    with (
        on_core(),
        pytest.raises(
            ModelError,
            match=r"cores must be the tuple of the launch's program ids, \(0,\) "
            r"at LNC=1.*got \[0\]",
        ),
    ):
        nisa.core_barrier(sbuf_tile((1, 1)), [0])


# --- classes in kernels ---------------------------------------------------------------------------------------
class Plan(NamedTuple):
    """Not an NKI class: a NamedTuple is a tuple subclass of typing's."""

    rows: int


@dataclasses.dataclass
class Step:
    rows: int


class Shape(nl.NKIObject):
    """An NKI class: inherits nl.NKIObject only."""

    def __init__(self, rows: int) -> None:
        self.rows = rows


def plan_helper(rows):
    return Plan(rows)


@pytest.mark.parametrize(
    "case, held",
    [
        ("local", r"variable 'plan' of kernel .* holds an instance of tests.kernels.test_nki_model.Plan"),
        ("helper", r"its return value of plan_helper .* holds an instance of tests.kernels.test_nki_model.Plan"),
        (
            "list",
            r"variable 'plan' of kernel .* holds an instance of tests.kernels.test_nki_model.Step \(inside a "
            r"list\)",
        ),
    ],
)
def test_kernel_frames_hold_only_builtins_model_types_and_nki_objects(monkeypatch, case, held):
    """NKI traces only instances of classes that inherit nl.NKIObject (and plain tuples, builtins): a kernel frame
    holding a NamedTuple or a dataclass instance is refused while the kernel runs (each program, in its thread);
    an NKIObject is fine."""

    def kernel(x, case):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        if case == "local":
            plan = Plan(2)
        elif case == "helper":
            plan = plan_helper(1).rows
        elif case == "list":
            plan = [Step(1)]
        else:
            plan = (Shape(2), {"rows": Shape(3)})
        nisa.dma_copy(dst=out, src=x)
        assert plan is not None
        return out

    with pytest.raises(ModelError, match=r"kernel: " + held + r".*nl.NKIObject.*nki-language-guide.rst"):
        run(kernel, np.ones((1, 1), np.float32), case)
    run(kernel, np.ones((1, 1), np.float32), "nki-object")
    assert sys.gettrace() is None  # the tracer is removed after the launch
    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    with pytest.raises(ModelError, match=held):
        model.jit(kernel)[2](np.ones((1, 1), np.float32), case)


def test_a_kernel_argument_of_a_foreign_class_is_refused_and_a_tracer_in_place_is_kept():
    def kernel(x, plan):
        out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        return out

    with pytest.raises(
        ModelError,
        match=r"variable 'plan' of kernel .*when it is called\) holds an instance of "
        r"tests.kernels.test_nki_model.Plan",
    ):
        run(kernel, np.ones((1, 1), np.float32), Plan(1))
    run(kernel, np.ones((1, 1), np.float32), (1, 2))

    def tracer(frame, event, arg):
        return None

    sys.settrace(tracer)  # a debugger's: the runtime check steps aside (the static one stays)
    try:
        run(kernel, np.ones((1, 1), np.float32), Plan(1))
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(None)


def test_kernel_sources_import_only_the_toolchain_and_define_only_nki_classes(tmp_path, monkeypatch):
    """In a kernel source (a module taking NKI from ``.toolchain``), jit refuses imports of anything else and
    classes whose bases are not exactly nl.NKIObject, naming file:line."""
    package = tmp_path / "planted_kernel_sources"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "toolchain.py").write_text("from trn_backend.kernels.nki.model import isa as nisa, language as nl\n")
    body = "\n\ndef kernel(x):\n    return x\n"
    sources = {
        "fine": "from __future__ import annotations\n\nfrom .toolchain import nl, nisa\n\n\n"
        "class Plan(nl.NKIObject):\n    pass\n\n\nNKIObject = nl.NKIObject\n\n\n"
        "class Other(NKIObject):\n    pass\n",
        "typing": "from .toolchain import nl\nfrom typing import NamedTuple\n",
        "dataclass": "from .toolchain import nl\n\n\ndef helper():\n    import dataclasses\n",
        "plain_class": "from .toolchain import nl\n\n\nclass Plan:\n    pass\n",
        "two_bases": "from .toolchain import nl\n\n\nclass Plan(nl.NKIObject, tuple):\n    pass\n",
    }
    for name, source in sources.items():
        (package / f"{name}.py").write_text(source + body)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    def jit(name):
        return model.jit(importlib.import_module(f"planted_kernel_sources.{name}").kernel)

    jit("fine")
    with pytest.raises(
        ModelError,
        match=r"typing.py:2: `from typing import NamedTuple` in a kernel source.*"
        r"nki-language-guide.rst.*from .toolchain import nki, nl, nisa",
    ):
        jit("typing")
    with pytest.raises(ModelError, match=r"dataclass.py:5: `import dataclasses` in a kernel source"):
        jit("dataclass")
    with pytest.raises(
        ModelError,
        match=r"plain_class.py:4: `class Plan\(\)` in a kernel source: NKI supports only "
        r"classes that inherit nl.NKIObject.*class Plan\(nl.NKIObject\):",
    ):
        jit("plain_class")
    with pytest.raises(ModelError, match=r"two_bases.py:4: `class Plan\(nl.NKIObject, tuple\)`"):
        jit("two_bases")


# --- the simulator's form and kernel inputs ---------------------------------------------------------------------
def test_simulate_takes_the_launch_kernel_lnc(monkeypatch):
    """``nki.simulate(kernel[lnc])(...)`` (the jit stub's example); ``nki.simulate(kernel)[lnc]`` is refused."""
    monkeypatch.setenv(core.LNC_VARIABLE, "2")
    k = model.jit(spmd_kernel)
    x = np.ones((2, 4), np.float32)
    np.testing.assert_array_equal(model.simulate(k[2])(x), [[20.0] * 4, [21.0] * 4])
    assert k.last_run.lnc == 2 and repr(k[2]) == "spmd_kernel[2]"
    with pytest.raises(
        ModelError,
        match=r"nki.simulate\(spmd_kernel\)\[2\]: .*write nki.simulate\(spmd_kernel\[2\]\)"
        r"\(\.\.\.\)",
    ):
        model.simulate(k)[2]
    monkeypatch.setenv(core.LNC_VARIABLE, "1")
    np.testing.assert_array_equal(model.simulate(k)(x[:1]), [[10.0] * 4])  # a Kernel: LNC=1
    np.testing.assert_array_equal(model.simulate(spmd_kernel)(x[:1]), [[10.0] * 4])  # a plain function too


def test_unsigned_torch_inputs_other_than_uint8_are_refused():
    """torch's uint16/32/64 have limited support: pass int32 bits and reinterpret them on chip."""

    def kernel(bits):
        out = nl.ndarray(bits.shape, nl.uint32, buffer=nl.shared_hbm)
        t = nl.ndarray(bits.shape, nl.uint32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=bits.view(nl.uint32))
        nisa.dma_copy(dst=out, src=t)
        return out

    values = torch.tensor([[1, -1]], dtype=torch.int32)
    with pytest.raises(
        ModelError,
        match=r"kernel input 0: a torch.uint32 tensor: .*pass the bits as int32 .*"
        r"\.view\(nl.uint32\)",
    ):
        run(kernel, values.to(torch.uint32))
    out, _ = run(kernel, values)
    assert out.dtype == torch.uint32 and out.view(torch.int32).tolist() == [[1, -1]]
    run(kernel, torch.ones((1, 2), dtype=torch.uint8).to(torch.int32))  # int32 (and uint8) inputs are fine
