"""NKI kernels for the Tensor Engine: C[M, N] = A[M, K] @ B[K, N] (``bmm``: over a leading batch), in every precision
mode with a kernel, for NKI 0.6+ on Trainium2/3 (and the CPU model of the NeuronCore in ``model/``).

``nisa.nc_matmul(dst, stationary, moving)`` computes stationary.T @ moving with K on the partition axis of both: A
enters as A^T tiles [K <= 128, M <= 128] (stationary), B as [K <= 128, N <= 512] tiles (moving), and an output tile
[M, N] accumulates in one fp32 PSUM bank (accumulate=False on the first product, True after: never onto memory a
matmul did not write). ``a`` is A^T [K, M] when ``a_is_transposed`` (a view the host hands over when A's strides
allow) or A [M, K], transposed on chip 128 x 128 at a time on the Tensor Engine.

Units and programs. The output is cut into units: blocks of at most BLOCK_M x BLOCK_N elements, all of one shape
(``_unit_shape``). Units that would stick out past the edge of M or N are moved back to end at the edge and overlap
their neighbour: the overlapping elements are computed twice by the same instructions from the same data, so both
writes store the same bits. Every unit is thus the same piece of program, and one dynamic loop (``nl.fori_loop``)
runs a program's units: the loop body is compiled once, so the program does not grow with M, N or the batch. The
launch ``kernel[lnc]`` runs programs 0..lnc-1, one per physical core; the units are dealt to them in equal
contiguous shares (a short last share repeats its last unit), so every program runs the same loop with the same trip
count: the LNC page makes control flow that differs between the cores undefined behaviour. Which unit an iteration
computes is data: the host passes ``table`` (int32 [programs, rows, ROW], built by ``table_rows`` from the same
plan), whose row holds the unit's element offsets in A, B and the output; each iteration reads its row with one
dynamic-offset DMA (the loop's induction value steps by ROW, so it is the row's element offset) and
``register_load``s the offsets into registers that every access of the body passes as ``scalar_offset`` (the split
kernels also run one loop per operand before, each iteration splitting a piece, and run the units in up to three
loops one after another; no loop is nested in another). Each access is one ``.ap`` on the unreshaped kernel
argument with the dynamic dimension its last
(``indirect_dim = ndim - 1``, where the offset counts elements) and ``dge_mode=hwdge`` (descriptor generation for
dynamic addresses). Only one level of dynamic loop exists: K blocks and the tiles within a unit are static code of
the body (K blocks per unit are bounded by the SBUF budget). Outputs written by dynamic DMAs end with a fence, a DMA
of a region of the output onto itself, as nki-library ends its dynamic kernels.

Allocation. Every tile the loops use is allocated once, before its loop (the dynamic-loops guide: tiles of a loop
body are allocated once and live for the whole loop), and reused: the operand tiles of a K block in two sets used
alternately (double buffering: K block kb + 1 loads while kb multiplies), PSUM accumulators in a ring of PSUM_RING
banks, transposes in a ring of 2; the next unit's first K block is fetched during this unit's last (before its
stores, which wait for the products: DMAs are triggered in program order). ``k_tiles`` sizes the K blocks so that
all of them fit the SBUF budget together.

Modes (kernels/reference/ is the specification of each; the words and levels are the reference's):
- ``matmul`` fast: bf16 operands (fp32 inputs rounded on chip, on GpSimd); native: fp32 operands (a quarter of the
  bf16 rate).
- ``matmul_split``: dd (2 words) and bf16x6 (3 words). fp32 A and B are split into bf16 words once per call, each
  element once, with integer operations only, (bits + 0x8000) & 0xFFFF0000 (nearest, ties away; no rounding mode
  involved; the add exact on GpSimd, the mask on the Vector Engine, the only engine with bitvec operators), into
  shared HBM scratch (A's words transposed on the way), in pieces (``_split_plan``): the pieces the first units read
  before the products loop (a loop per operand; the programs fence their writes and meet at ``nisa.core_barrier``,
  one per scratch tensor), the others during the products loop's first iterations, spread between the output
  tiles of each K block but the last and software-pipelined over rotating staging sets, so the split runs on the
  Vector Engine, GpSimd and DMA while the Tensor Engine multiplies; each such iteration fences and meets at the
  barriers before it fetches the next unit's words. The products: every product of an output tile and K block in
  one PSUM accumulation, levels (word pairs i + j) smallest first; bf16x6 evacuates PSUM every CHUNK_TILES K tiles,
  adds GROUP chunk sums in fp32 and combines those with TwoSum. ``matmul_words`` is the products alone, for words
  split on the host (float64 data: no fp64 on chip).
- ``matmul_levels``: ozaki's exact level sums of digit products: PSUM accumulations of at most 256 products
  (integers below 2**24, exact in fp32), summed exactly in int32 on GpSimd per K block, out as int32 per level and K
  block; the host adds those exactly and combines the levels.
- ``matmul_sr``: fast, then the fp32 result stochastically rounded to bf16 on chip: 32 random bits per element from
  ``nisa.rng`` on GpSimd (its generator set by ``nisa.rand_set_state`` from the host's states, which cross torch as
  int32 and are viewed as uint32 on chip; the Vector Engine's, set by ``nisa.set_rng_seed``, on NeuronCore-v2), the
  low 16 added to the fp32 bits with an exact integer add, masked, reinterpreted. Integer constants are int32 (the
  kernel language's integers are 32-bit signed) within 2**24 (memset's exactness above it is not documented):
  0xFFFF0000 is memset as -65536.

The kernel functions are plain Python with only ints and tuples as values (no classes: NKI traces only NKIObject
classes); the host wraps them with the toolchain's ``nki.jit``. Only documented NKI 0.6 names appear here
(tests/kernels/test_nki_api.py checks it), no ``is``, no ``*`` in signatures.
"""

from .toolchain import nisa, nl

TILE_K = 128  # partitions (nl.tile_size.pmax): the contraction dimension of one nc_matmul
TILE_M = 128  # stationary free size (nl.tile_size.gemm_stationary_fmax)
TILE_N = 512  # moving free size (nl.tile_size.gemm_moving_fmax): 512 fp32 fill one 2 KiB PSUM bank
BLOCK_M = 4 * TILE_M  # the largest unit: each loaded B tile serves up to 4 stationary tiles
BLOCK_N = 2 * TILE_N  # and each loaded A^T tile up to 2 moving tiles
STAGING_BYTES = 24 * 1024  # per partition: staging tiles, TwoSum temporaries, bit constants, the table row
PSUM_RING = 4  # PSUM banks the products rotate through (2 more hold transposes of A, or join the ring when A comes
# as A^T: 6 of the 8 banks)
CHUNK_TILES = 2  # bf16x6: K tiles (256 of K: reference.BF16X6_CHUNK) per PSUM accumulation
GROUP = 4  # bf16x6: chunk sums added in fp32 before one TwoSum (reference.BF16X6_GROUP)
# ozaki: K tiles of digit products per PSUM accumulation, so every partial sum is an integer of at most 2**24
# (exact in fp32). The first digit of a scaled entry is at most 2**8, the others 2**7: level 2 (first x first,
# products up to 2**16) takes 256 products, every other level (at most one first digit: 2**15) 512.
EXACT_TILES = 2
EXACT_TILES_LATER = 4
LEVEL_TERMS = 2**15  # ozaki: digit products one int32 sum takes (each <= 2**16) with no risk of overflow
ROUND_BIAS = 0x8000  # added to fp32 bits: the mask below then rounds to the nearest bf16, ties away from zero
HI_MASK = -65536  # 0xFFFF0000 as int32 (kernel integers are 32-bit signed): the bits of fp32 that a bf16 keeps
LOW_MASK = 0xFFFF  # the 16 random bits stochastic rounding adds
XORWOW_WORDS = 6  # uint32 of GpSimd's XORWOW generator state per lane (nki.isa.rand_set_state)
INT32_MAX = 2**31 - 1  # dynamic offsets are 32-bit registers (SDK isa register_alloc: "64x 32-bit registers")
ROW = 16  # int32 per table row: a unit's five offsets and its iteration's pieces' offset pairs, or a piece's pair
PIECE_LONG = 2048  # the split: elements of K per piece of A (what a program splits as one item: sub-tiles of 128
# rows)
PIECE_LONG_B = 4096  # and of B (longer: fewer of B's pieces before the products loop; A's stay shorter to keep the
# program small where A is not transposed)
PIECE_SHORT = 512  # and of M (A) or N (B) per piece; columns of a split sub-tile
SPLIT_SETS = 12  # staging sets of the split before the products loop (three rotating thirds)
LOOP_GROUPS = 2  # sub-tiles per group of the split inside the products loop, where the words are 2 (else 1), with
# words + 2 groups in flight (``_split_ticker``)
MAX_SLOTS = 2  # pieces of one operand a products-loop iteration splits, at most (ROW holds 5 + 2 * 2 * 2)


# --- entry points (the host jits these) ---------------------------------------------------------------------
def matmul(a, b, a_is_transposed, fast, table):
    """C = A @ B in fp32; fast: bf16 operands (fp32 inputs rounded on chip), else fp32 operands (native)."""
    operand = nl.bfloat16 if fast else nl.float32
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _products(out, a, b, a_is_transposed, operand, 1, False, table, 0, "plain", 1)
    return out


def bmm(a, b, a_is_transposed, fast, table):
    """C[i] = A[i] @ B[i] for each i of the leading batch dimension (see ``matmul``)."""
    operand = nl.bfloat16 if fast else nl.float32
    out = nl.ndarray((a.shape[0], _rows(a, a_is_transposed), b.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _products(out, a, b, a_is_transposed, operand, 1, False, table, 0, "plain", a.shape[0])
    return out


def matmul_split(a, b, a_is_transposed, words, table):
    """dd (words=2) or bf16x6 (words=3) on fp32 A, B: split on chip once, then every product in PSUM (fp32)."""
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _split_products(out, a, b, a_is_transposed, words, table, 1)
    return out


def bmm_split(a, b, a_is_transposed, words, table):
    """``matmul_split`` for each i of the leading batch dimension."""
    out = nl.ndarray((a.shape[0], _rows(a, a_is_transposed), b.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _split_products(out, a, b, a_is_transposed, words, table, a.shape[0])
    return out


def matmul_words(a_words, b_words, a_is_transposed, table):
    """Phase 2 of ``matmul_split`` on words split on the host: a_words [n, M, K] (or [n, K, M]), b_words [n, K, N],
    bf16."""
    words = a_words.shape[0]
    out = nl.ndarray((_rows(a_words, a_is_transposed), b_words.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _products(out, a_words, b_words, a_is_transposed, nl.bfloat16, words, True, table, 0, _kind(words), 1)
    return out


def bmm_words(a_words, b_words, a_is_transposed, table):
    """``matmul_words`` for each i of the batch dimension (a_words [n, B, M, K], b_words [n, B, K, N])."""
    words = a_words.shape[0]
    out = nl.ndarray(
        (a_words.shape[1], _rows(a_words, a_is_transposed), b_words.shape[-1]), dtype=nl.float32, buffer=nl.shared_hbm
    )
    _products(
        out, a_words, b_words, a_is_transposed, nl.bfloat16, words, True, table, 0, _kind(words), a_words.shape[1]
    )
    return out


def _kind(words):
    """How the products of ``words``-word operands are summed: bf16x6's 3 words in chunks, others plainly."""
    return "chunked" if words == 3 else "plain"


def matmul_levels(a_digits, b_digits, a_is_transposed, table):
    """Ozaki's exact level sums of bf16 digit slices a_digits [s, M, K] (or [s, K, M]), b_digits [s, K, N]: int32
    [s, K blocks, M, N], level s + 1 first (smallest), down to level 2; the host adds the K blocks."""
    slices, m, k, n = a_digits.shape[0], _rows(a_digits, a_is_transposed), b_digits.shape[-2], b_digits.shape[-1]
    blocks = len(_k_blocks(k, level_k_tiles(m, k, n, slices, nl.tile_size.sbuf_fmax_bytes, nl.num_programs()), 1))
    out = nl.ndarray((slices, blocks, m, n), dtype=nl.int32, buffer=nl.shared_hbm)
    _products(out, a_digits, b_digits, a_is_transposed, nl.bfloat16, slices, True, table, 0, "levels", 1)
    return out


def bmm_levels(a_digits, b_digits, a_is_transposed, table):
    """``matmul_levels`` for each i of the batch dimension: int32 [s, K blocks, B, M, N]."""
    slices, batch = a_digits.shape[0], a_digits.shape[1]
    m, k, n = _rows(a_digits, a_is_transposed), b_digits.shape[-2], b_digits.shape[-1]
    blocks = len(_k_blocks(k, level_k_tiles(m, k, n, slices, nl.tile_size.sbuf_fmax_bytes, nl.num_programs()), 1))
    out = nl.ndarray((slices, blocks, batch, m, n), dtype=nl.int32, buffer=nl.shared_hbm)
    _products(out, a_digits, b_digits, a_is_transposed, nl.bfloat16, slices, True, table, 0, "levels", batch)
    return out


def matmul_sr(a, b, a_is_transposed, seed, table):
    """fast, then the fp32 result rounded stochastically to bf16 on chip; ``seed``: int32 [programs, 128,
    XORWOW_WORDS] in HBM: program p sets the generator ``nisa.rng`` draws from (``_rng_engine``) from seed[p]
    viewed as uint32: GpSimd's to one XORWOW state per lane with ``nisa.rand_set_state``; on NeuronCore-v2, which
    has no GpSimd generator, the Vector Engine's with ``nisa.set_rng_seed`` from the first word."""
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[-1]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    program = nl.program_id(0)
    if _rng_engine() == nisa.gpsimd_engine:
        states = nl.ndarray((TILE_K, XORWOW_WORDS), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=states, src=seed[program])
        nisa.rand_set_state(states.view(nl.uint32), engine=nisa.gpsimd_engine)
    else:
        word = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=word, src=seed[program, 0:1, 0:1])
        nisa.set_rng_seed(word)
    _products(out, a, b, a_is_transposed, nl.bfloat16, 1, False, table, 0, "stochastic", 1)
    return out


def _rng_engine():
    """Where ``nisa.rng`` draws: GpSimd from NeuronCore-v3 (rng's documented engines), sparing the Vector Engine;
    the Vector Engine on v2."""
    return nisa.vector_engine if nisa.get_nc_version() == nisa.nc_version.gen2 else nisa.gpsimd_engine


# --- the plan: plain ints and tuples, computed while a kernel traces and by the host (``table_rows``) ---------
def _tiles(size, tile):
    return (size + tile - 1) // tile


def _rows(a, a_is_transposed):
    """M of an A given as [..., M, K] or, transposed, [..., K, M]."""
    return a.shape[-1] if a_is_transposed else a.shape[-2]


def _unit_shape(batch, m, n, programs):
    """(rows, columns) of every unit: the fewest units of at most BLOCK_M x BLOCK_N covering [m, n], their sizes as
    even as whole units allow; cut finer (while the pieces keep a whole tile) until every program has one."""
    blocks_m, blocks_n = _tiles(m, BLOCK_M), _tiles(n, BLOCK_N)
    while batch * blocks_m * blocks_n < programs:
        if n // (blocks_n + 1) >= TILE_K:
            blocks_n = blocks_n + 1
        elif m // (blocks_m + 1) >= TILE_K:
            blocks_m = blocks_m + 1
        else:
            break
    return _tiles(m, blocks_m), _tiles(n, blocks_n)


def _starts(size, extent):
    """The starts of units of ``extent`` covering 0..size-1: every ``extent``, the last moved back to end at
    ``size`` (overlapping its neighbour)."""
    starts = ()
    for i in range(_tiles(size, extent)):
        starts = starts + (min(i * extent, size - extent),)
    return starts


def _deal(count, programs):
    """(iterations, the items of each program): ``count`` items in equal contiguous shares, a short last share
    padded by repeating the last item, so every program runs the same number of iterations."""
    iterations = _tiles(count, programs)
    shares = ()
    for p in range(programs):
        share = ()
        for t in range(iterations):
            share = share + (min(p * iterations + t, count - 1),)
        shares = shares + (share,)
    return iterations, shares


def _unit_places(batch, m, n, programs):
    """((iterations, rows, columns), per program per iteration its unit's (entry, first row, first column)): the
    units of the output in row-major order, dealt in equal contiguous shares (``_deal``)."""
    rows, columns = _unit_shape(batch, m, n, programs)
    units = ()
    for entry in range(batch):
        for r in _starts(m, rows):
            for c in _starts(n, columns):
                units = units + ((entry, r, c),)
    iterations, shares = _deal(len(units), programs)
    places = ()
    for share in shares:
        mine = ()
        for t in range(iterations):
            mine = mine + (units[share[t]],)
        places = places + (mine,)
    return (iterations, rows, columns), places


def _unit_offsets(batch, m, k, n, a_is_transposed, programs):
    """((iterations, rows, columns), per program per iteration the (A, B, out) element offsets of its unit and the
    (A, B) offsets of its next unit): A as [..., K, M] (transposed) or [..., M, K], B [..., K, N], out [..., M, N],
    each without leading word dimensions."""
    shape, places = _unit_places(batch, m, n, programs)
    iterations = shape[0]
    offsets = ()
    for mine in places:
        found = ()
        for entry, r, c in mine:
            found = found + (
                (entry * m * k + (r if a_is_transposed else r * k), entry * k * n + c, entry * m * n + r * n + c),
            )
        rows_of = ()
        for t in range(iterations):  # the unit, and where the next one lies in A and B (the last: itself)
            after = found[min(t + 1, iterations - 1)]
            rows_of = rows_of + (found[t] + (after[0], after[1]),)
        offsets = offsets + (rows_of,)
    return shape, offsets


def table_rows(kernel, batch, m, k, n, a_is_transposed, programs, words=1):
    """The rows of the ``table`` argument of ``kernel`` (matmul, bmm, ..._split with ``words``, ..._words,
    ..._levels, matmul_sr) for A [batch, M, K] (or A^T) and B [batch, K, N]: per program, one row of ROW int32
    per iteration of its loops (offsets in elements, padded with zeros): the units (A, B and out, then the next
    unit's A and B); for the split kernels first the pieces of A and of B split before the products (source,
    scratch), and after each unit's offsets the pieces its iteration splits (``_split_plan``). The kernel computes
    the same plan while it traces and reads only its own program's rows."""
    split = kernel.endswith("_split")
    _, found = _unit_offsets(batch, m, k, n, True if split else a_is_transposed, programs)
    if split:
        plan = _split_plan(batch, m, k, n, a_is_transposed, programs)
        first = ()
        for p in range(programs):
            rows = ()
            for operand in (plan[0], plan[1]):
                for pair in operand[3][p]:
                    rows = rows + (pair,)
            for t in range(len(found[p])):
                row = found[p][t]
                for operand in (plan[0], plan[1]):
                    start, end = operand[1]
                    for s in range(operand[0]):
                        row = row + (operand[4][p][t - start][s] if start <= t < end else (0, 0))
                rows = rows + (row,)
            first = first + (rows,)
        found = first
    table = ()
    for p in range(programs):
        rows = ()
        for row in found[p]:
            rows = rows + (row + (0,) * (ROW - len(row)),)
        table = table + (rows,)
    return table


def _k_blocks(k, k_tiles, chunk):
    """(first row, rows) of each K block of at most ``k_tiles`` tiles (a multiple of ``chunk`` but the last): as
    even as whole tiles allow, and an even number of them where there are two tiles or more and whole chunks allow
    (the two operand sets alternate, so the last block of one unit and the first of the next use different sets;
    an odd count fetches the next unit's first block after the last block's products, ``_unit``)."""
    tiles = _tiles(k, TILE_K)
    count = _tiles(tiles, max(k_tiles, 1))
    if tiles >= 2 and count % 2:
        count = count + 1
    per_block = min(max(k_tiles, 1), _tiles(_tiles(tiles, count), chunk) * chunk)
    blocks = ()
    for first in range(0, tiles, per_block):
        blocks = blocks + ((first * TILE_K, min(per_block * TILE_K, k - first * TILE_K)),)
    for index in range(len(blocks) - 1, -1, -1):  # whole chunks do not always deal evenly (9 chunks under a cap
        # of 4): then the last block of two chunks or more is cut in two
        first, rows = blocks[index]
        if len(blocks) % 2 and rows > chunk * TILE_K:
            head = _tiles(_tiles(_tiles(rows, TILE_K), chunk), 2) * chunk * TILE_K
            blocks = blocks[:index] + ((first, head), (first + head, rows - head)) + blocks[index + 1 :]
    return blocks


def k_tiles(
    m, k, n, words, width, accumulators, a_is_transposed, sbuf_bytes, programs, chunk=1, a_width=None, b_width=None
):
    """K tiles per K block that fit ``sbuf_bytes`` per partition (0 when not even one does) with everything the
    units use live at once (``_allocate``): two sets of A^T and B operand tiles (``words`` words of ``width``
    bytes) and of their staging (A's rows for the transposes when A is not transposed; inputs of ``a_width`` and
    ``b_width`` bytes, default ``width``, to be rounded to the operand), the ``accumulators`` fp32 sums of a unit
    and its result, and STAGING_BYTES; a multiple of ``chunk``."""
    rows, columns = _unit_shape(1, m, n, programs)
    a_width, b_width = a_width or width, b_width or width
    sums = (accumulators + 1 if accumulators else 0) * _tiles(rows, TILE_M) * columns * 4  # and the result tile
    per_set = words * width * (rows + columns)
    if not a_is_transposed:
        per_set = per_set + words * _tiles(rows, TILE_M) * TILE_K * a_width
    elif a_width != width:
        per_set = per_set + words * rows * a_width
    if b_width != width:
        per_set = per_set + words * columns * b_width
    per_tile = 2 * per_set
    room = sbuf_bytes - STAGING_BYTES - sums
    fits = min(_tiles(k, TILE_K), max(room, 0) // per_tile)
    if fits < _tiles(k, TILE_K):
        fits = fits - fits % chunk
    return fits


def level_k_tiles(m, k, n, slices, sbuf_bytes, programs):
    """K tiles per block for ozaki's levels: the SBUF budget, and at most LEVEL_TERMS products per level (a level
    has up to ``slices`` digit pairs) so no int32 sum can overflow."""
    fits = k_tiles(m, k, n, slices, 2, 0, False, sbuf_bytes, programs)
    assert fits >= 1, f"nki matmul_levels: {slices} digit slices do not fit one K tile in {sbuf_bytes} bytes of SBUF"
    return max(1, min(fits, LEVEL_TERMS // (slices * TILE_K)))


def _level_pairs(words):
    """The word pairs (i, j) of each level i + j (0-based words, so i + j + 2), smallest level first: the
    products the reference keeps for an n-word split."""
    levels = ()
    for level in range(words + 1, 1, -1):
        pairs = ()
        for i in range(max(1, level - words), min(words, level - 1) + 1):
            pairs = pairs + ((i - 1, level - i - 1),)
        levels = levels + (pairs,)
    return levels


# --- addressing -------------------------------------------------------------------------------------------------
def _access(t, pattern, offset, register):
    """The access ``pattern`` ([[stride, count], ...] in elements) of the kernel argument or output ``t`` (HBM, as
    given: never reshaped), ``offset`` elements in, plus the elements of the run-time register in ``register``
    (a tuple of it; empty: a static access). The dynamic dimension is t's last, whose stride is one element."""
    if not register:
        return t.ap(pattern, offset=offset)
    return t.ap(pattern, offset=offset, scalar_offset=register[0], indirect_dim=len(t.shape) - 1)


def _copy(dst, src, dynamic):
    """One DMA; ``dynamic``: an operand has a run-time offset, whose descriptors the hardware DGE generates."""
    if dynamic:
        nisa.dma_copy(dst=dst, src=src, dge_mode=nisa.dge_mode.hwdge)
    else:
        nisa.dma_copy(dst=dst, src=src)


def _row_reader(table, first_row, registers):
    """A function of the loop's induction value (the element offset of the iteration's row, past ``first_row``
    rows of this program's table) that loads the row into ``registers`` (each a tuple of one register): one
    dynamic DMA of the row to SBUF, then a register_load per offset."""
    program = nl.program_id(0)
    row = nl.ndarray((1, ROW), dtype=nl.int32, buffer=nl.sbuf)
    start = (program * table.shape[1] + first_row) * ROW

    def read(i):
        _copy(row, _access(table, [[ROW, 1], [1, ROW]], start, (i,)), True)
        for r in range(len(registers)):
            nisa.register_load(registers[r][0], row[0:1, r : r + 1])

    return read


def _fence(t, pattern, offset):
    """After the last dynamic write of a program into output ``t``: a DMA of a region it wrote onto itself, which
    completes only after the writes before it (nki-library ends its dynamic kernels with one)."""
    region = _access(t, pattern, offset, ())
    nisa.dma_copy(dst=region, src=region)


# --- products ------------------------------------------------------------------------------------------------
def _no_tick(j):
    """A K block's hook between output tiles when it splits nothing (``_split_ticker``)."""
    return None


def _products(out, a, b, a_is_transposed, operand, words, has_words, table, first_row, kind, batch, split=()):
    """Over this program's units, one ``nl.fori_loop`` iteration per unit: out = the sum over the kept word pairs
    of A_i @ B_j (``kind`` plain; chunked: bf16x6's chunk sums and TwoSum), rounded stochastically to bf16
    (stochastic), or ozaki's exact int32 level sums per K block (levels). ``has_words``: a and b lead with a word
    dimension; ``first_row``: table rows before the units. ``split`` (the split kernels: their operands, plan and
    layout of A): the first iterations also split pieces (``_split_plan``), so the iterations run in up to three
    loops one after another, each with the splits its iterations do (both operands', one's, none)."""
    m, n = out.shape[-2], out.shape[-1]
    k = b.shape[-2]
    programs = _checked(table, (a, b, out))
    (iterations, rows, columns), units = _unit_offsets(batch, m, k, n, a_is_transposed, programs)
    reserved = split_staging_bytes(words, split[2]) if split else 0
    blocks = _blocking(m, k, n, words, operand, a.dtype, b.dtype, kind, a_is_transposed, programs, reserved)
    tiles = _allocate(
        operand, words, _tiles(blocks[0][1], TILE_K), rows, columns, kind, a_is_transposed, a.dtype, b.dtype
    )
    registers = ()  # this unit's offsets in A, B and out, the next unit's in A and B; the pieces' (split kernels)
    slots = (split[1][0][0], split[1][1][0]) if split else (0, 0)
    for _ in range(5 + 2 * (slots[0] + slots[1])):
        registers = registers + ((nisa.register_alloc(),),)
    read = _row_reader(table, first_row, registers)
    word_a, word_b = (_size(a) // a.shape[0], _size(b) // b.shape[0]) if has_words else (0, 0)
    geometry = (rows, columns, words, m if a_is_transposed else k, word_a, n, word_b, n, a_is_transposed)
    first = units[nl.program_id(0)][0]
    _fetch_first(tiles, a, b, blocks, geometry, (first[0], first[1]))
    staging = _split_staging(_loop_sets(words), words, split[2]) if split else ()
    spans = (split[1][0][1], split[1][1][1]) if split else ((0, 0), (0, 0))
    bounds = ()  # the iterations where the splits start or end, in order
    for t in range(iterations + 1):
        if t == 0 or t == iterations or t in spans[0] or t in spans[1]:
            bounds = bounds + (t,)
    for segment in range(len(bounds) - 1):
        lo, hi = bounds[segment], bounds[segment + 1]
        active = ()  # the operands whose pieces these iterations split
        for o in range(2):
            if spans[o][0] <= lo < spans[o][1]:
                active = active + (o,)

        def body(i, active=active):
            read(i)
            work = ()
            if active:
                jobs = ()
                for o in active:
                    base = 5 + 2 * (0 if o == 0 else slots[0])
                    for s in range(slots[o]):
                        jobs = jobs + _jobs(split[0][o], registers[base + 2 * s], registers[base + 2 * s + 1])
                work = (jobs, staging, words, active, split[0])
            _unit(out, a, b, tiles, blocks, geometry, (registers[0:3], (0, 0, 0)), (registers[3:5], (0, 0)), kind, work)

        nl.fori_loop(lo * ROW, hi * ROW, body, step=ROW)
    _fence(out, [[n, min(rows, TILE_M)], [1, columns]], units[nl.program_id(0)][-1][2])


def _split_ticker(work, section, sections, ticks):
    """The share of an iteration's split sub-tiles (``work``) that K block ``section`` of ``sections`` does, spread
    over the block's ``ticks`` output tiles: a function of the tick, called with -1 before the block's products
    and with each output tile's index after it. Software-pipelined in groups of sub-tiles, one group starting per
    tick (or several where there are more groups than ticks): a group is loaded two ticks before it starts, its
    first rounding adds issued one tick before, and word t is masked, converted, subtracted and stored t ticks
    after it starts (then the next word's adds), each group on its own staging sets (``words`` + 2 groups in
    flight), so the split's instructions sit between the products' on the in-order engines and wait for little.
    The last block's share is half the others' and leaves the last two output tiles' time for its stores (the
    iteration publishes the words after it)."""
    if not work:
        return _no_tick
    jobs, staging, words = work[0], work[1], work[2]
    lo = section * 2 * len(jobs) // (2 * sections - 1)
    hi = min(len(jobs), (section + 1) * 2 * len(jobs) // (2 * sections - 1))
    period = words + 2
    size = max(1, len(staging[0]) // period)
    count = _tiles(hi - lo, size)
    usable = ticks - 2 if section == sections - 1 and ticks > 2 else ticks
    groups = ()
    for v in range(count):
        group = ()
        for index in range(lo + v * size, min(hi, lo + (v + 1) * size)):
            group = group + ((jobs[index], staging[0][(v % period) * size + (index - lo) % size]),)
        groups = groups + (group,)

    def real(v):  # the tick at which virtual tick v's stages are issued
        if v < 0:
            return -1
        return min(ticks - 1, v if count <= usable else v * usable // count)

    def stages(v):
        if 0 <= v + 2 < count:
            _split_loads(groups[v + 2])
        if v == -2 and count > 0:
            _split_loads(groups[0])
        if v == -2 and count > 1:
            _split_loads(groups[1])
        pending = ()  # (group, word) whose word is done at this virtual tick, older groups first
        for t in range(words - 1, -1, -1):
            if 0 <= v - t < count:
                pending = pending + ((groups[v - t], t),)
        _split_words(words, pending, staging)
        for group, t in pending:
            if t < words - 1:
                _split_adds(group, staging)
        if 0 <= v + 1 < count:
            _split_adds(groups[v + 1], staging)

    def tick(j):
        for v in range(-2, count + words - 1):
            if real(v) == j:
                stages(v)

    return tick


def _split_words(words, pending, staging):
    """Word t of each (group, t) of ``pending``, whose adds are issued: masked (the word), converted to bf16, the
    word subtracted from the rest (but the last word), stored."""
    mask, flips = staging[1][1], staging[2]
    for group, _ in pending:
        for job, staged in group:
            rows, columns = job[3], job[4]
            nisa.tensor_tensor(
                dst=staged[1][0:rows, 0:columns],
                data1=staged[1][0:rows, 0:columns],
                data2=mask[0:rows, 0:columns],
                op=nl.bitwise_and,
                engine=nisa.vector_engine,
            )
    for group, t in pending:
        for job, staged in group:
            rows, columns = job[3], job[4]
            nisa.tensor_copy(
                dst=staged[2][t][0:rows, 0:columns],
                src=staged[1][0:rows, 0:columns].view(nl.float32),
                engine=nisa.scalar_engine,
            )
    for group, t in pending:
        if t < words - 1:
            for job, staged in group:
                rows, columns = job[3], job[4]
                nisa.tensor_tensor(
                    dst=staged[0][0:rows, 0:columns],
                    data1=staged[0][0:rows, 0:columns],
                    data2=staged[1][0:rows, 0:columns].view(nl.float32),
                    op=nl.subtract,
                    engine=nisa.vector_engine,
                )
    for group, t in pending:
        for job, staged in group:
            operand, (register, dst), rows, columns = job[0], job[2], job[3], job[4]
            if operand[2]:
                _store_transposed(
                    operand[0],
                    t * operand[4] + dst,
                    staged[2][t],
                    rows,
                    columns,
                    operand[5][1],
                    flips,
                    staged[3][t],
                    register,
                )
            else:
                _copy(
                    _access(operand[0], [[operand[5][1], rows], [1, columns]], t * operand[4] + dst, register),
                    staged[2][t][0:rows, 0:columns],
                    True,
                )


def _split_pipeline(words, jobs, staging):
    """A function of the tick (-1 first, then 0, 1, ...) that splits the sub-tiles of ``jobs[tick]``, software-
    pipelined over three thirds of the staging sets: loaded two ticks ahead, their first rounding adds issued one
    tick ahead (see ``_split_ticker``)."""
    part = len(staging[0]) // 3
    groups = ()
    for tick in range(len(jobs)):
        group = ()
        for index in range(len(jobs[tick])):
            group = group + ((jobs[tick][index], staging[0][(tick % 3) * part + index % part]),)
        groups = groups + (group,)

    def tick(j):
        if j == -1 and len(groups) > 0:
            _split_loads(groups[0][0:part])
        if j + 2 < len(groups):
            _split_loads(groups[j + 2][0:part])
        elif j == -1 and len(groups) > 1:
            _split_loads(groups[1][0:part])
        if j == -1 and len(groups) > 0:
            _split_adds(groups[0][0:part], staging)
        if j >= 0 and j + 1 < len(groups):  # the next tick's first adds, so its Vector Engine steps need not wait
            _split_adds(groups[j + 1][0:part], staging)
        if j >= 0 and j < len(groups):
            group = groups[j]
            for g0 in range(0, len(group), part):
                if g0:  # more than a third of the sets' worth: the rest loaded here, into the same sets
                    _split_loads(group[g0 : g0 + part])
                _split_group(words, group[g0 : g0 + part], staging, g0 == 0)

    return tick


def _split_publish(work):
    """After an iteration's splits: each scratch tensor written fenced, then a barrier about it (the next unit's
    first K block, fetched after it, may read words another program split)."""
    if work:
        for o in work[3]:
            _fence_spare(work[4][o])
        for o in work[3]:
            nisa.core_barrier(work[4][o][0], _programs(nl.num_programs()))


def _checked(table, tensors):
    """The launch's programs, after checking the table is for them and every tensor a dynamic access addresses
    has 32-bit offsets."""
    programs = nl.num_programs()
    assert table.shape[0] == programs, f"nki matmul: a table for {table.shape[0]} programs, launched with {programs}"
    for t in tensors:
        assert _size(t) <= INT32_MAX, (
            f"nki matmul: {t.shape} is too large for 32-bit dynamic offsets; split the batch or the operands"
        )
    return programs


def _blocking(m, k, n, words, operand, a_dtype, b_dtype, kind, a_is_transposed, programs, reserved=0):
    """The K blocks of a unit: ozaki's by its level budget, others as many K tiles as SBUF holds (less
    ``reserved`` bytes per partition)."""
    budget = nl.tile_size.sbuf_fmax_bytes - reserved
    if kind == "levels":
        return _k_blocks(k, level_k_tiles(m, k, n, words, budget, programs), 1)
    width = _width(operand)
    chunk = CHUNK_TILES if kind == "chunked" else 1
    fits = k_tiles(
        m,
        k,
        n,
        words,
        width,
        _accumulators(kind),
        a_is_transposed,
        budget,
        programs,
        chunk,
        _width(a_dtype),
        _width(b_dtype),
    )
    assert fits >= 1, (
        f"nki matmul: {budget} bytes of SBUF per partition cannot hold one K tile of a unit of "
        f"{words} x {width}-byte operands"
    )
    return _k_blocks(k, fits, chunk)


def _size(t):
    size = 1
    for d in t.shape:
        size = size * d
    return size


def _width(dtype):
    """Bytes per element of the dtypes the kernels take (fp32, bf16)."""
    return 4 if dtype == nl.float32 else 2


def _accumulators(kind):
    """fp32 sums per output element of a unit: bf16x6's (s, e, group), one otherwise, none for ozaki's levels."""
    return 3 if kind == "chunked" else (0 if kind == "levels" else 1)


def _allocate(operand, words, block_tiles, rows, columns, kind, a_is_transposed, a_dtype, b_dtype):
    """Every tile the units use, allocated once before the loop: (operand sets, PSUM ring, PSUM transposes, sums,
    the kind's own tiles)."""
    sets = ()  # per set: A^T and B operand tiles, and where their DMAs land first when they need work on chip
    for _ in range(2):
        a_stage, b_stage = (), ()
        if not a_is_transposed:  # A's rows, 128 at a time, to be transposed 128 x 128 through PSUM
            a_stage = nl.ndarray(
                (TILE_M, words, _tiles(rows, TILE_M), block_tiles * TILE_K), dtype=a_dtype, buffer=nl.sbuf
            )
        elif a_dtype != operand:  # fp32 A^T for a bf16 operand, to be rounded on chip
            a_stage = nl.ndarray((TILE_K, words, block_tiles, rows), dtype=a_dtype, buffer=nl.sbuf)
        if b_dtype != operand:
            b_stage = nl.ndarray((TILE_K, words, block_tiles, columns), dtype=b_dtype, buffer=nl.sbuf)
        sets = sets + (
            (
                nl.ndarray((TILE_K, words, block_tiles, rows), dtype=operand, buffer=nl.sbuf),
                nl.ndarray((TILE_K, words, block_tiles, columns), dtype=operand, buffer=nl.sbuf),
                a_stage,
                b_stage,
            ),
        )
    ring = ()  # PSUM_RING banks, and the 2 the transposes would take when A comes as A^T
    for _ in range(PSUM_RING if not a_is_transposed else PSUM_RING + 2):
        ring = ring + (nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum),)
    flips = ()
    if not a_is_transposed:
        for _ in range(2):
            flips = flips + (nl.ndarray((TILE_K, TILE_M), dtype=a_dtype, buffer=nl.psum),)
    accumulators = _accumulators(kind)
    sums = ()  # the unit's running sums, and its result (a tile of its own, so the next unit's sums need not wait
    # for this one's store)
    if kind == "chunked":  # (s, e, group sum) per output tile, each tile its own (a tile's TwoSum does not hold up
        # the next tile's, nor the last tile's the next unit's first)
        running = ()
        for _, _, _, nr in _output_tiles(rows, columns):
            roles = ()
            for _ in range(accumulators):
                roles = roles + (nl.ndarray((TILE_M, nr), dtype=nl.float32, buffer=nl.sbuf),)
            running = running + (roles,)
        sums = (running, _result_tiles(rows, columns))
    elif accumulators:
        sums = (
            nl.ndarray((TILE_M, accumulators, _tiles(rows, TILE_M), columns), dtype=nl.float32, buffer=nl.sbuf),
            _result_tiles(rows, columns),
        )
    extra = ()
    if kind == "chunked":  # TwoSum's temporaries, two sets used by alternate output tiles (STAGING_BYTES)
        for _ in range(2):
            temporaries = ()
            for _ in range(3):
                temporaries = temporaries + (nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.sbuf),)
            extra = extra + (temporaries,)
    if kind == "levels":  # exact int32 level sums and the conversions of PSUM accumulations, rings of 2 (a store
        # of one output tile's sum overlaps the next tile's products)
        for _ in range(2):
            extra = extra + (
                (
                    nl.ndarray((TILE_M, TILE_N), dtype=nl.int32, buffer=nl.sbuf),
                    nl.ndarray((TILE_M, TILE_N), dtype=nl.int32, buffer=nl.sbuf),
                ),
            )
    if kind == "stochastic":  # random bits, the mask constants, the bf16 result
        extra = (
            nl.ndarray((TILE_M, columns), dtype=nl.uint32, buffer=nl.sbuf),
            _constant(LOW_MASK, columns),
            _constant(HI_MASK, columns),
            nl.ndarray((TILE_M, columns), dtype=nl.bfloat16, buffer=nl.sbuf),
        )
    return sets, ring, flips, sums, extra


def _result_tiles(rows, columns):
    """The unit's result, a tile per 128 rows (a row's store does not hold up the next row's result)."""
    found = ()
    for _ in range(_tiles(rows, TILE_M)):
        found = found + (nl.ndarray((TILE_M, columns), dtype=nl.float32, buffer=nl.sbuf),)
    return found


def _constant(value, columns):
    """A [128, columns] int32 tile of ``value`` (|value| <= 2**24, memset exactly on GpSimd), viewed as uint32."""
    t = nl.ndarray((TILE_K, columns), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(t, value, engine=nisa.gpsimd_engine)
    return t.view(nl.uint32)


def _unit(out, a, b, tiles, blocks, geometry, here, after, kind, work=()):
    """One unit: its K blocks (static), then its result stored (levels: per K block). ``geometry`` = (rows,
    columns, words, A's row stride, A's word size, B's row stride, B's word size, out's row stride, A given as
    A^T); the unit lies at ``here`` = ((A's, B's, out's register), (their static offsets)) and the next unit's
    first K block, fetched during this unit's last one, at ``after`` = ((A's, B's register), (static offsets)).

    The DMAs of K block kb + 1 go out before kb multiplies, into the other operand set (the sets alternate), so
    loads overlap products, and its work on chip (``_prepare``: transposes, roundings) follows kb's products, so
    the engines doing it overlap the next block's; the next unit's first K block is fetched and prepared last
    (its DMAs before this unit's stores, which wait for the products: DMAs are triggered in program order), and
    this unit's first was by the unit before it (or before the loop: ``_fetch_first``).

    ``work``: the split sub-tiles this iteration splits (the split kernels' first iterations), shared out among
    the K blocks but the last (after each block's fetch of the next, before its products), then published
    (``_split_publish``) before the next unit's first K block is fetched."""
    sets, ring, flips, sums, extra = tiles
    registers, statics = here
    levels = _level_pairs(geometry[2])
    chunks = 0
    count = len(blocks)
    ahead = count > 1 and count % 2 == 0  # the next unit's first block fetched during the last (into set 0)
    for kb in range(count):
        tick = _no_tick
        if kb + 1 < count:
            _fetch(sets[(kb + 1) % 2], a, b, blocks[kb + 1], geometry, (registers[0], registers[1]), statics)
            tick = _split_ticker(work, kb, count - 1, len(_output_tiles(geometry[0], geometry[1])))
        elif ahead:
            _split_publish(work)
            _fetch(sets[0], a, b, blocks[0], geometry, after[0], after[1])
        elif count == 1:
            tick = _split_ticker(work, 0, 1, len(_output_tiles(geometry[0], geometry[1])))
        tick(-1)
        a_tiles, b_tiles = sets[kb % 2][0], sets[kb % 2][1]
        ks = blocks[kb][1]
        if kind == "levels":
            for index in range(len(levels)):
                word = (index * count + kb) * _level_word(out) + statics[2]
                _exact_level(out, word, a_tiles, b_tiles, levels[index], ks, geometry, ring, extra, registers[2])
        elif kind == "chunked":
            chunks = _multiply_chunked(
                sums, a_tiles, b_tiles, levels, ks, geometry, ring, extra, chunks, _total_chunks(blocks), tick
            )
        else:
            _multiply(sums, a_tiles, b_tiles, levels, ks, geometry, ring, kb == 0, kb == count - 1, tick)
        if kb + 1 < count or ahead:  # the block fetched above: K block kb + 1, or the next unit's first
            _prepare(sets[(kb + 1) % 2], blocks[(kb + 1) % count], geometry, flips)
    if not ahead:  # one K block (or an odd count): the next unit's first goes into set 0, after the last products
        _split_publish(work)
        _fetch(sets[0], a, b, blocks[0], geometry, after[0], after[1])
        _prepare(sets[0], blocks[0], geometry, flips)
    if kind != "levels":
        _store(out, sums, geometry, statics[2], extra, kind, registers[2])


def _fetch_first(tiles, a, b, blocks, geometry, places):
    """The first K block of a program's first unit, into set 0 and prepared, before the loop (static offsets
    ``places``)."""
    _fetch(tiles[0][0], a, b, blocks[0], geometry, ((), ()), places)
    _prepare(tiles[0][0], blocks[0], geometry, tiles[2])


def _level_word(out):
    """Elements of one (level, K block) word of the levels output [s, K blocks, (batch,) M, N]."""
    return _size(out) // (out.shape[0] * out.shape[1])


def _total_chunks(blocks):
    total = 0
    for _, ks in blocks:
        total = total + _tiles(_tiles(ks, TILE_K), CHUNK_TILES)
    return total


def _fetch(tile_set, a, b, block, geometry, registers, statics):
    """The DMAs of one K block (k0, ks) of every word of A^T[k0:k0 + ks, the unit's rows] and B[k0:k0 + ks, its
    columns] into ``tile_set``: straight into the operand tiles, or into its staging tiles where the data needs work
    on chip first (``_prepare``). ``registers`` and ``statics``: where the unit lies in A and B (tuples of a
    register, or empty, and element offsets)."""
    a_tiles, b_tiles, a_stage, b_stage = tile_set
    k0, ks = block
    rows, columns, words = geometry[0], geometry[1], geometry[2]
    a_stride, a_word, b_stride, b_word, a_is_transposed = (
        geometry[3],
        geometry[4],
        geometry[5],
        geometry[6],
        geometry[8],
    )
    for w in range(words):
        if a_is_transposed:
            _fetch_rows(
                a_stage if a_stage else a_tiles,
                w,
                a,
                statics[0] + w * a_word + k0 * a_stride,
                a_stride,
                ks,
                rows,
                registers[0],
            )
        else:  # 128 rows of A (a run of the block's K per partition) per M tile
            for i in range(_tiles(rows, TILE_M)):
                mr = min(TILE_M, rows - i * TILE_M)
                _copy(
                    a_stage[0:mr, w, i, 0:ks],
                    _access(
                        a, [[a_stride, mr], [1, ks]], statics[0] + w * a_word + i * TILE_M * a_stride + k0, registers[0]
                    ),
                    len(registers[0]) > 0,
                )
        _fetch_rows(
            b_stage if b_stage else b_tiles,
            w,
            b,
            statics[1] + w * b_word + k0 * b_stride,
            b_stride,
            ks,
            columns,
            registers[1],
        )


def _fetch_rows(dst, w, src, offset, stride, ks, width, register):
    """dst[0:128, w, t, 0:width] = the K rows 128 t .. of ``src`` (row stride ``stride`` elements) from ``offset``
    plus the register: the whole K tiles in one DMA (a run of ``width`` elements per partition and tile), the
    partial last tile in another."""
    whole, rest = ks // TILE_K, ks % TILE_K
    dynamic = len(register) > 0
    if whole:
        _copy(
            dst[0:TILE_K, w, 0:whole, 0:width],
            _access(src, [[stride, TILE_K], [TILE_K * stride, whole], [1, width]], offset, register),
            dynamic,
        )
    if rest:
        _copy(
            dst[0:rest, w, whole, 0:width],
            _access(src, [[stride, rest], [1, width]], offset + whole * TILE_K * stride, register),
            dynamic,
        )


def _prepare(tile_set, block, geometry, flips):
    """The operand tiles of a fetched K block, after the work on chip its data needs: A's rows transposed 128 x 128
    on the Tensor Engine (bit-exact from NeuronCore-v3) through PSUM; fp32 data for bf16 operands rounded to nearest
    even on GpSimd (the engine PSUM evictions leave free)."""
    a_tiles, b_tiles, a_stage, b_stage = tile_set
    ks = block[1]
    rows, columns, words, a_is_transposed = geometry[0], geometry[1], geometry[2], geometry[8]
    for w in range(words):
        if not a_is_transposed:
            for i in range(_tiles(rows, TILE_M)):
                _transpose_rows(tile_set, block, geometry, flips, i, w)
        elif a_stage:
            _round(a_tiles, a_stage, w, ks, rows)
        if b_stage:
            _round(b_tiles, b_stage, w, ks, columns)


def _transpose_rows(tile_set, block, geometry, flips, i, w):
    """Word w of A's M tile i of a fetched K block transposed into the set's operand tiles."""
    a_tiles, a_stage = tile_set[0], tile_set[2]
    ks, rows = block[1], geometry[0]
    mr = min(TILE_M, rows - i * TILE_M)
    if mr:
        for t in range(_tiles(ks, TILE_K)):
            kr = min(TILE_K, ks - t * TILE_K)
            flip = flips[t % len(flips)]
            nisa.nc_transpose(
                dst=flip[0:kr, 0:mr], data=a_stage[0:mr, w, i, t * TILE_K : t * TILE_K + kr], engine=nisa.tensor_engine
            )
            nisa.tensor_copy(
                dst=a_tiles[0:kr, w, t, i * TILE_M : i * TILE_M + mr], src=flip[0:kr, 0:mr], engine=nisa.vector_engine
            )


def _round(dst, staged, w, ks, width):
    """dst[:, w, t, 0:width] = staged[:, w, t, 0:width] rounded to dst's dtype, a K tile at a time, on GpSimd."""
    for t in range(_tiles(ks, TILE_K)):
        kr = min(TILE_K, ks - t * TILE_K)
        nisa.tensor_copy(dst=dst[0:kr, w, t, 0:width], src=staged[0:kr, w, t, 0:width], engine=nisa.gpsimd_engine)


def _accumulate(acc, a_tiles, b_tiles, levels, i, j, mr, nr, ks, t0, t1):
    """acc[mr, nr] (PSUM) = the kept word products of K tiles t0..t1 of the block, level by level, smallest
    first: one accumulation group, started by its first matmul."""
    first = True
    for level in levels:
        for t in range(t0, t1):
            kr = min(TILE_K, ks - t * TILE_K)
            for pair in level:
                nisa.nc_matmul(
                    acc[0:mr, 0:nr],
                    a_tiles[0:kr, pair[0], t, i * TILE_M : i * TILE_M + mr],
                    b_tiles[0:kr, pair[1], t, j * TILE_N : j * TILE_N + nr],
                    accumulate=not first,
                )
                first = False


def _output_tiles(rows, columns):
    """(i, j, rows, columns) of each output tile of a unit, row-major."""
    found = ()
    for i in range(_tiles(rows, TILE_M)):
        for j in range(_tiles(columns, TILE_N)):
            found = found + ((i, j, min(TILE_M, rows - i * TILE_M), min(TILE_N, columns - j * TILE_N)),)
    return found


def _multiply(sums, a_tiles, b_tiles, levels, ks, geometry, ring, first_block, last_block, tick=_no_tick):
    """Every output tile of the K block in one PSUM accumulation (the ring's next bank), landed in fp32 in the
    running sums (the result tile for the last K block): copied by the Scalar Engine for the first K block, added
    by the Vector Engine for later ones."""
    running, result = sums
    found = _output_tiles(geometry[0], geometry[1])
    for index in range(len(found)):
        i, j, mr, nr = found[index]
        acc = ring[index % len(ring)]
        _accumulate(acc, a_tiles, b_tiles, levels, i, j, mr, nr, ks, 0, _tiles(ks, TILE_K))
        cols = slice(j * TILE_N, j * TILE_N + nr)
        part = result[i][0:mr, cols] if last_block else running[0:mr, 0, i, cols]
        if first_block:
            nisa.activation(dst=part, op=nl.copy, data=acc[0:mr, 0:nr])
        else:
            nisa.tensor_tensor(
                dst=part, data1=running[0:mr, 0, i, cols], data2=acc[0:mr, 0:nr], op=nl.add, engine=nisa.vector_engine
            )
        tick(index)


def _multiply_chunked(sums, a_tiles, b_tiles, levels, ks, geometry, ring, extra, first_chunk, chunks, tick=_no_tick):
    """bf16x6: a PSUM accumulation per chunk of CHUNK_TILES K tiles; chunk sums added GROUP at a time into the
    output tile's group sum (fp32), each full group TwoSum-added into its (s, e) (``_allocate``: a tile each,
    per output tile). Returns the chunks done after this K block (the count carries across the unit's static K
    blocks)."""
    found = _output_tiles(geometry[0], geometry[1])
    here = _tiles(_tiles(ks, TILE_K), CHUNK_TILES)
    for index in range(len(found)):
        i, j, mr, nr = found[index]
        s, e, group = sums[0][index][0][0:mr, 0:nr], sums[0][index][1][0:mr, 0:nr], sums[0][index][2][0:mr, 0:nr]
        for c in range(here):
            acc = ring[(index * here + c) % len(ring)]
            _accumulate(
                acc,
                a_tiles,
                b_tiles,
                levels,
                i,
                j,
                mr,
                nr,
                ks,
                c * CHUNK_TILES,
                min((c + 1) * CHUNK_TILES, _tiles(ks, TILE_K)),
            )
            number = first_chunk + c
            if number % GROUP == 0:
                nisa.activation(dst=group, op=nl.copy, data=acc[0:mr, 0:nr])
            else:
                nisa.tensor_tensor(dst=group, data1=group, data2=acc[0:mr, 0:nr], op=nl.add, engine=nisa.vector_engine)
            if number % GROUP == GROUP - 1 or number == chunks - 1:
                _two_sum_into(s, e, group, number < GROUP, extra[index % 2], mr, nr)
        tick(index)
    return first_chunk + here


def _two_sum_into(s, e, g, first, extra, mr, nr):
    """(s, e) += g with Knuth's TwoSum (s + e holds the sum; the error of each addition goes to e), split between
    the Vector Engine and GpSimd (both SBUF-only here), the new s copied by the Scalar Engine."""
    if first:
        nisa.tensor_copy(dst=s, src=g, engine=nisa.gpsimd_engine)
        nisa.memset(e, 0.0, engine=nisa.gpsimd_engine)
        return
    total, other, error = extra[0][0:mr, 0:nr], extra[1][0:mr, 0:nr], extra[2][0:mr, 0:nr]
    nisa.tensor_tensor(dst=total, data1=s, data2=g, op=nl.add, engine=nisa.vector_engine)  # t = s + g
    nisa.tensor_tensor(dst=other, data1=total, data2=s, op=nl.subtract, engine=nisa.gpsimd_engine)  # bb = t - s
    nisa.tensor_tensor(dst=error, data1=total, data2=other, op=nl.subtract, engine=nisa.vector_engine)  # t - bb
    nisa.tensor_tensor(dst=error, data1=s, data2=error, op=nl.subtract, engine=nisa.gpsimd_engine)  # s - (t - bb)
    nisa.tensor_tensor(dst=other, data1=g, data2=other, op=nl.subtract, engine=nisa.vector_engine)  # g - bb
    nisa.tensor_tensor(dst=error, data1=error, data2=other, op=nl.add, engine=nisa.gpsimd_engine)  # TwoSum error
    nisa.tensor_tensor(dst=e, data1=e, data2=error, op=nl.add, engine=nisa.vector_engine)
    nisa.tensor_copy(dst=s, src=total, engine=nisa.scalar_engine)


def _store(out, sums, geometry, static, extra, kind, register):
    """The unit's result to out at the register's offset plus ``static``: s + e for bf16x6, stochastically rounded
    to bf16 for sr, else as it is; one DMA per 128 rows."""
    rows, columns, stride = geometry[0], geometry[1], geometry[7]
    running, results = sums
    for i in range(_tiles(rows, TILE_M)):
        mr = min(TILE_M, rows - i * TILE_M)
        result = results[i][0:mr, 0:columns]
        if kind == "chunked":
            for j in range(_tiles(columns, TILE_N)):
                nr = min(TILE_N, columns - j * TILE_N)
                tile = running[i * _tiles(columns, TILE_N) + j]
                nisa.tensor_tensor(
                    dst=results[i][0:mr, j * TILE_N : j * TILE_N + nr],
                    data1=tile[0][0:mr, 0:nr],
                    data2=tile[1][0:mr, 0:nr],
                    op=nl.add,
                    engine=nisa.vector_engine,
                )
        dst = _access(out, [[stride, mr], [1, columns]], static + i * TILE_M * stride, register)
        if kind == "stochastic":
            _store_stochastic(dst, result, extra, mr, columns)
        else:
            _copy(dst, result, True)


def _store_stochastic(dst, result, extra, mr, columns):
    """fp32 ``result`` to bf16 ``dst``, rounded up with probability equal to the dropped fraction: 16 random bits
    added to the 16 bits bf16 drops (an exact integer add; a carry rounds up), then masked."""
    random, low, high, narrow = (
        extra[0][0:mr, 0:columns],
        extra[1][0:mr, 0:columns],
        extra[2][0:mr, 0:columns],
        extra[3][0:mr, 0:columns],
    )
    nisa.rng(random, engine=_rng_engine())
    nisa.tensor_tensor(dst=random, data1=random, data2=low, op=nl.bitwise_and, engine=nisa.vector_engine)
    nisa.tensor_tensor(dst=random, data1=result.view(nl.uint32), data2=random, op=nl.add, engine=nisa.gpsimd_engine)
    nisa.tensor_tensor(dst=random, data1=random, data2=high, op=nl.bitwise_and, engine=nisa.vector_engine)
    nisa.tensor_copy(dst=narrow, src=random.view(nl.float32), engine=nisa.scalar_engine)
    _copy(dst, narrow, True)


# --- ozaki's exact levels ----------------------------------------------------------------------------------
def _exact_level(out, word, a_tiles, b_tiles, pairs, ks, geometry, ring, extra, register):
    """One level over one K block: PSUM accumulations of a few (pair, K tile) items, each exact in fp32, converted
    to int32 and summed exactly on GpSimd, then stored to ``word`` (elements) of out plus the unit's offset."""
    stride = geometry[7]
    per_group = EXACT_TILES if pairs == ((0, 0),) else EXACT_TILES_LATER
    items = ()  # (word pair, K tile): at most per_group of them per PSUM accumulation
    for t in range(_tiles(ks, TILE_K)):
        for pair in pairs:
            items = items + ((pair, t),)
    bank = 0
    found = _output_tiles(geometry[0], geometry[1])
    for index in range(len(found)):
        i, j, mr, nr = found[index]
        total, exact = extra[index % 2]
        for g in range(0, len(items), per_group):
            acc = ring[bank % len(ring)]
            bank = bank + 1
            for index in range(g, min(g + per_group, len(items))):
                pair, t = items[index]
                kr = min(TILE_K, ks - t * TILE_K)
                nisa.nc_matmul(
                    acc[0:mr, 0:nr],
                    a_tiles[0:kr, pair[0], t, i * TILE_M : i * TILE_M + mr],
                    b_tiles[0:kr, pair[1], t, j * TILE_N : j * TILE_N + nr],
                    accumulate=(index > g),
                )
            if g == 0:
                nisa.tensor_copy(dst=total[0:mr, 0:nr], src=acc[0:mr, 0:nr], engine=nisa.vector_engine)
            else:
                nisa.tensor_copy(dst=exact[0:mr, 0:nr], src=acc[0:mr, 0:nr], engine=nisa.scalar_engine)
                nisa.tensor_tensor(
                    dst=total[0:mr, 0:nr],
                    data1=total[0:mr, 0:nr],
                    data2=exact[0:mr, 0:nr],
                    op=nl.add,
                    engine=nisa.gpsimd_engine,
                )
        _copy(
            _access(out, [[stride, mr], [1, nr]], word + i * TILE_M * stride + j * TILE_N, register),
            total[0:mr, 0:nr],
            True,
        )


# --- the split kernels: words split on chip, once per call ------------------------------------------------------
def _pieces(batch, rows, columns, long_rows, long=None):
    """The split's pieces of a [batch, rows, columns] fp32 operand: ((piece rows, piece columns), their (entry,
    first row, first column)), ``long`` (default PIECE_LONG) along K and PIECE_SHORT along M or N (``long_rows``:
    the rows run along K), the last of each direction moved back to end at the edge (overlapping pieces write the
    same bits)."""
    long = long or PIECE_LONG
    pr = min(rows, long if long_rows else PIECE_SHORT)
    pc = min(columns, PIECE_SHORT if long_rows else long)
    found = ()
    for entry in range(batch):
        for r in _starts(rows, pr):
            for c in _starts(columns, pc):
                found = found + ((entry, r, c),)
    return (pr, pc), found


def _needs(pieces, geometry, long_rows, places, extent, which):
    """Per piece, the first products-loop iteration whose unit (of any program) reads its words: the unit's
    [first, first + extent) of M (``which`` 1) or N (2) meets the piece's (its columns when ``long_rows``, else
    its rows); iterations past the last when none does."""
    width = geometry[1] if long_rows else geometry[0]
    needs = ()
    for entry, r, c in pieces:
        start = c if long_rows else r
        first = len(places[0])
        for t in range(len(places[0])):
            for mine in places:
                unit = mine[t]
                if (
                    first == len(places[0])
                    and unit[0] == entry
                    and unit[which] < start + width
                    and start < unit[which] + extent
                ):
                    first = t
        needs = needs + (first,)
    return needs


def _schedule(needs, programs, iterations, slots, start):
    """Pieces (by ``needs``) to the products loop's ``slots`` per program per iteration from iteration ``start`` on,
    earliest deadline first into the earliest slots (iteration by iteration, program by program), a piece only into
    an iteration before the one that reads it; the others go before the loop. Returns (the pieces split before the
    loop, per slot in order the piece it splits)."""
    early, taken = (), ()
    for need in range(iterations + 1):
        for index in range(len(needs)):
            if needs[index] == need:
                if start + len(taken) // (programs * slots) < need:
                    taken = taken + (index,)
                else:
                    early = early + (index,)
    return early, taken


def _slots(needs, programs, iterations, start):
    """(slots, early pieces, loop pieces) of an operand's schedule from iteration ``start``: the fewest slots (at
    most MAX_SLOTS) that leave no more pieces before the loop than the most slots would."""
    best = _schedule(needs, programs, iterations, MAX_SLOTS, start)
    chosen = (MAX_SLOTS,) + best
    for tried in range(MAX_SLOTS - 1, 0, -1):
        found = _schedule(needs, programs, iterations, tried, start)
        if len(found[0]) == len(best[0]):
            chosen = (tried,) + found
    return chosen


def _split_plan(batch, m, k, n, a_is_transposed, programs):
    """Which program splits which piece of A and of B, and when: per operand (slots, first and end loop iteration
    of its splits, piece geometry, per program the (source, scratch) offsets of its pieces split before the
    products loop, per program per loop iteration from the first the offsets of the ``slots`` pieces it splits
    then). A piece is split once, before the iteration whose products read its words (that unit's first K block is
    fetched in the iteration before, after the barrier that publishes the words): the pieces the first units read
    before the loop, the others during the products loop, in consecutive iterations per operand: both operands
    from the first iteration, or one after the other, whichever leaves the fewest pieces before the loop and then
    the fewest elements to split in any one iteration (each operand in the fewest slots, at most MAX_SLOTS, that
    leave no more before the loop). Slots left over (a short share before the loop, an operand's last iteration)
    split its first piece again into the scratch's spare entry (index ``batch``), which nothing reads. Offsets:
    A's source is A [M, K] or A^T [K, M], its scratch A^T [K, M]; B's source and scratch are [K, N]."""
    (iterations, rows, columns), places = _unit_places(batch, m, n, programs)
    a_source = (k, m) if a_is_transposed else (m, k)
    found = ()  # per operand: (geometry, pieces, needs)
    for operand in range(2):
        long_rows = a_is_transposed if operand == 0 else True
        source = a_source if operand == 0 else (k, n)
        geometry, pieces = _pieces(batch, source[0], source[1], long_rows, PIECE_LONG_B if operand else PIECE_LONG)
        found = found + (
            (
                geometry,
                pieces,
                _needs(pieces, geometry, long_rows, places, rows if operand == 0 else columns, operand + 1),
            ),
        )
    best, score = (), ()
    for order in range(3):  # both from iteration 0; A, then B; B, then A
        schedules, start = (), 0
        for operand in (0, 1) if order < 2 else (1, 0):
            chosen = _slots(found[operand][2], programs, iterations, start)
            end = start + _tiles(len(chosen[2]), programs * chosen[0])
            schedules = schedules + ((operand, start, end) + chosen,)
            if order > 0:
                start = end
        if schedules[0][0] == 1:
            schedules = (schedules[1], schedules[0])
        heaviest = 0
        for t in range(iterations):
            load = 0
            for operand, first, end, slots, _, _ in schedules:
                if first <= t < end:
                    load = load + slots * found[operand][0][0] * found[operand][0][1]
            heaviest = max(heaviest, load)
        mine = (len(schedules[0][4]) + len(schedules[1][4]), heaviest)
        if not score or mine[0] < score[0] or (mine[0] == score[0] and mine[1] < score[1]):
            best, score = schedules, mine
    plans = ()
    for operand, first, end, slots, early, taken in best:
        geometry, pieces = found[operand][0], found[operand][1]
        offsets = ()
        for entry, r, c in pieces:
            offsets = offsets + (_piece_offsets(operand, entry, r, c, batch, m, k, n, a_is_transposed),)
        spare = (offsets[0][0], _piece_offsets(operand, batch, 0, 0, batch, m, k, n, a_is_transposed)[1])
        count = _tiles(len(early), programs)
        before = ()  # dealt like units; a short share's slots split into the spare entry
        for p in range(programs):
            mine = ()
            for t in range(count):
                index = p * count + t
                mine = mine + ((offsets[early[index]] if index < len(early) else spare),)
            before = before + (mine,)
        during = ()
        for p in range(programs):
            mine = ()
            for t in range(end - first):
                row = ()
                for s in range(slots):
                    position = (t * programs + p) * slots + s
                    row = row + ((offsets[taken[position]] if position < len(taken) else spare),)
                mine = mine + (row,)
            during = during + (mine,)
        plans = plans + ((slots, (first, end), geometry, before, during),)
    return plans


def _piece_offsets(operand, entry, r, c, batch, m, k, n, a_is_transposed):
    """(source, scratch) element offsets of the piece at (entry, r, c) of operand 0 (A) or 1 (B)."""
    if operand == 1:
        return entry * k * n + r * n + c, entry * k * n + r * n + c
    if a_is_transposed:
        return entry * k * m + r * m + c, entry * k * m + r * m + c
    return entry * m * k + r * k + c, entry * k * m + c * m + r


def _split_products(out, a, b, a_is_transposed, words, table, batch):
    """``_products`` of fp32 A and B split on chip into ``words`` bf16 words, each element once per call, into
    shared HBM scratch (A's words as A^T [words, batch + 1, K, M], B's [words, batch + 1, K, N]; the extra entry
    takes the spare slots' words): the programs split the pieces the first units read (one dynamic loop per
    operand), fence their writes and meet at ``nisa.core_barrier`` (one per scratch tensor); the products loop
    then splits the other pieces in its first iterations, between the K blocks' products, each iteration ending
    its splits with fences and barriers before it fetches the next unit (``_split_plan``)."""
    m, n = out.shape[-2], out.shape[-1]
    k = b.shape[-2]
    programs = _checked(table, (a, b, out))
    a_words = nl.ndarray((words, batch + 1, k, m), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    b_words = nl.ndarray((words, batch + 1, k, n), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    plans = _split_plan(batch, m, k, n, a_is_transposed, programs)
    operands = (
        _split_operand(
            a_words, a, words, not a_is_transposed, plans[0][2], (m if a_is_transposed else k, m), batch * k * m
        ),
        _split_operand(b_words, b, words, False, plans[1][2], (n, n), batch * k * n),
    )
    first = _split_before(operands, plans, words, a_is_transposed, table, batch, m, k, n)
    _products(
        out,
        a_words,
        b_words,
        True,
        nl.bfloat16,
        words,
        True,
        table,
        first,
        _kind(words),
        batch,
        (operands, plans, a_is_transposed),
    )


def _split_operand(scratch, x, words, transpose, geometry, strides, spare):
    """What splitting one operand's pieces needs: (scratch, source, transposed on the way, per sub-tile of a piece
    its (source offset, scratch offset, rows, columns) from the piece's, the scratch's word size, a static region
    of its spare entry for fences)."""
    pr, pc = geometry
    sr, sc = min(pr, TILE_K), min(pc, PIECE_SHORT)
    subtiles = ()
    for i in _starts(pr, sr):
        for j in _starts(pc, sc):
            scratch_offset = j * strides[1] + i if transpose else i * strides[1] + j
            subtiles = subtiles + ((i * strides[0] + j, scratch_offset, sr, sc),)
    return scratch, x, transpose, subtiles, _size(scratch) // words, strides, spare


def _split_before(operands, plans, words, a_is_transposed, table, batch, m, k, n):
    """The pieces split before the products loop: a dynamic loop per operand, a piece per iteration, its sub-tiles
    in groups pipelined over SPLIT_SETS staging sets (``_split_pipeline``); then each program fences its scratch
    writes and all meet at a barrier per scratch tensor. Returns the table rows they take."""
    programs = len(plans[0][3])
    staging = _split_staging(SPLIT_SETS, words, a_is_transposed)
    registers = ((nisa.register_alloc(),), (nisa.register_alloc(),))
    first = 0
    for operand in range(2):
        count = len(plans[operand][3][0])
        read = _row_reader(table, first, registers)

        def body(i, operand=operand, read=read):
            read(i)
            jobs = _jobs(operands[operand], registers[0], registers[1])
            part = len(staging[0]) // 3
            groups = ()
            for g0 in range(0, len(jobs), part):
                groups = groups + (jobs[g0 : g0 + part],)
            tick = _split_pipeline(words, groups, staging)
            for j in range(-1, len(groups)):
                tick(j)

        nl.fori_loop(0, count * ROW, body, step=ROW)
        first = first + count
    for operand in range(2):
        _fence_spare(operands[operand])
    for operand in range(2):
        nisa.core_barrier(operands[operand][0], _programs(programs))
    return first


def _fence_spare(operand):
    """A fence of the scratch after this program's dynamic writes into it (a DMA of a static region, one row of its
    spare entry's first piece, onto itself: it completes only after the writes before it)."""
    scratch, strides, spare = operand[0], operand[5], operand[6]
    _fence(scratch, [[strides[1], 1], [1, operand[3][0][3]]], spare)


def _jobs(operand, source, scratch):
    """The sub-tiles of the piece at the registers ``source`` and ``scratch`` (tuples of a register): (operand,
    (source register, offset), (scratch register, offset), rows, columns) each."""
    jobs = ()
    for src, dst, rows, columns in operand[3]:
        jobs = jobs + ((operand, (source, src), (scratch, dst), rows, columns),)
    return jobs


def _programs(count):
    found = ()
    for p in range(count):
        found = found + (p,)
    return found


def _split_staging(sets, words, a_is_transposed):
    """``sets`` staging sets for sub-tiles (rest, bits, the bf16 words, and for A's transposed stores the words'
    128-column pieces), then the shared constants (rounding bias, high mask) and the transposes' PSUM ring of 2:
    allocated once; each word its own tiles, so a word's store does not hold up the next word."""
    found = ()
    for _ in range(sets):
        narrow, backs = (), ()
        for _ in range(words):
            narrow = narrow + (nl.ndarray((TILE_K, PIECE_SHORT), dtype=nl.bfloat16, buffer=nl.sbuf),)
            if not a_is_transposed:
                backs = backs + (
                    nl.ndarray((TILE_K, PIECE_SHORT // TILE_K, TILE_K), dtype=nl.bfloat16, buffer=nl.sbuf),
                )
        found = found + (
            (
                nl.ndarray((TILE_K, PIECE_SHORT), dtype=nl.float32, buffer=nl.sbuf),
                nl.ndarray((TILE_K, PIECE_SHORT), dtype=nl.uint32, buffer=nl.sbuf),
                narrow,
                backs,
            ),
        )
    flips = ()
    if not a_is_transposed:
        for _ in range(2):
            flips = flips + (nl.ndarray((TILE_K, TILE_K), dtype=nl.bfloat16, buffer=nl.psum),)
    return found, (_constant(ROUND_BIAS, PIECE_SHORT), _constant(HI_MASK, PIECE_SHORT)), flips


def _loop_sets(words):
    """Staging sets of the split inside the products loop."""
    return (words + 2) * (LOOP_GROUPS if words == 2 else 1)


def split_staging_bytes(words, a_is_transposed, sets=None):
    """SBUF bytes per partition of ``_split_staging`` (the products loop's sets unless ``sets``)."""
    per_set = PIECE_SHORT * (4 + 4 + 2 * words) + (0 if a_is_transposed else words * PIECE_SHORT * 2)
    return (sets or _loop_sets(words)) * per_set + 2 * PIECE_SHORT * 4


def _split_loads(group):
    """The fp32 sub-tiles of ``group`` ((job, staging set) pairs) into their sets' ``rest`` tiles."""
    for job, staged in group:
        operand, (register, src), rows, columns = job[0], job[1], job[3], job[4]
        _copy(
            staged[0][0:rows, 0:columns],
            _access(operand[1], [[operand[5][0], rows], [1, columns]], src, register),
            True,
        )


def _split_adds(group, staging):
    """The rounding adds of the next word of ``group``'s sub-tiles: bits = bits of rest + 0x8000, exact on
    GpSimd."""
    bias = staging[1][0]
    for job, staged in group:
        rows, columns = job[3], job[4]
        nisa.tensor_tensor(
            dst=staged[1][0:rows, 0:columns],
            data1=staged[0][0:rows, 0:columns].view(nl.uint32),
            data2=bias[0:rows, 0:columns],
            op=nl.add,
            engine=nisa.gpsimd_engine,
        )


def _split_group(words, group, staging, added=False):
    """The words of the loaded sub-tiles of ``group`` into the scratch: w = ((bits + 0x8000) & 0xFFFF0000) as fp32
    (an exact bf16), x -= w (exact), per word; step by step over the group (each sub-tile its own staging set), so
    each in-order engine works on one while the others' steps run elsewhere. ``added``: the first word's adds
    were issued before (``_split_adds``)."""
    mask = staging[1][1]
    flips = staging[2]
    for t in range(words):
        if t or not added:
            _split_adds(group, staging)
        for job, staged in group:
            rows, columns = job[3], job[4]
            nisa.tensor_tensor(
                dst=staged[1][0:rows, 0:columns],
                data1=staged[1][0:rows, 0:columns],
                data2=mask[0:rows, 0:columns],
                op=nl.bitwise_and,
                engine=nisa.vector_engine,
            )
        for job, staged in group:
            rows, columns = job[3], job[4]
            nisa.tensor_copy(
                dst=staged[2][t][0:rows, 0:columns],
                src=staged[1][0:rows, 0:columns].view(nl.float32),
                engine=nisa.scalar_engine,
            )
        if t < words - 1:
            for job, staged in group:
                rows, columns = job[3], job[4]
                nisa.tensor_tensor(
                    dst=staged[0][0:rows, 0:columns],
                    data1=staged[0][0:rows, 0:columns],
                    data2=staged[1][0:rows, 0:columns].view(nl.float32),
                    op=nl.subtract,
                    engine=nisa.vector_engine,
                )
        for job, staged in group:
            operand, (register, dst), rows, columns = job[0], job[2], job[3], job[4]
            if operand[2]:
                _store_transposed(
                    operand[0],
                    t * operand[4] + dst,
                    staged[2][t],
                    rows,
                    columns,
                    operand[5][1],
                    flips,
                    staged[3][t],
                    register,
                )
            else:
                _copy(
                    _access(operand[0], [[operand[5][1], rows], [1, columns]], t * operand[4] + dst, register),
                    staged[2][t][0:rows, 0:columns],
                    True,
                )


def _store_transposed(out, offset, narrow, rows, columns, stride, flips, backs, register):
    """The bf16 tile narrow[rows, columns] (a word) stored transposed (out row c, column r; row stride ``stride``),
    128 columns at a time through the Tensor Engine (bf16, bit-exact from NeuronCore-v3) into ``backs``: the whole
    128-column pieces in one DMA, a partial last piece in another."""
    for p in range(_tiles(columns, TILE_K)):
        cr = min(TILE_K, columns - p * TILE_K)
        flip = flips[p % 2]
        nisa.nc_transpose(
            dst=flip[0:cr, 0:rows], data=narrow[0:rows, p * TILE_K : p * TILE_K + cr], engine=nisa.tensor_engine
        )
        nisa.tensor_copy(dst=backs[0:cr, p, 0:rows], src=flip[0:cr, 0:rows], engine=nisa.vector_engine)
    whole, rest = columns // TILE_K, columns % TILE_K
    if whole:
        _copy(
            _access(out, [[stride, TILE_K], [TILE_K * stride, whole], [1, rows]], offset, register),
            backs[0:TILE_K, 0:whole, 0:rows],
            True,
        )
    if rest:
        _copy(
            _access(out, [[stride, rest], [1, rows]], offset + whole * TILE_K * stride, register),
            backs[0:rest, whole, 0:rows],
            True,
        )
