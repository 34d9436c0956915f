"""Calibration fixtures for the cost model: our own ports, to the CPU model's API, of NKI matmul kernels whose
time on hardware was published. Each keeps what decides its cost: tile sizes, loop order, what each DMA moves
and its contiguous run in HBM, where PSUM is evacuated and on which engine, and which allocations live for a
loop body (a per-iteration helper function here, so its tiles die when the body ends, as they do in the original).

Legacy tutorial (aws-neuron/aws-neuron-sdk @ 631eadc94c96be48a0dcd2be65bfb37da1e91b40,
``general/nki/tutorials/matrix_multiplication.rst``, kernels in
``general/nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py``): lhsT [K, M], rhs [K, N], a
result in the inputs' dtype. Its ``nl.zeros(..., buffer=nl.psum)`` followed by ``+=`` of matmuls is one PSUM
accumulation group (accumulate=False, then True here: the model rejects adding onto memset PSUM); ``nl.load``,
``nl.store`` and ``nl.copy`` are ``dma_copy`` and ``tensor_copy`` (Vector Engine, the model's default).

- ``tutorial_tiled``: loops m, n, k over 128 x 512 output tiles; both operand tiles loaded inside k.
- ``tutorial_hoisted`` (optimization 1): a column of lhsT tiles per m, a column of rhs tiles per n. (The original
  allocates the lhsT column 512 wide and fills 128 of it; this port allocates the 128 it uses.)
- ``tutorial_blocked`` (optimization 2): blocks of 2 x 2 output tiles, both operands loaded per block over all K.
- ``tutorial_optimized`` (optimization 3): blocks of 16 M tiles, 2 N tiles, 8 K tiles; N blocks outermost, an
  SBUF accumulator per N block in the output dtype, rhs block rows of 1024 and lhsT block rows of 2048 elements
  per DMA, one PSUM group per (K block, output tile) added to the accumulator on the Vector Engine, and results
  stored 1024 wide.

nki-autotune hand kernel (awslabs/nki-autotune, ``kernel_library/matmul/lhsT_rhs/kernel_hand_90.92mfu.py``,
described in ``kernel_library/README.md``): 2048^3 bf16, ``hand_2048``. N blocks of 512 outermost, K blocks of
1024, M blocks of 512; every load and store moves [128, 512] bf16 (1 KiB runs); lhsT is reloaded per N block;
per output tile a PSUM tile zeroed by a memset, 8 matmuls, a copy of PSUM into a bf16 tile and a bf16 add into the
SBUF result. As in the tutorial ports, the zeroing is the group's first matmul (accumulate=False), not a memset
instruction; the engines of its copy and add are left to the compiler there (the Vector Engine here).

``POINTS``: the published times, each with its source; ``estimate(point)`` runs a port on the CPU model's target
(counting only) and prices it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from unittest import mock

from trn_backend.kernels.nki import cost, model
from trn_backend.kernels.nki.model import isa as nisa
from trn_backend.kernels.nki.model import language as nl

TILE_K, TILE_M, TILE_N = 128, 128, 512


def _accumulate(psum, stationary_tiles, moving_tiles):
    """One PSUM accumulation group: psum = sum over k of stationary_tiles[k].T @ moving_tiles[k]."""
    for k, (stationary, moving) in enumerate(zip(stationary_tiles, moving_tiles, strict=True)):
        nisa.nc_matmul(dst=psum, stationary=stationary, moving=moving, accumulate=k > 0)


def _evacuate_and_store(result_view, psum, dtype):
    """PSUM -> an SBUF tile of the result dtype -> HBM (the tutorial's nl.copy and nl.store)."""
    tile = nl.ndarray(psum.shape, dtype=dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=tile, src=psum)
    nisa.dma_copy(dst=result_view, src=tile)


# --- the legacy tutorial -------------------------------------------------------------------------------------
def tutorial_tiled(lhs_t, rhs):
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // TILE_M):
        for n in range(n_size // TILE_N):
            _tiled_output_tile(result, lhs_t, rhs, m, n, k_size // TILE_K)
    return result


def _tiled_output_tile(result, lhs_t, rhs, m, n, k_tiles):
    psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
    for k in range(k_tiles):
        lhs_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhs_t.dtype, buffer=nl.sbuf)
        rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=lhs_tile, src=lhs_t[k * TILE_K:(k + 1) * TILE_K, m * TILE_M:(m + 1) * TILE_M])
        nisa.dma_copy(dst=rhs_tile, src=rhs[k * TILE_K:(k + 1) * TILE_K, n * TILE_N:(n + 1) * TILE_N])
        nisa.nc_matmul(dst=psum, stationary=lhs_tile, moving=rhs_tile, accumulate=k > 0)
    _evacuate_and_store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], psum, result.dtype)


def _load_columns(hbm, first_column, width, k_tiles):
    """A column of K tiles [128, width] of ``hbm`` (K rows) from ``first_column``, one DMA per K tile, into one
    SBUF tensor [128, k_tiles, width]."""
    tiles = nl.ndarray((TILE_K, k_tiles, width), dtype=hbm.dtype, buffer=nl.sbuf)
    for k in range(k_tiles):
        nisa.dma_copy(dst=tiles[:, k, :], src=hbm[k * TILE_K:(k + 1) * TILE_K, first_column:first_column + width])
    return tiles


def tutorial_hoisted(lhs_t, rhs):
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // TILE_M):
        _hoisted_row(result, lhs_t, rhs, m, k_size // TILE_K)
    return result


def _hoisted_row(result, lhs_t, rhs, m, k_tiles):
    lhs_tiles = _load_columns(lhs_t, m * TILE_M, TILE_M, k_tiles)
    for n in range(rhs.shape[1] // TILE_N):
        _hoisted_tile(result, lhs_tiles, rhs, m, n, k_tiles)


def _hoisted_tile(result, lhs_tiles, rhs, m, n, k_tiles):
    rhs_tiles = _load_columns(rhs, n * TILE_N, TILE_N, k_tiles)
    psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
    _accumulate(psum, [lhs_tiles[:, k, :] for k in range(k_tiles)], [rhs_tiles[:, k, :] for k in range(k_tiles)])
    _evacuate_and_store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N], psum, result.dtype)


BLOCK_FREE_M, BLOCK_FREE_N = 2, 2  # optimization 2: output tiles per block


def tutorial_blocked(lhs_t, rhs):
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    for m in range(m_size // (BLOCK_FREE_M * TILE_M)):
        _blocked_row(result, lhs_t, rhs, m, k_size // TILE_K)
    return result


def _blocked_row(result, lhs_t, rhs, m, k_tiles):
    lhs_blocks = [_load_columns(lhs_t, (m * BLOCK_FREE_M + bm) * TILE_M, TILE_M, k_tiles)
                  for bm in range(BLOCK_FREE_M)]
    for n in range(rhs.shape[1] // (BLOCK_FREE_N * TILE_N)):
        _blocked_block(result, lhs_blocks, rhs, m, n, k_tiles)


def _blocked_block(result, lhs_blocks, rhs, m, n, k_tiles):
    rhs_blocks = [_load_columns(rhs, (n * BLOCK_FREE_N + bn) * TILE_N, TILE_N, k_tiles)
                  for bn in range(BLOCK_FREE_N)]
    for bm, lhs_tiles in enumerate(lhs_blocks):
        for bn, rhs_tiles in enumerate(rhs_blocks):
            psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            _accumulate(psum, [lhs_tiles[:, k, :] for k in range(k_tiles)],
                        [rhs_tiles[:, k, :] for k in range(k_tiles)])
            row, column = (m * BLOCK_FREE_M + bm) * TILE_M, (n * BLOCK_FREE_N + bn) * TILE_N
            _evacuate_and_store(result[row:row + TILE_M, column:column + TILE_N], psum, result.dtype)


TILES_M, TILES_N, TILES_K = 16, 2, 8  # optimization 3: tiles per block (the tutorial's defaults)


def tutorial_optimized(lhs_t, rhs):
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    result = nl.ndarray((m_size, n_size), dtype=lhs_t.dtype, buffer=nl.shared_hbm)
    blocks_m = m_size // (TILES_M * TILE_M)
    for n in range(n_size // (TILES_N * TILE_N)):
        _optimized_column(result, lhs_t, rhs, n, blocks_m, k_size // (TILES_K * TILE_K))
    return result


def _optimized_column(result, lhs_t, rhs, n, blocks_m, blocks_k):
    block_n = TILES_N * TILE_N
    # the SBUF accumulator of every output tile of this N block, in the result dtype, zeroed
    totals = nl.ndarray((TILE_M, blocks_m, TILES_M, TILES_N, TILE_N), dtype=result.dtype, buffer=nl.sbuf)
    nisa.memset(dst=totals, value=0.0)
    for k in range(blocks_k):
        _optimized_k_block(totals, lhs_t, rhs, n, k, blocks_m)
    for m in range(blocks_m):
        for bm in range(TILES_M):
            packed = nl.ndarray((TILE_M, block_n), dtype=result.dtype, buffer=nl.sbuf)
            for bn in range(TILES_N):
                nisa.tensor_copy(dst=packed[:, bn * TILE_N:(bn + 1) * TILE_N], src=totals[:, m, bm, bn, :])
            row = (m * TILES_M + bm) * TILE_M
            nisa.dma_copy(dst=result[row:row + TILE_M, n * block_n:(n + 1) * block_n], src=packed)


def _optimized_k_block(totals, lhs_t, rhs, n, k, blocks_m):
    block_m, block_n = TILES_M * TILE_M, TILES_N * TILE_N
    rhs_tiles = nl.ndarray((TILE_K, TILES_K, block_n), dtype=rhs.dtype, buffer=nl.sbuf)
    for bk in range(TILES_K):
        row = (k * TILES_K + bk) * TILE_K
        nisa.dma_copy(dst=rhs_tiles[:, bk, :], src=rhs[row:row + TILE_K, n * block_n:(n + 1) * block_n])
    for m in range(blocks_m):
        _optimized_block(totals, lhs_t, rhs_tiles, k, m, block_m)


def _optimized_block(totals, lhs_t, rhs_tiles, k, m, block_m):
    lhs_tiles = nl.ndarray((TILE_K, TILES_K, block_m), dtype=lhs_t.dtype, buffer=nl.sbuf)
    for bk in range(TILES_K):
        row = (k * TILES_K + bk) * TILE_K
        nisa.dma_copy(dst=lhs_tiles[:, bk, :], src=lhs_t[row:row + TILE_K, m * block_m:(m + 1) * block_m])
    for bn in range(TILES_N):
        for bm in range(TILES_M):
            psum = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            _accumulate(psum, [lhs_tiles[:, bk, bm * TILE_M:(bm + 1) * TILE_M] for bk in range(TILES_K)],
                        [rhs_tiles[:, bk, bn * TILE_N:(bn + 1) * TILE_N] for bk in range(TILES_K)])
            total = totals[:, m, bm, bn, :]
            nisa.tensor_tensor(dst=total, data1=total, data2=psum, op=nl.add)


# --- the nki-autotune hand kernel (trn2, 2048^3 bf16) ----------------------------------------------------------
HAND_N, HAND_K, HAND_M = 512, 1024, 512  # block sizes along N (outermost), K and M (innermost)


def hand_2048(lhs_t, rhs):
    k_size, m_size = lhs_t.shape
    n_size = rhs.shape[1]
    out = nl.ndarray((m_size, n_size), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    # the result of one N block: one [128, 512] bf16 tile per M tile (four such sets rotate in the original)
    results = [[nl.ndarray((TILE_M, HAND_N), dtype=nl.bfloat16, buffer=nl.sbuf) for _ in range(m_size // TILE_M)]
               for _ in range(4)]
    for n in range(n_size // HAND_N):
        _hand_n_block(out, lhs_t, rhs, results[n % 4], n, k_size, m_size)
    return out


def _hand_n_block(out, lhs_t, rhs, result, n, k_size, m_size):
    k_tiles, m_blocks = HAND_K // TILE_K, m_size // HAND_M
    # the original's double- and quadruple-buffered operand tiles, [128, 512] bf16 each
    lhs_buffers = [[[nl.ndarray((TILE_K, HAND_M), dtype=nl.bfloat16, buffer=nl.sbuf) for _ in range(k_tiles)]
                    for _ in range(4)] for _ in range(2)]
    rhs_buffers = [[nl.ndarray((TILE_K, HAND_N), dtype=nl.bfloat16, buffer=nl.sbuf) for _ in range(k_tiles)]
                   for _ in range(2)]
    for tile in result:
        nisa.memset(dst=tile, value=0.0)
    for k in range(k_size // HAND_K):
        rhs_tiles = rhs_buffers[k % 2]
        for t, tile in enumerate(rhs_tiles):
            row = k * HAND_K + t * TILE_K
            nisa.dma_copy(dst=tile, src=rhs[row:row + TILE_K, n * HAND_N:(n + 1) * HAND_N])
        for m in range(m_blocks):
            lhs_tiles = lhs_buffers[k % 2][m % 4]
            for t, tile in enumerate(lhs_tiles):
                row = k * HAND_K + t * TILE_K
                nisa.dma_copy(dst=tile, src=lhs_t[row:row + TILE_K, m * HAND_M:(m + 1) * HAND_M])
            for i in range(HAND_M // TILE_M):
                _hand_output_tile(result[m * (HAND_M // TILE_M) + i], lhs_tiles, rhs_tiles, i)
    for t, tile in enumerate(result):
        nisa.dma_copy(dst=out[t * TILE_M:(t + 1) * TILE_M, n * HAND_N:(n + 1) * HAND_N], src=tile)


def _hand_output_tile(total, lhs_tiles, rhs_tiles, i):
    psum = nl.ndarray((TILE_M, HAND_N), dtype=nl.float32, buffer=nl.psum)
    _accumulate(psum, [tile[:, i * TILE_M:(i + 1) * TILE_M] for tile in lhs_tiles], rhs_tiles)
    partial = nl.ndarray((TILE_M, HAND_N), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=partial, src=psum)
    nisa.tensor_tensor(dst=total, data1=total, data2=partial, op=nl.add)


# --- the published measurements --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Point:
    """A published time of one kernel: our port, where it ran, on what, and the source."""

    name: str
    generation: str
    lhs_t: tuple[int, int]  # [K, M], bf16
    rhs: tuple[int, int]  # [K, N], bf16
    published_s: float
    source: str

    @property
    def flops(self) -> int:
        return 2 * self.lhs_t[0] * self.lhs_t[1] * self.rhs[1]


# Legacy NKI matmul tutorial, Trn1 (one NeuronCore-v2), bf16 lhsT [8192, 4096] @ rhs [8192, 8192], latency by
# nki.benchmark: aws-neuron/aws-neuron-sdk @ 631eadc94c96be48a0dcd2be65bfb37da1e91b40,
# general/nki/tutorials/matrix_multiplication.rst (the table of its four kernels).
TUTORIAL = "NKI matmul tutorial (legacy), aws-neuron-sdk@631eadc9"
# awslabs/nki-autotune kernel_library/README.md: trn2, 2048^3 bf16, the hand kernel at 90.92% MFU of one
# NeuronCore-v3's 78.6 bf16 TFLOPS (128 x 128 x 2 FLOP x 2.4 GHz, SDK trainium2_arch.rst):
# 2 * 2048**3 / (0.9092 * 78.64e12) s = 0.2403 ms.
AUTOTUNE = "nki-autotune kernel_library, hand kernel at 90.92% MFU"
POINTS = (
    Point("tutorial_tiled", "trn1", (8192, 4096), (8192, 8192), 51.80e-3, f"{TUTORIAL}: original tiled"),
    Point("tutorial_hoisted", "trn1", (8192, 4096), (8192, 8192), 42.96e-3, f"{TUTORIAL}: optimization 1"),
    Point("tutorial_blocked", "trn1", (8192, 4096), (8192, 8192), 22.07e-3, f"{TUTORIAL}: optimization 2"),
    Point("tutorial_optimized", "trn1", (8192, 4096), (8192, 8192), 6.97e-3, f"{TUTORIAL}: optimization 3"),
    Point("hand_2048", "trn2", (2048, 2048), (2048, 2048), 0.2403e-3, AUTOTUNE),
)


@functools.cache
def _run(point: Point):
    """The port's counting run on one physical core: a runtime of LNC=1, the published kernels' configuration
    (their utilization is against one core's peak), which their plain launch matches."""
    kernel = model.jit(globals()[point.name])
    with mock.patch.dict(os.environ, {model.core.LNC_VARIABLE: "1"}), model.targeting(point.generation), \
            model.counting_only():
        kernel(model.shape_only(point.lhs_t, nl.bfloat16), model.shape_only(point.rhs, nl.bfloat16))
    return kernel.last_run


def estimate(point: Point, calibration: cost.Calibration | None = None) -> cost.Estimate:
    """The cost model's time of ``point``'s port on its generation (one physical core, LNC=1)."""
    return cost.estimate(_run(point), cost.GENERATIONS[point.generation], point.name, point.flops, False,
                         calibration)
