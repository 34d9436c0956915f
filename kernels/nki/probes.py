"""Small NKI kernels that probe what the matmul kernels assume of the device (``check-neuron``'s device
assumptions section) and measure what the cost model's calibration needs (``check-neuron --json``):

- ``add_subtract``: x + y and x - y of fp32 tiles, one ``tensor_tensor`` each, on the Vector Engine or GpSimd.
  dd's and bf16x6's split (lo = x - hi, exact) and their TwoSum (half its steps on GpSimd) are exact only if these
  are correctly rounded (IEEE, nearest even), which the NKI documentation does not say for either engine.
- ``round_to_bf16``: an fp32 tile cast to bf16 by ``tensor_copy`` on the Vector Engine or GpSimd (fast's on-chip
  cast of fp32 operands runs on GpSimd), the cast whose rounding NEURON_RT_STOCHASTIC_ROUNDING_EN may change (no
  NKI instruction has a rounding-mode argument).
- ``dma_runs``: HBM -> SBUF transfers of a fixed size in contiguous runs of a chosen length (DMA bandwidth by run
  length: the NKI DMA guide says runs below 2 KiB per partition stream below peak).
- ``launch``: the smallest kernel (one tile in, one out): its first call is compile and load, later ones the launch.

Style as in ``matmul.py``: plain functions (the host jits them), only documented NKI 0.6 names, no ``is``, no
``*`` in signatures, tuples not lists.
"""

from .toolchain import nisa, nl


def add_subtract(x, y, on_gpsimd):
    """out[0] = x + y, out[1] = x - y for fp32 x, y [P <= 128, F] in HBM, in fp32 on GpSimd (``on_gpsimd``) or the
    Vector Engine."""
    engine = nisa.gpsimd_engine if on_gpsimd else nisa.vector_engine
    rows, cols = x.shape
    out = nl.ndarray((2, rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    xt = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    yt = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=xt, src=x)
    nisa.dma_copy(dst=yt, src=y)
    total = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=xt, data2=yt, op=nl.add, engine=engine)
    difference = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=difference, data1=xt, data2=yt, op=nl.subtract, engine=engine)
    nisa.dma_copy(dst=out[0], src=total)
    nisa.dma_copy(dst=out[1], src=difference)
    return out


def round_to_bf16(x, on_gpsimd):
    """fp32 x [P <= 128, F] in HBM -> bf16 [P, F]: the cast of ``tensor_copy`` on GpSimd (``on_gpsimd``) or the
    Vector Engine."""
    engine = nisa.gpsimd_engine if on_gpsimd else nisa.vector_engine
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    wide = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=wide, src=x)
    narrow = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=wide, engine=engine)
    nisa.dma_copy(dst=out, src=narrow)
    return out


def dma_runs(src):
    """fp32 src [T, P <= 128, blocks, 2 r] in HBM: transfer t copies src[t, :, :, :r] (per partition, ``blocks``
    contiguous runs of 4 r bytes, each followed by a gap as long) into its own region of one SBUF tile, so no
    transfer overwrites another. out [P, T] is each transfer's first element (the host checks it arrived)."""
    transfers, rows, blocks, doubled = src.shape
    run = doubled // 2
    tile = nl.ndarray((rows, transfers, blocks, run), dtype=nl.float32, buffer=nl.sbuf)
    for t in range(transfers):
        nisa.dma_copy(dst=tile[:, t], src=src[t, :, :, 0:run])
    out = nl.ndarray((rows, transfers), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=tile[:, :, 0, 0])
    return out


def launch(x):
    """fp32 x [P <= 128, F] in HBM copied through SBUF to the output: as little work as a kernel can do."""
    rows, cols = x.shape
    out = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.shared_hbm)
    tile = nl.ndarray((rows, cols), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=tile, src=x)
    nisa.dma_copy(dst=out, src=tile)
    return out
