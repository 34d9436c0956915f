"""NKI kernels for the Tensor Engine: ``matmul`` C[M, N] = A[M, K] @ B[K, N] and ``bmm`` over a leading batch, with
fp32 results, for NKI 0.6+ on Trainium2/3 (and the CPU model of the NeuronCore in ``model/``).

``nisa.nc_matmul(dst, stationary, moving)`` computes stationary.T @ moving with K on the partition axis of both:
A enters as A^T tiles [K <= 128, M <= 128] (the stationary operand), B as [K <= 128, N <= 512] tiles (moving), and
each output tile [M, N] accumulates its K tiles in one fp32 PSUM bank (accumulate=False on the first, True after:
never onto memory a matmul did not write). ``a`` is either A^T [K, M] (a view the host hands over when A's strides
allow: no transposition at all) or A [M, K], transposed on chip 128 x 128 at a time on the Tensor Engine.

Blocking: the output is cut into blocks of BLOCK_TILES_M x BLOCK_TILES_N tiles and K into blocks of as many K tiles
as the SBUF budget allows; each block's A^T and B tiles are loaded into SBUF once and reused by every tile of
the block (A's block once per M block when K fits in one block). Sums across K blocks are fp32 in SBUF (the
documented tutorial adds them in the output dtype, which rounds bf16 outputs once per block: not here).

Modes: ``fast`` multiplies bf16 operands (fp32 inputs are rounded to bf16 on chip, on GpSimd) at the full Tensor
Engine rate; ``native`` multiplies fp32 operands (the Tensor Engine's fp32 path, at a quarter of that rate).

The kernel functions are plain Python; the host wraps them with the toolchain's ``nki.jit``. Only documented NKI
0.6 names appear here (tests/test_nki_api.py checks it), no ``is``, no ``*`` in signatures, tuples not lists.
"""

from .toolchain import nisa, nl

TILE_K = 128  # partitions (nl.tile_size.pmax): the contraction dimension of one nc_matmul
TILE_M = 128  # stationary free size (nl.tile_size.gemm_stationary_fmax)
TILE_N = 512  # moving free size (nl.tile_size.gemm_moving_fmax): 512 fp32 fill one 2 KiB PSUM bank
BLOCK_TILES_M = 4  # output tiles per block along M: each loaded B tile serves this many stationary tiles
BLOCK_TILES_N = 2  # and along N: each loaded A^T tile serves this many moving tiles
STAGING_BYTES = 16 * 1024  # per partition: fp32 tiles staged for the bf16 rounding and the on-chip transposes


def matmul(a, b, a_is_transposed, fast):
    """C = A @ B in fp32 (see the module docstring for ``a``'s two layouts and the modes)."""
    m = a.shape[1] if a_is_transposed else a.shape[0]
    out = nl.ndarray((m, b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _product(out, a, b, a_is_transposed, fast)
    return out


def bmm(a, b, a_is_transposed, fast):
    """C[i] = A[i] @ B[i] for each i of the leading batch dimension."""
    m = a.shape[2] if a_is_transposed else a.shape[1]
    out = nl.ndarray((a.shape[0], m, b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in range(a.shape[0]):
        _product(out[i], a[i], b[i], a_is_transposed, fast)
    return out


def _tiles(size, tile):
    return (size + tile - 1) // tile


def block_sizes(m, k, n, fast, sbuf_bytes):
    """(block_m, k_tiles per block, block_n) for these sizes within ``sbuf_bytes`` per partition. A block's
    operand tiles and result are double-buffered (the next block's load overlaps this block's matmuls), so two
    of each must fit beside the staging tiles."""
    block_m = min(BLOCK_TILES_M * TILE_M, m)
    block_n = min(BLOCK_TILES_N * TILE_N, n)
    width = 2 if fast else 4
    result = _tiles(block_m, TILE_M) * block_n * 4
    room = (sbuf_bytes - STAGING_BYTES) // 2 - result
    k_tiles = min(_tiles(k, TILE_K), room // ((block_m + block_n) * width))
    if k_tiles < 1:
        raise ValueError(f"nki matmul: {sbuf_bytes} bytes of SBUF per partition cannot hold one K tile of a "
                         f"{block_m} x {block_n} block")
    return block_m, k_tiles, block_n


def _product(out, a, b, a_is_transposed, fast):
    """out[M, N] = A @ B, block by block."""
    k, n = b.shape
    m = out.shape[0]
    operand = nl.bfloat16 if fast else nl.float32
    block_m, k_tiles, block_n = block_sizes(m, k, n, fast, nl.tile_size.sbuf_fmax_bytes)
    block_k = k_tiles * TILE_K
    one_k_block = k <= block_k
    for m0 in range(0, m, block_m):
        ms = min(block_m, m - m0)
        if one_k_block:  # A's block serves every N block: load it once
            a_tiles = _load_stationary(a, m0, ms, 0, k, a_is_transposed, operand, k_tiles, block_m)
        for n0 in range(0, n, block_n):
            ns = min(block_n, n - n0)
            result = nl.ndarray((TILE_M, _tiles(block_m, TILE_M), block_n), dtype=nl.float32, buffer=nl.sbuf)
            for k0 in range(0, k, block_k):
                ks = min(block_k, k - k0)
                if not one_k_block:
                    a_tiles = _load_stationary(a, m0, ms, k0, ks, a_is_transposed, operand, k_tiles, block_m)
                b_tiles = _load_moving(b, k0, ks, n0, ns, operand, k_tiles, block_n)
                _multiply(result, a_tiles, b_tiles, ms, ks, ns, k0 == 0)
            for i in range(_tiles(ms, TILE_M)):
                rows = min(TILE_M, ms - i * TILE_M)
                nisa.dma_copy(dst=out[m0 + i * TILE_M:m0 + i * TILE_M + rows, n0:n0 + ns],
                              src=result[0:rows, i, 0:ns])


def _load(dst, src):
    """HBM -> SBUF; fp32 data for a bf16 operand is staged in SBUF and rounded to nearest even on GpSimd (the
    engine PSUM evictions leave free)."""
    if src.dtype == dst.dtype:
        nisa.dma_copy(dst=dst, src=src)
    else:
        staged = nl.ndarray(dst.shape, dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=staged, src=src)
        nisa.tensor_copy(dst=dst, src=staged, engine=nisa.gpsimd_engine)


def _load_stationary(a, m0, ms, k0, ks, a_is_transposed, operand, k_tiles, block_m):
    """A^T[k0:k0+ks, m0:m0+ms] as SBUF tiles [K tile partitions, k tile, m]."""
    tiles = nl.ndarray((TILE_K, k_tiles, block_m), dtype=operand, buffer=nl.sbuf)
    for t in range(_tiles(ks, TILE_K)):
        kk = k0 + t * TILE_K
        kr = min(TILE_K, ks - t * TILE_K)
        if a_is_transposed:
            _load(tiles[0:kr, t, 0:ms], a[kk:kk + kr, m0:m0 + ms])
        else:
            for i in range(_tiles(ms, TILE_M)):
                mm = m0 + i * TILE_M
                mr = min(TILE_M, ms - i * TILE_M)
                _load_transposed(tiles[0:kr, t, i * TILE_M:i * TILE_M + mr], a[mm:mm + mr, kk:kk + kr])
    return tiles


def _load_transposed(dst, src):
    """dst[kr, mr] (SBUF) = src[mr, kr]^T (HBM): loaded with rows on partitions, transposed on the Tensor Engine
    (bit-exact from NeuronCore-v3) into PSUM, copied out by the Vector Engine."""
    rows = nl.ndarray((src.shape[0], src.shape[1]), dtype=dst.dtype, buffer=nl.sbuf)
    _load(rows, src)
    flipped = nl.ndarray((src.shape[1], src.shape[0]), dtype=dst.dtype, buffer=nl.psum)
    nisa.nc_transpose(dst=flipped, data=rows, engine=nisa.tensor_engine)
    nisa.tensor_copy(dst=dst, src=flipped, engine=nisa.vector_engine)


def _load_moving(b, k0, ks, n0, ns, operand, k_tiles, block_n):
    """B[k0:k0+ks, n0:n0+ns] as SBUF tiles [K tile partitions, k tile, n]."""
    tiles = nl.ndarray((TILE_K, k_tiles, block_n), dtype=operand, buffer=nl.sbuf)
    for t in range(_tiles(ks, TILE_K)):
        kk = k0 + t * TILE_K
        kr = min(TILE_K, ks - t * TILE_K)
        _load(tiles[0:kr, t, 0:ns], b[kk:kk + kr, n0:n0 + ns])
    return tiles


def _multiply(result, a_tiles, b_tiles, ms, ks, ns, first):
    """Every output tile of the block: its K tiles accumulate in one PSUM bank, then land in ``result`` (fp32):
    copied by the Scalar Engine for the first K block, added by the Vector Engine for later ones."""
    for i in range(_tiles(ms, TILE_M)):
        mr = min(TILE_M, ms - i * TILE_M)
        for j in range(_tiles(ns, TILE_N)):
            nr = min(TILE_N, ns - j * TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            for t in range(_tiles(ks, TILE_K)):
                kr = min(TILE_K, ks - t * TILE_K)
                nisa.nc_matmul(acc[0:mr, 0:nr], a_tiles[0:kr, t, i * TILE_M:i * TILE_M + mr],
                               b_tiles[0:kr, t, j * TILE_N:j * TILE_N + nr], accumulate=(t > 0))
            part = result[0:mr, i, j * TILE_N:j * TILE_N + nr]
            if first:
                nisa.activation(dst=part, op=nl.copy, data=acc[0:mr, 0:nr])
            else:
                nisa.tensor_tensor(dst=part, data1=part, data2=acc[0:mr, 0:nr], op=nl.add,
                                   engine=nisa.vector_engine)
