"""NKI kernels for the Tensor Engine: C[M, N] = A[M, K] @ B[K, N] (``bmm``: over a leading batch), in every
precision mode with a kernel, for NKI 0.6+ on Trainium2/3 (and the CPU model of the NeuronCore in ``model/``).

Launch and partition: the host launches ``kernel[lnc]`` at the runtime's LNC (trn2: 2 physical cores per logical
core), which runs the kernel as programs 0..lnc-1, one per physical core; all of them allocate the same
shared_hbm output. The output blocks (below) of all batch entries, entry by entry and row-major within one, are
dealt out in contiguous shares balanced by output elements (``_shares``): each program computes and writes only
its own blocks, and with two or more blocks both cores get work. The split kernels' phase 1 runs per program into
the program's own private_hbm scratch, on the rows of A and columns of B its blocks need.

``nisa.nc_matmul(dst, stationary, moving)`` computes stationary.T @ moving with K on the partition axis of both:
A enters as A^T tiles [K <= 128, M <= 128] (stationary), B as [K <= 128, N <= 512] tiles (moving), and an
output tile [M, N] accumulates in one fp32 PSUM bank (accumulate=False on the first product, True after: never
onto memory a matmul did not write). ``a`` is A^T [K, M] when ``a_is_transposed`` (a view the host hands over
when A's strides allow) or A [M, K], transposed on chip 128 x 128 at a time on the Tensor Engine.

Dynamic loops (``_loop``): every Python loop is unrolled when NKI specializes a kernel, so the loops over whole
batch entries (bmm), whole rows of output blocks, whole N blocks and whole K blocks of a row, and phase 1's whole
tiles of A and B are ``nl.fori_loop``s, whose body is one piece of program: a program's size does not grow with
the batch, M, K or N. A partial entry, row or block (the edges of a program's share, of M, N and K) is a static call
of the same body, as are the first K blocks, which start the sums (``_product_row``). Every HBM access is one
``.ap`` on the whole tensor, viewed as [words, batch, rows, columns], from a place (``_hbm``): a static element
offset plus, inside dynamic loops, an int32 counter in SBUF of elements, set when the loop starts and advanced
after each iteration with exact GpSimd adds (NKI documents no register arithmetic), loaded into a register before
each access. Loops over the tiles within a block stay static (their counts are bounded by the SBUF budget).

Blocking (``_product_row``): the output is cut into blocks of BLOCK_TILES_M x BLOCK_TILES_N tiles and K into blocks
of as many K tiles as the SBUF budget allows; each block's operand tiles are loaded into SBUF once and reused by
every output tile of the block (A's once per M block when K fits in one block). Sums across K blocks are fp32 in
SBUF (the documented tutorial adds them in the output dtype, which rounds bf16 outputs once per block: not here).

Modes (kernels/reference/ is the specification of each; the words and levels are the reference's):
- ``matmul`` fast: bf16 operands (fp32 inputs rounded on chip, on GpSimd); native: fp32 operands (a quarter of
  the bf16 rate).
- ``matmul_split``: dd (2 words) and bf16x6 (3 words). Phase 1 splits fp32 A and B on chip into bf16 words with
  integer operations only, (bits + 0x8000) & 0xFFFF0000 (nearest, ties away; no rounding mode involved; the add
  exact on GpSimd, the mask on the Vector Engine, the only engine with bitvec operators), each element once,
  into private HBM scratch (A's words transposed on the way); phase 2 multiplies the words: every product of an
  output tile and K block in one PSUM accumulation, levels (word pairs i + j) smallest first; bf16x6
  evacuates PSUM every CHUNK_TILES K tiles, adds GROUP chunk sums in fp32 and combines those with TwoSum.
  ``matmul_words`` is phase 2 alone, for words split on the host (float64 data: no fp64 on chip).
- ``matmul_levels``: ozaki's exact level sums of digit products: PSUM accumulations of at most 256 products
  (integers below 2**24, exact in fp32), summed exactly in int32 on GpSimd per K block, out as int32 per level
  and K block; the host adds those exactly and combines the levels.
- ``matmul_sr``: fast, then the fp32 result stochastically rounded to bf16 on chip: 32 random bits per element
  from ``nisa.rng`` on GpSimd (its generator set by ``nisa.rand_set_state`` from the host's states; the Vector
  Engine's, set by ``nisa.set_rng_seed``, on NeuronCore-v2), the low 16
  added to the fp32 bits with an exact integer add, masked, reinterpreted. Integer constants are int32 (the
  kernel language's integers are 32-bit signed): 0xFFFF0000 is memset as -65536.

The kernel functions are plain Python; the host wraps them with the toolchain's ``nki.jit``. Only documented NKI
0.6 names appear here (tests/kernels/test_nki_api.py checks it), no ``is``, no ``*`` in signatures, tuples not lists.
"""

from typing import NamedTuple

from .toolchain import nisa, nl

TILE_K = 128  # partitions (nl.tile_size.pmax): the contraction dimension of one nc_matmul
TILE_M = 128  # stationary free size (nl.tile_size.gemm_stationary_fmax)
TILE_N = 512  # moving free size (nl.tile_size.gemm_moving_fmax): 512 fp32 fill one 2 KiB PSUM bank
BLOCK_TILES_M = 4  # output tiles per block along M: each loaded B tile serves this many stationary tiles
BLOCK_TILES_N = 2  # and along N: each loaded A^T tile serves this many moving tiles
STAGING_BYTES = 24 * 1024  # per partition: staged fp32 tiles, transposes, TwoSum temporaries, bit constants
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


# --- entry points (the host jits these) ---------------------------------------------------------------------
def matmul(a, b, a_is_transposed, fast):
    """C = A @ B in fp32; fast: bf16 operands (fp32 inputs rounded on chip), else fp32 operands (native)."""
    operand = nl.bfloat16 if fast else nl.float32
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _products(_whole(out, 1, 1), _whole(a, 1, 1), _whole(b, 1, 1), a_is_transposed, operand, 1, 0, 0)
    return out


def bmm(a, b, a_is_transposed, fast):
    """C[i] = A[i] @ B[i] for each i of the leading batch dimension (see ``matmul``)."""
    operand = nl.bfloat16 if fast else nl.float32
    batch = a.shape[0]
    out = nl.ndarray((batch, _rows(a[0], a_is_transposed), b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    _products(_whole(out, 1, batch), _whole(a, 1, batch), _whole(b, 1, batch), a_is_transposed, operand, 1, 0, 0)
    return out


def matmul_split(a, b, a_is_transposed, words):
    """dd (words=2) or bf16x6 (words=3) on fp32 A, B: split on chip, then every product in PSUM (fp32 result)."""
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[1]), dtype=nl.float32, buffer=nl.shared_hbm)
    _split_products(_whole(out, 1, 1), _whole(a, 1, 1), _whole(b, 1, 1), a_is_transposed, words)
    return out


def bmm_split(a, b, a_is_transposed, words):
    """``matmul_split`` for each i of the leading batch dimension."""
    batch = a.shape[0]
    out = nl.ndarray((batch, _rows(a[0], a_is_transposed), b.shape[2]), dtype=nl.float32, buffer=nl.shared_hbm)
    _split_products(_whole(out, 1, batch), _whole(a, 1, batch), _whole(b, 1, batch), a_is_transposed, words)
    return out


def matmul_words(a_words, b_words, a_is_transposed):
    """Phase 2 of ``matmul_split`` on words split on the host: a_words [n, M, K] (or [n, K, M]), b_words [n, K, N],
    bf16."""
    words = a_words.shape[0]
    out = nl.ndarray((_rows(a_words[0], a_is_transposed), b_words.shape[2]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    _products(_whole(out, 1, 1), _whole(a_words, words, 1), _whole(b_words, words, 1), a_is_transposed,
              nl.bfloat16, words, _chunking(words), 0)
    return out


def bmm_words(a_words, b_words, a_is_transposed):
    """``matmul_words`` for each i of the batch dimension (a_words [n, B, M, K], b_words [n, B, K, N])."""
    words, batch = a_words.shape[0], a_words.shape[1]
    out = nl.ndarray((batch, _rows(a_words[0, 0], a_is_transposed), b_words.shape[3]), dtype=nl.float32,
                     buffer=nl.shared_hbm)
    _products(_whole(out, 1, batch), a_words, b_words, a_is_transposed, nl.bfloat16, words, _chunking(words), 0)
    return out


def matmul_levels(a_digits, b_digits, a_is_transposed):
    """Ozaki's exact level sums of bf16 digit slices a_digits [s, M, K] (or [s, K, M]), b_digits [s, K, N]: int32
    [s, K blocks, M, N], level s + 1 first (smallest), down to level 2; the host adds the K blocks."""
    m, k, n = _rows(a_digits[0], a_is_transposed), b_digits.shape[1], b_digits.shape[2]
    slices = a_digits.shape[0]
    k_tiles = _level_k_tiles(m, k, n, slices)
    k_blocks = _tiles(k, k_tiles * TILE_K)
    out = nl.ndarray((slices, k_blocks, m, n), dtype=nl.int32, buffer=nl.shared_hbm)
    _levels(_whole(out, slices * k_blocks, 1), _whole(a_digits, slices, 1), _whole(b_digits, slices, 1),
            a_is_transposed, k_tiles)
    return out


def bmm_levels(a_digits, b_digits, a_is_transposed):
    """``matmul_levels`` for each i of the batch dimension: int32 [s, K blocks, B, M, N]."""
    m, k, n = _rows(a_digits[0, 0], a_is_transposed), b_digits.shape[2], b_digits.shape[3]
    slices, batch = a_digits.shape[0], a_digits.shape[1]
    k_tiles = _level_k_tiles(m, k, n, slices)
    k_blocks = _tiles(k, k_tiles * TILE_K)
    out = nl.ndarray((slices, k_blocks, batch, m, n), dtype=nl.int32, buffer=nl.shared_hbm)
    _levels(_whole(out, slices * k_blocks, batch), a_digits, b_digits, a_is_transposed, k_tiles)
    return out


def matmul_sr(a, b, a_is_transposed, seed):
    """fast, then the fp32 result rounded stochastically to bf16 on chip; ``seed``: uint32 [programs, 128,
    XORWOW_WORDS] in HBM: program p sets the generator ``nisa.rng`` draws from (``_rng_engine``) from seed[p]:
    GpSimd's to one XORWOW state per lane with ``nisa.rand_set_state``; on NeuronCore-v2, which has no GpSimd
    generator, the Vector Engine's with ``nisa.set_rng_seed`` from the first word."""
    out = nl.ndarray((_rows(a, a_is_transposed), b.shape[1]), dtype=nl.bfloat16, buffer=nl.shared_hbm)
    program = nl.program_id(0)
    if _shares(1, out.shape[0], out.shape[1]):  # this program has output blocks
        if _rng_engine() == nisa.gpsimd_engine:
            states = nl.ndarray((TILE_K, XORWOW_WORDS), dtype=nl.uint32, buffer=nl.sbuf)
            nisa.dma_copy(dst=states, src=seed[program])
            nisa.rand_set_state(states, engine=nisa.gpsimd_engine)
        else:
            word = nl.ndarray((1, 1), dtype=nl.uint32, buffer=nl.sbuf)
            nisa.dma_copy(dst=word, src=seed[program, 0:1, 0:1])
            nisa.set_rng_seed(word)
    _products(_whole(out, 1, 1), _whole(a, 1, 1), _whole(b, 1, 1), a_is_transposed, nl.bfloat16, 1, 0, 1)
    return out


def _rng_engine():
    """Where ``nisa.rng`` draws: GpSimd from NeuronCore-v3 (rng's documented engines), sparing the Vector Engine;
    the Vector Engine on v2."""
    return nisa.vector_engine if nisa.get_nc_version() == nisa.nc_version.gen2 else nisa.gpsimd_engine


def _whole(x, words, batch):
    """x (a kernel argument or output in HBM) as the [words, batch, rows, columns] view every access below is
    addressed in (``_hbm``)."""
    return x.reshape((words, batch, x.shape[-2], x.shape[-1]))


# --- the programs' shares, walked in dynamic loops ----------------------------------------------------------
def _block_shape(m, n):
    """(block_m, block_n): output rows and columns of one block."""
    return min(BLOCK_TILES_M * TILE_M, m), min(BLOCK_TILES_N * TILE_N, n)


def _shares(batch, m, n):
    """(batch entry, first block, stop block) for each batch entry with output blocks of this program: the
    ``batch`` x [m, n] outputs' blocks, entry by entry and row-major within one, go in contiguous shares to
    programs 0..nl.num_programs()-1, balanced by output elements (edge blocks are smaller): a block goes to the
    program whose equal slice of all the elements holds the block's midpoint. With two or more blocks every
    program of an LNC=2 launch gets at least one (the first block's midpoint lies in the first half, the last's in
    the second)."""
    block_m, block_n = _block_shape(m, n)
    cols = _tiles(n, block_n)
    blocks = _tiles(m, block_m) * cols
    program, programs = nl.program_id(0), nl.num_programs()
    total = batch * m * n
    done = 0  # output elements of the blocks before this one
    shares = ()
    for i in range(batch):
        first, stop = blocks, 0
        for block in range(blocks):
            area = min(block_m, m - block // cols * block_m) * min(block_n, n - block % cols * block_n)
            if programs * (2 * done + area) // (2 * total) == program:
                first, stop = min(first, block), block + 1
            done = done + area
        if first < stop:
            shares = shares + ((i, first, stop),)
    return shares


def _block_rows(first, stop, per_row):
    """(block row, first block column, stop column) of each row of blocks first..stop-1 (row-major)."""
    rows = ()
    for row in range(first // per_row, _tiles(stop, per_row)):
        rows = rows + ((row, max(first - row * per_row, 0), min(stop - row * per_row, per_row)),)
    return rows


def _each_entry(batch, m, n, places, strides, entry):
    """``entry(first, stop, places)`` for each batch entry with output blocks first..stop-1 of this program
    (``_shares``), ``places`` (``_hbm``) moved to the entry: ``strides`` elements per entry in each stream. With a
    batch (bmm), the entries a program has whole run as one dynamic loop (``_loop``), so the program does not grow
    with the batch; the others (at most the first and the last of the share) and a lone entry (matmul) are static
    calls."""
    block_m, block_n = _block_shape(m, n)
    blocks = _tiles(m, block_m) * _tiles(n, block_n)
    whole = ()
    for b, first, stop in _shares(batch, m, n):
        if batch > 1 and first == 0 and stop == blocks:
            whole = whole + (b,)
        else:
            entry(first, stop, _shifted(places, strides, b))
    if whole:
        def body(inner):
            entry(0, blocks, inner)

        _loop(len(whole), _shifted(places, strides, whole[0]), strides, body)


def _each_row(first, stop, m, n, places, strides, row):
    """``row(places, ms, n_first, n_stop)`` for each row of blocks holding blocks first..stop-1 of an entry: ms its
    rows, n_first..n_stop-1 its block columns, ``places`` moved to its first row (``strides`` elements per output
    row in each stream). The rows whole in both directions run as one dynamic loop, so the program does not grow
    with M; the others (the first and the last row when they have only some block columns, the last when block_m
    does not divide M) are static calls of the same row."""
    block_m, block_n = _block_shape(m, n)
    cols = _tiles(n, block_n)
    rows = _block_rows(first, stop, cols)
    looped = ()  # the rows whole in both directions: consecutive (only the first and the last row can be partial)
    for r, n_first, n_stop in rows:
        if n_first == 0 and n_stop == cols and (r + 1) * block_m <= m:
            looped = looped + (r,)

    def body(inner):
        row(inner, block_m, 0, cols)

    for r, n_first, n_stop in rows:
        if not looped or r < looped[0]:
            row(_shifted(places, strides, r * block_m), min(block_m, m - r * block_m), n_first, n_stop)
    if looped:
        _loop(len(looped), _shifted(places, strides, looped[0] * block_m), _scaled(strides, block_m), body)
    for r, n_first, n_stop in rows:
        if looped and r > looped[-1]:
            row(_shifted(places, strides, r * block_m), min(block_m, m - r * block_m), n_first, n_stop)


def _blocks(start, stop, size, places, strides, body):
    """``body(places, extent)`` for each block start, start + size, ... < stop of one dimension, ``places`` moved to
    it (``strides`` elements per unit of the dimension in each stream): the whole blocks as one dynamic loop, the
    partial last one a static call."""
    whole = (stop - start) // size
    if whole:
        def each(inner):
            body(inner, size)

        _loop(whole, _shifted(places, strides, start), _scaled(strides, size), each)
    if start + whole * size < stop:
        body(_shifted(places, strides, start + whole * size), stop - start - whole * size)


def _loop(count, places, advances, body):
    """``body(places)`` ``count`` times as one ``nl.fori_loop``, each stream's place advanced by ``advances``
    elements per iteration. A body is one piece of program, so nothing in it can depend on the iteration: the
    offsets do through int32 counters in SBUF, one per advancing stream (set from the outer place's counter, advanced
    after each iteration by exact int32 adds on GpSimd: NKI documents no register arithmetic), which ``_hbm`` loads
    into the place's register before each access. The loop's own register is not needed. One iteration is a static
    call (the same program, without the counters' instructions)."""
    if count == 1:
        body(places)
        return
    inner = ()
    steps = ()
    for s in range(len(places)):
        place, advance = places[s], advances[s]
        if advance:
            counter = _int_tile(0)
            if len(place) == 3:  # inside a dynamic loop already: start from its counter
                _advance((counter,), place[1])
            inner = inner + ((place[0], counter, nisa.register_alloc()),)
            steps = steps + (_int_tile(advance),)
        else:
            inner = inner + (place,)
            steps = steps + (None,)

    def each(i):
        body(inner)
        for s in range(len(inner)):
            if advances[s]:
                _advance((inner[s][1],), steps[s])

    nl.fori_loop(0, count, each)


def _shifted(places, strides, units):
    """``places`` moved ``units`` along a dimension of ``strides`` elements per unit in each stream (static)."""
    moved = ()
    for s in range(len(places)):
        moved = moved + ((places[s][0] + units * strides[s],) + places[s][1:],)
    return moved


def _scaled(strides, size):
    scaled = ()
    for stride in strides:
        scaled = scaled + (stride * size,)
    return scaled


def _int_tile(value):
    """A [1, 1] int32 SBUF tile holding ``value``, set on GpSimd (an integer memset, exact)."""
    t = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(t, value, engine=nisa.gpsimd_engine)
    return t


def _advance(counters, step):
    """counter += step for each counter: int32 adds on GpSimd, exact (NKI_FACTS.md section 13; the Vector Engine
    would add in fp32)."""
    for counter in counters:
        nisa.tensor_tensor(dst=counter, data1=counter, data2=step, op=nl.add, engine=nisa.gpsimd_engine)


ORIGIN = (0,)  # the place (``_hbm``) of a tensor's first element


def _hbm(t, w, r, c, rows, cols, place):
    """The [rows, cols] tile at row r, column c of word w of ``t`` ([words, batch, R, C] in HBM), from ``place`` =
    (elements,): ``elements`` further into t, or, inside dynamic loops (``_loop``), (elements, counter, register):
    plus the int32 SBUF ``counter``'s elements, loaded into ``register`` here. One ``.ap`` on the whole tensor: an
    access with a dynamic offset is an access pattern over the tensor's storage (SDK NkiTensor.ap, nki-aps.rst);
    patterns are tuples here, as for every call argument of a kernel (the stub types them list[list[int]])."""
    start = (w * t.shape[1] * t.shape[2] + r) * t.shape[3] + c + place[0]
    pattern = ((t.shape[3], rows), (1, cols))
    if len(place) == 1:
        return t.ap(pattern, offset=start)
    assert t.shape[0] * t.shape[1] * t.shape[2] * t.shape[3] <= INT32_MAX, (
        f"nki matmul: {t.shape} is too large for a 32-bit dynamic offset; split the batch or the operands")
    nisa.register_load(place[2], place[1])
    return t.ap(pattern, offset=start, scalar_offset=place[2], indirect_dim=3)

# --- sizes ---------------------------------------------------------------------------------------------------
def _tiles(size, tile):
    return (size + tile - 1) // tile


def _rows(a, a_is_transposed):
    """M of an A given as A^T [K, M] or A [M, K]."""
    return a.shape[1] if a_is_transposed else a.shape[0]


def _chunking(words):
    """K tiles per PSUM accumulation: bf16x6 (3 words) evacuates every CHUNK_TILES; others accumulate a K block."""
    return CHUNK_TILES if words == 3 else 0


class BlockingPlan(NamedTuple):
    """How a kernel call cuts its [M, K] x [K, N] product into blocks, from the SBUF budget (``fitting_blocks``):
    an output block is ``block_m`` x ``block_n`` (at most BLOCK_TILES_M x TILE_M rows and BLOCK_TILES_N x TILE_N
    columns), and each K block is ``k_tiles`` tiles of TILE_K (0 in ``fitting_blocks`` when not even one fits). A
    tuple (block_m, k_tiles, block_n): immutable, and unpacked as the three sizes."""

    block_m: int
    k_tiles: int
    block_n: int


def block_sizes(m, k, n, width, accumulators, sbuf_bytes, k_multiple=1):
    """The ``BlockingPlan`` within ``sbuf_bytes`` per partition (``fitting_blocks``); a shape that cannot fit is
    refused (the host checks before launching)."""
    sizes = fitting_blocks(m, k, n, width, accumulators, sbuf_bytes, k_multiple)
    assert sizes.k_tiles >= 1, (f"nki matmul: {sbuf_bytes} bytes of SBUF per partition cannot hold one K tile of a "
                                f"{sizes.block_m} x {sizes.block_n} block of {width}-byte operands")
    return sizes


def fitting_blocks(m, k, n, width, accumulators, sbuf_bytes, k_multiple=1):
    """The ``BlockingPlan`` for operands of ``width`` bytes per element (all words together) and ``accumulators``
    fp32 result arrays per block; k_tiles is 0 when not even one K tile fits. A block's operand
    tiles and results are double-buffered (the next block's load overlaps this block's matmuls), so two of each
    must fit beside the staging tiles; k_tiles is a multiple of ``k_multiple`` (whole chunks per K block)."""
    block_m, block_n = _block_shape(m, n)
    result = accumulators * _tiles(block_m, TILE_M) * block_n * 4
    room = (sbuf_bytes - STAGING_BYTES) // 2 - result
    k_tiles = min(_tiles(k, TILE_K), max(room, 0) // ((block_m + block_n) * width))
    k_tiles = k_tiles - k_tiles % k_multiple if k_tiles < _tiles(k, TILE_K) else k_tiles
    return BlockingPlan(block_m, k_tiles, block_n)


def _level_k_tiles(m, k, n, slices):
    """K tiles per block for ozaki's levels: the SBUF budget, and at most LEVEL_TERMS products per level (a level
    has up to ``slices`` digit pairs) so no int32 sum can overflow."""
    k_tiles = block_sizes(m, k, n, 2 * slices, 1, nl.tile_size.sbuf_fmax_bytes).k_tiles
    return max(1, min(k_tiles, LEVEL_TERMS // (slices * TILE_K)))


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


# --- phase 1: splitting on chip -----------------------------------------------------------------------------
def _split_products(out, a, b, a_is_transposed, words):
    """``_products`` of fp32 A and B ([1, batch, ...] views) split on chip into ``words`` bf16 words: per batch
    entry, the words of A (as A^T: [words, K, M]) and B ([words, K, N]) go to this program's HBM scratch
    (private_hbm): the rows of A (row by row of output blocks, in the same loops as the products) and the columns
    of B its output blocks need, each element split once; then its blocks multiply the words."""
    batch, m, n = out.shape[1], out.shape[2], out.shape[3]
    k = b.shape[2]
    block_m, block_n = _block_shape(m, n)
    per_row = _tiles(n, block_n)
    a_words = nl.ndarray((words, 1, k, m), dtype=nl.bfloat16, buffer=nl.private_hbm)
    b_words = nl.ndarray((words, 1, k, n), dtype=nl.bfloat16, buffer=nl.private_hbm)
    bias = _constant(ROUND_BIAS)
    mask = _constant(HI_MASK)
    a_row = 1 if a_is_transposed else k  # elements per row of the output in A (A^T [K, M] or A [M, K])

    def split_rows(places, ms, n_first, n_stop):  # places: the rows in A, their columns in the scratch A^T
        if a_is_transposed:
            _split(a_words, a, words, False, bias, mask, (0, k), (0, ms), places[0], places[1])
        else:
            _split(a_words, a, words, True, bias, mask, (0, ms), (0, k), places[0], places[1])

    def multiply(places, ms, n_first, n_stop):  # places: the rows' columns in the scratch A^T, the rows in out
        _product_row(out, a_words, b_words, True, nl.bfloat16, words, _chunking(words), 0,
                     (places[0], ORIGIN, places[1]), ms, n_first, n_stop)

    def entry(first, stop, places):  # places: the entry in A, B and out
        _each_row(first, stop, m, n, (places[0], ORIGIN), (a_row, 1), split_rows)
        n_range = (0, n)  # blocks in several rows of blocks: every column (assumed cheaper than finding the union)
        if first // per_row == (stop - 1) // per_row:
            n_range = (first % per_row * block_n, min(((stop - 1) % per_row + 1) * block_n, n))
        _split(b_words, b, words, False, bias, mask, (0, k), n_range, places[1], ORIGIN)
        _each_row(first, stop, m, n, (ORIGIN, places[2]), (1, n), multiply)

    _each_entry(batch, m, n, (ORIGIN, ORIGIN, ORIGIN), (_entry_size(a), _entry_size(b), _entry_size(out)), entry)


def _entry_size(t):
    """Elements of one batch entry of a [words, batch, rows, columns] tensor."""
    return t.shape[2] * t.shape[3]


def _constant(value):
    """A [128, TILE_N] tile of int32 ``value`` (memset takes an int for an integer tile), viewed as uint32."""
    t = nl.ndarray((TILE_K, TILE_N), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(t, value, engine=nisa.vector_engine)
    return t.view(nl.uint32)


def _split(out, x, words, transpose, bias, mask, rows, cols, x_place, out_place):
    """out's words of x's rows rows[0]..rows[1]-1 and columns cols[0]..cols[1]-1 (x: fp32 [1, batch, R, C] in HBM
    from ``x_place``; out: [words, 1, R, C], or [words, 1, C, R] of x^T when ``transpose``, from ``out_place``; see
    ``_hbm``), tile by tile in dynamic loops (``_blocks``): w = ((bits + 0x8000) & 0xFFFF0000) as fp32 (exact
    bf16), x -= w (exact), for each word."""
    step = TILE_K if transpose else TILE_N  # transposed: 128 x 128 tiles for the Tensor Engine transpose
    out_row, out_col = (1, out.shape[3]) if transpose else (out.shape[3], 1)  # out elements per x row, x column

    def tile(places, rr, cc):
        rest = nl.ndarray((TILE_K, step), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=rest[0:rr, 0:cc], src=_hbm(x, 0, 0, 0, rr, cc, places[0]))
        for t in range(words):
            word = _nearest_word(rest[0:rr, 0:cc], bias[0:rr, 0:cc], mask[0:rr, 0:cc])
            if transpose:
                _store_transposed(_hbm(out, t, 0, 0, cc, rr, places[1]), word)
            else:
                _store_word(_hbm(out, t, 0, 0, rr, cc, places[1]), word)
            if t < words - 1:
                nisa.tensor_tensor(dst=rest[0:rr, 0:cc], data1=rest[0:rr, 0:cc], data2=word, op=nl.subtract,
                                   engine=nisa.vector_engine)

    def row(places, rr):
        def each(inner, cc):
            tile(inner, rr, cc)

        _blocks(cols[0], cols[1], step, places, (1, out_col), each)

    _blocks(rows[0], rows[1], TILE_K, (x_place, out_place), (x.shape[3], out_row), row)


def _nearest_word(rest, bias, mask):
    """The nearest bf16 to ``rest`` (ties away from zero) as an fp32 tile, by exact integer operations: the add on
    GpSimd (exact int32; the Vector Engine adds in fp32), the mask on the Vector Engine (bitvec operators are
    documented there only)."""
    bits = nl.ndarray(rest.shape, dtype=nl.uint32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=bits, data1=rest.view(nl.uint32), data2=bias, op=nl.add, engine=nisa.gpsimd_engine)
    nisa.tensor_tensor(dst=bits, data1=bits, data2=mask, op=nl.bitwise_and, engine=nisa.vector_engine)
    return bits.view(nl.float32)


def _store_word(dst, word):
    """An fp32 tile holding bf16 values -> bf16 (exact) -> HBM."""
    narrow = nl.ndarray(word.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=word, engine=nisa.scalar_engine)
    nisa.dma_copy(dst=dst, src=narrow)


def _store_transposed(dst, word):
    """``_store_word`` of word^T: transposed on the Tensor Engine in bf16 (bit-exact from NeuronCore-v3)."""
    narrow = nl.ndarray(word.shape, dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=word, engine=nisa.scalar_engine)
    flipped = nl.ndarray((word.shape[1], word.shape[0]), dtype=nl.bfloat16, buffer=nl.psum)
    nisa.nc_transpose(dst=flipped, data=narrow, engine=nisa.tensor_engine)
    back = nl.ndarray((word.shape[1], word.shape[0]), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=back, src=flipped, engine=nisa.vector_engine)
    nisa.dma_copy(dst=dst, src=back)


# --- phase 2: products ----------------------------------------------------------------------------------------
def _products(out, a_words, b_words, a_is_transposed, operand, words, chunk_tiles, stochastic):
    """out = sum over the kept word pairs of A_i @ B_j for each batch entry, over this program's output blocks,
    on [words, batch, ...] views (``_whole``); see ``_product_row``."""

    def row(places, ms, n_first, n_stop):
        _product_row(out, a_words, b_words, a_is_transposed, operand, words, chunk_tiles, stochastic, places, ms,
                     n_first, n_stop)

    _each_block_row(out, a_words, b_words, a_is_transposed, row)


def _each_block_row(out, a_words, b_words, a_is_transposed, row):
    """``row(places, ms, n_first, n_stop)`` for each row of this program's output blocks in out [words, batch, M, N]
    (``_each_entry``, ``_each_row``): ``places`` (``_hbm``) = of its rows in A (a_words), of its batch entry in B,
    of its rows in out."""
    batch, m, n = out.shape[1], out.shape[2], out.shape[3]
    a_row = 1 if a_is_transposed else a_words.shape[3]  # elements per output row in A^T [K, M] or A [M, K]

    def entry(first, stop, places):
        _each_row(first, stop, m, n, places, (a_row, 0, n), row)

    _each_entry(batch, m, n, (ORIGIN, ORIGIN, ORIGIN), (_entry_size(a_words), _entry_size(b_words),
                                                        _entry_size(out)), entry)


def _product_row(out, a_words, b_words, a_is_transposed, operand, words, chunk_tiles, stochastic, places, ms,
                 n_first, n_stop):
    """One row of output blocks, block columns n_first..n_stop-1, of ms rows: out = sum over the kept word pairs
    of A_i @ B_j, where ``places`` = of the row's rows in A, of the entry in B, of the row's rows in out (``_hbm``).
    ``chunk_tiles``: 0 accumulates a whole K block per PSUM accumulation, else that many K tiles, GROUP chunk sums
    added and TwoSum-combined. ``stochastic``: round the fp32 result to out's bf16 stochastically (fast only).

    The N blocks and the K blocks run in dynamic loops (``_blocks``, ``_loop``), partial ones static. The sums of an
    N block carry across its K blocks, so they are allocated outside the K loop; what a K block does with them
    (copy or add; bf16x6: which chunk sums start a group, which TwoSum starts (s, e)) depends only on the block's
    position, which a loop body cannot know: the first K blocks are static calls, and a loop iteration takes as many
    K blocks as make its chunks a multiple of GROUP, so every iteration does what the first one would."""
    k, n = b_words.shape[2], b_words.shape[3]
    m = out.shape[2]
    levels = _level_pairs(words)
    width = words * (4 if operand == nl.float32 else 2)
    accumulators = 3 if chunk_tiles else 1
    block_m, k_tiles, block_n = block_sizes(m, k, n, width, accumulators, nl.tile_size.sbuf_fmax_bytes,
                                            max(1, chunk_tiles))
    block_k = k_tiles * TILE_K
    k_blocks = _tiles(k, block_k)
    chunks = _tiles(k, chunk_tiles * TILE_K) if chunk_tiles else 0
    per_block = k_tiles // chunk_tiles if chunk_tiles else GROUP  # chunks per whole K block
    per_step = GROUP // _gcd(GROUP, per_block)  # K blocks per loop iteration: a multiple of GROUP chunks
    k_strides = (a_words.shape[3] if a_is_transposed else 1, n)  # elements per k in A^T [K, M] or A [M, K], in B
    a_tiles = ()
    if k_blocks == 1:  # A's block serves every N block of the row: load it once
        a_tiles = _load_stationary(a_words, places[0], ms, k, a_is_transposed, operand, k_tiles, block_m)

    def n_block(at, ns):
        sums = nl.ndarray((TILE_M, accumulators, _tiles(block_m, TILE_M), block_n), dtype=nl.float32,
                          buffer=nl.sbuf)

        def k_block(kat, ks, index):  # index: the K block's, or one that does the same with the sums
            stationary = a_tiles
            if k_blocks > 1:
                stationary = _load_stationary(a_words, kat[0], ms, ks, a_is_transposed, operand, k_tiles, block_m)
            moving = _load_moving(b_words, kat[1], ks, ns, operand, k_tiles, block_n)
            if chunk_tiles:
                _multiply_chunked(sums, stationary, moving, levels, ms, ks, ns, chunk_tiles, index * per_block,
                                  chunks)
            else:
                _multiply(sums, stationary, moving, levels, ms, ks, ns, index == 0)

        def step(kat):  # K blocks per_step..2 * per_step - 1 stand for those of every iteration
            for q in range(per_step):
                k_block(_shifted(kat, k_strides, q * block_k), block_k, per_step + q)

        whole_steps = k // (per_step * block_k)
        for index in range(min(per_step, k_blocks)):
            k_block(_shifted(at[0:2], k_strides, index * block_k), min(block_k, k - index * block_k), index)
        if whole_steps > 1:
            _loop(whole_steps - 1, _shifted(at[0:2], k_strides, per_step * block_k),
                  _scaled(k_strides, per_step * block_k), step)
        for index in range(max(per_step, whole_steps * per_step), k_blocks):
            k_block(_shifted(at[0:2], k_strides, index * block_k), min(block_k, k - index * block_k), index)
        _store(out, at[2], sums, ms, ns, chunk_tiles, stochastic)

    _blocks(n_first * block_n, min(n_stop * block_n, n), block_n, places, (0, 1, 1), n_block)


def _gcd(a, b):
    while b:
        a, b = b, a % b
    return a


def _load(dst, src):
    """HBM -> SBUF; fp32 data for a bf16 operand is staged in SBUF and rounded to nearest even on GpSimd (the
    engine PSUM evictions leave free)."""
    if src.dtype == dst.dtype:
        nisa.dma_copy(dst=dst, src=src)
    else:
        staged = nl.ndarray(dst.shape, dtype=src.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=staged, src=src)
        nisa.tensor_copy(dst=dst, src=staged, engine=nisa.gpsimd_engine)


def _load_stationary(a_words, at, ms, ks, a_is_transposed, operand, k_tiles, block_m):
    """Each word of A^T[ks of K, the ms rows of A], both from the place ``at``, as SBUF tiles [K tile partitions,
    word, k tile, m]."""
    tiles = nl.ndarray((TILE_K, a_words.shape[0], k_tiles, block_m), dtype=operand, buffer=nl.sbuf)
    for w in range(a_words.shape[0]):
        if a_is_transposed:
            for t in range(_tiles(ks, TILE_K)):
                kr = min(TILE_K, ks - t * TILE_K)
                _load(tiles[0:kr, w, t, 0:ms], _hbm(a_words, w, t * TILE_K, 0, kr, ms, at))
        else:
            for i in range(_tiles(ms, TILE_M)):
                mr = min(TILE_M, ms - i * TILE_M)
                _load_transposed(tiles[:, w, :, i * TILE_M:i * TILE_M + mr], _hbm(a_words, w, i * TILE_M, 0, mr,
                                                                                  ks, at), ks)
    return tiles


def _load_transposed(dst, src, ks):
    """dst[kr, t, mr] (SBUF, K tile t of the block) = src[mr, ks]^T (HBM), 128 x 128 at a time: the rows are
    loaded whole, one DMA with a run of the block's K per partition (a run per K tile would be 256 bytes of bf16,
    half the DMA rate), and each K tile is transposed on the Tensor Engine (bit-exact from NeuronCore-v3) into
    PSUM and copied out by the Vector Engine."""
    mr = src.shape[0]
    rows = nl.ndarray((mr, ks), dtype=dst.dtype, buffer=nl.sbuf)
    _load(rows, src)
    for t in range(_tiles(ks, TILE_K)):
        kr = min(TILE_K, ks - t * TILE_K)
        flipped = nl.ndarray((kr, mr), dtype=dst.dtype, buffer=nl.psum)
        nisa.nc_transpose(dst=flipped, data=rows[0:mr, t * TILE_K:t * TILE_K + kr], engine=nisa.tensor_engine)
        nisa.tensor_copy(dst=dst[0:kr, t, 0:mr], src=flipped, engine=nisa.vector_engine)


def _load_moving(b_words, at, ks, ns, operand, k_tiles, block_n):
    """Each word of B[ks of K, ns of N] from the place ``at`` as SBUF tiles [K tile partitions, word, k tile, n]."""
    tiles = nl.ndarray((TILE_K, b_words.shape[0], k_tiles, block_n), dtype=operand, buffer=nl.sbuf)
    for w in range(b_words.shape[0]):
        for t in range(_tiles(ks, TILE_K)):
            kr = min(TILE_K, ks - t * TILE_K)
            _load(tiles[0:kr, w, t, 0:ns], _hbm(b_words, w, t * TILE_K, 0, kr, ns, at))
    return tiles


def _accumulate(acc, a_tiles, b_tiles, levels, i, j, mr, nr, ks, t0, t1):
    """acc[mr, nr] (PSUM) = the kept word products of K tiles t0..t1 of the block, level by level, smallest
    first: one accumulation group, started by its first matmul."""
    first = True
    for level in levels:
        for t in range(t0, t1):
            kr = min(TILE_K, ks - t * TILE_K)
            for pair in level:
                nisa.nc_matmul(acc[0:mr, 0:nr], a_tiles[0:kr, pair[0], t, i * TILE_M:i * TILE_M + mr],
                               b_tiles[0:kr, pair[1], t, j * TILE_N:j * TILE_N + nr], accumulate=not first)
                first = False


def _multiply(sums, a_tiles, b_tiles, levels, ms, ks, ns, first_block):
    """Every output tile of the block in one PSUM accumulation, landed in sums[:, 0] (fp32): copied by the Scalar
    Engine for the first K block, added by the Vector Engine for later ones."""
    for i in range(_tiles(ms, TILE_M)):
        mr = min(TILE_M, ms - i * TILE_M)
        for j in range(_tiles(ns, TILE_N)):
            nr = min(TILE_N, ns - j * TILE_N)
            acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
            _accumulate(acc, a_tiles, b_tiles, levels, i, j, mr, nr, ks, 0, _tiles(ks, TILE_K))
            part = sums[0:mr, 0, i, j * TILE_N:j * TILE_N + nr]
            if first_block:
                nisa.activation(dst=part, op=nl.copy, data=acc[0:mr, 0:nr])
            else:
                nisa.tensor_tensor(dst=part, data1=part, data2=acc[0:mr, 0:nr], op=nl.add,
                                   engine=nisa.vector_engine)


def _multiply_chunked(sums, a_tiles, b_tiles, levels, ms, ks, ns, chunk_tiles, first_chunk, chunks):
    """bf16x6: a PSUM accumulation per chunk of ``chunk_tiles`` K tiles; chunk sums added GROUP at a time into
    sums[:, 2] (fp32), each full group TwoSum-added into (sums[:, 0], sums[:, 1]) = (s, e)."""
    for i in range(_tiles(ms, TILE_M)):
        mr = min(TILE_M, ms - i * TILE_M)
        for j in range(_tiles(ns, TILE_N)):
            nr = min(TILE_N, ns - j * TILE_N)
            cols = slice(j * TILE_N, j * TILE_N + nr)
            group = sums[0:mr, 2, i, cols]
            for c in range(_tiles(ks, chunk_tiles * TILE_K)):
                acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                _accumulate(acc, a_tiles, b_tiles, levels, i, j, mr, nr, ks, c * chunk_tiles,
                            min((c + 1) * chunk_tiles, _tiles(ks, TILE_K)))
                index = first_chunk + c
                if index % GROUP == 0:
                    nisa.activation(dst=group, op=nl.copy, data=acc[0:mr, 0:nr])
                else:
                    nisa.tensor_tensor(dst=group, data1=group, data2=acc[0:mr, 0:nr], op=nl.add,
                                       engine=nisa.vector_engine)
                if index % GROUP == GROUP - 1 or index == chunks - 1:
                    _two_sum_into(sums[0:mr, 0, i, cols], sums[0:mr, 1, i, cols], group, index < GROUP)


def _two_sum_into(s, e, g, first):
    """(s, e) += g with Knuth's TwoSum (s + e holds the sum; the error of each addition goes to e), split between
    the Vector Engine and GpSimd (both SBUF-only here)."""
    if first:
        nisa.tensor_copy(dst=s, src=g, engine=nisa.gpsimd_engine)
        nisa.memset(e, 0.0, engine=nisa.gpsimd_engine)
        return
    total = nl.ndarray(g.shape, dtype=nl.float32, buffer=nl.sbuf)
    other = nl.ndarray(g.shape, dtype=nl.float32, buffer=nl.sbuf)
    error = nl.ndarray(g.shape, dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_tensor(dst=total, data1=s, data2=g, op=nl.add, engine=nisa.vector_engine)  # t = s + g
    nisa.tensor_tensor(dst=other, data1=total, data2=s, op=nl.subtract, engine=nisa.gpsimd_engine)  # bb = t - s
    nisa.tensor_tensor(dst=error, data1=total, data2=other, op=nl.subtract, engine=nisa.vector_engine)  # t - bb
    nisa.tensor_tensor(dst=error, data1=s, data2=error, op=nl.subtract, engine=nisa.gpsimd_engine)  # s - (t - bb)
    nisa.tensor_tensor(dst=other, data1=g, data2=other, op=nl.subtract, engine=nisa.vector_engine)  # g - bb
    nisa.tensor_tensor(dst=error, data1=error, data2=other, op=nl.add, engine=nisa.gpsimd_engine)  # TwoSum error
    nisa.tensor_tensor(dst=e, data1=e, data2=error, op=nl.add, engine=nisa.vector_engine)
    nisa.tensor_copy(dst=s, src=total, engine=nisa.gpsimd_engine)


def _store(out, at, sums, ms, ns, chunk_tiles, stochastic):
    """The block's result to its rows of out at the place ``at``: s + e for bf16x6, stochastically rounded to bf16
    for sr, else as it is."""
    for i in range(_tiles(ms, TILE_M)):
        rows = min(TILE_M, ms - i * TILE_M)
        result = sums[0:rows, 0, i, 0:ns]
        if chunk_tiles:
            nisa.tensor_tensor(dst=result, data1=result, data2=sums[0:rows, 1, i, 0:ns], op=nl.add,
                               engine=nisa.vector_engine)
        dst = _hbm(out, 0, i * TILE_M, 0, rows, ns, at)
        if stochastic:
            _store_stochastic(dst, result)
        else:
            nisa.dma_copy(dst=dst, src=result)


def _store_stochastic(dst, result):
    """fp32 ``result`` to bf16 ``dst``, rounded up with probability equal to the dropped fraction: 16 random bits
    added to the 16 bits bf16 drops (an exact integer add; a carry rounds up), then masked."""
    rows, cols = result.shape
    random = nl.ndarray((rows, cols), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.rng(random, engine=_rng_engine())
    mask = nl.ndarray((rows, cols), dtype=nl.int32, buffer=nl.sbuf)
    nisa.memset(mask, LOW_MASK, engine=nisa.vector_engine)
    nisa.tensor_tensor(dst=random, data1=random, data2=mask.view(nl.uint32), op=nl.bitwise_and,
                       engine=nisa.vector_engine)
    nisa.tensor_tensor(dst=random, data1=result.view(nl.uint32), data2=random, op=nl.add, engine=nisa.gpsimd_engine)
    nisa.memset(mask, HI_MASK, engine=nisa.vector_engine)
    nisa.tensor_tensor(dst=random, data1=random, data2=mask.view(nl.uint32), op=nl.bitwise_and,
                       engine=nisa.vector_engine)
    narrow = nl.ndarray((rows, cols), dtype=nl.bfloat16, buffer=nl.sbuf)
    nisa.tensor_copy(dst=narrow, src=random.view(nl.float32), engine=nisa.scalar_engine)
    nisa.dma_copy(dst=dst, src=narrow)


# --- ozaki's exact levels ----------------------------------------------------------------------------------
def _levels(out, a_digits, b_digits, a_is_transposed, k_tiles):
    """out[l * (K blocks) + kb] (int32 [levels x K blocks, batch, M, N]) = the exact sum of level l's digit products
    over K block kb, for every output tile of this program's blocks of each batch entry."""

    def row(places, ms, n_first, n_stop):
        _levels_row(out, a_digits, b_digits, a_is_transposed, k_tiles, places, ms, n_first, n_stop)

    _each_block_row(out, a_digits, b_digits, a_is_transposed, row)


def _levels_row(out, a_digits, b_digits, a_is_transposed, k_tiles, places, ms, n_first, n_stop):
    """``_levels`` for one row of output blocks, block columns n_first..n_stop-1, of ms rows, at the ``places``
    (``_each_block_row``): the N blocks and the K blocks in dynamic loops (``_blocks``, ``_loop``; nothing carries
    between K blocks, each has its own words of out), partial ones static."""
    k, n = b_digits.shape[2], b_digits.shape[3]
    m = out.shape[2]
    levels = _level_pairs(a_digits.shape[0])
    k_blocks = out.shape[0] // len(levels)
    block_m, block_n = _block_shape(m, n)
    block_k = k_tiles * TILE_K
    # elements per K block: along K in A^T [K, M] or A [M, K] and in B, a word of out
    k_strides = ((a_digits.shape[3] if a_is_transposed else 1) * block_k, n * block_k, out.shape[1] * m * n)

    def k_block(at, ns, ks):
        a_tiles = _load_stationary(a_digits, at[0], ms, ks, a_is_transposed, nl.bfloat16, k_tiles, block_m)
        b_tiles = _load_moving(b_digits, at[1], ks, ns, nl.bfloat16, k_tiles, block_n)
        for index in range(len(levels)):
            _exact_level(out, index * k_blocks, at[2], a_tiles, b_tiles, levels[index], ms, ns, ks)

    def n_block(at, ns):
        def each(inner):
            k_block(inner, ns, block_k)

        if k // block_k:
            _loop(k // block_k, at, k_strides, each)
        if k % block_k:
            k_block(_shifted(at, k_strides, k // block_k), ns, k % block_k)

    _blocks(n_first * block_n, min(n_stop * block_n, n), block_n, places, (0, 1, 1), n_block)


def _exact_level(out, w, at, a_tiles, b_tiles, pairs, ms, ns, ks):
    """One level over one K block: PSUM accumulations of a few (pair, K tile) items, each exact in fp32, converted
    to int32 and summed exactly on GpSimd, then stored to word w of out from the place ``at``."""
    per_group = EXACT_TILES if pairs == ((0, 0),) else EXACT_TILES_LATER
    items = ()  # (word pair, K tile): at most per_group of them per PSUM accumulation
    for t in range(_tiles(ks, TILE_K)):
        for pair in pairs:
            items = items + ((pair, t),)
    for i in range(_tiles(ms, TILE_M)):
        mr = min(TILE_M, ms - i * TILE_M)
        for j in range(_tiles(ns, TILE_N)):
            nr = min(TILE_N, ns - j * TILE_N)
            total = nl.ndarray((TILE_M, TILE_N), dtype=nl.int32, buffer=nl.sbuf)
            for g in range(0, len(items), per_group):
                acc = nl.ndarray((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                for index in range(g, min(g + per_group, len(items))):
                    pair, t = items[index]
                    kr = min(TILE_K, ks - t * TILE_K)
                    nisa.nc_matmul(acc[0:mr, 0:nr], a_tiles[0:kr, pair[0], t, i * TILE_M:i * TILE_M + mr],
                                   b_tiles[0:kr, pair[1], t, j * TILE_N:j * TILE_N + nr], accumulate=(index > g))
                if g == 0:
                    nisa.tensor_copy(dst=total[0:mr, 0:nr], src=acc[0:mr, 0:nr], engine=nisa.vector_engine)
                else:
                    exact = nl.ndarray((TILE_M, TILE_N), dtype=nl.int32, buffer=nl.sbuf)
                    nisa.tensor_copy(dst=exact[0:mr, 0:nr], src=acc[0:mr, 0:nr], engine=nisa.scalar_engine)
                    nisa.tensor_tensor(dst=total[0:mr, 0:nr], data1=total[0:mr, 0:nr], data2=exact[0:mr, 0:nr],
                                       op=nl.add, engine=nisa.gpsimd_engine)
            nisa.dma_copy(dst=_hbm(out, w, i * TILE_M, j * TILE_N, mr, nr, at), src=total[0:mr, 0:nr])
