"""The engine result of a bf16 word split, which fast, sr, dd and bf16x6 are (and ozaki on bf16 operands): the words
of each operand block laid out so that every level of word products (i + j equal) is one fp32 GEMM, the levels
accumulated smallest first, bf16x6's K-chunks batched into one GEMM per level.

Layout: a block's n words sit side by side along K, A's largest first ([w_1 | ... | w_n]) and B's smallest first
([v_n; ...; v_1]), so the pairs of level L (i + j == L) are A's first L - 1 words against B's last L - 1: one
GEMM of (L - 1) K. Within a level the bounds allow any order of the fp32 additions (kernels/bounds.py,
``accumulation``); the levels are added smallest first, so each product takes part in at most as many roundings
as the bound counts for it.
"""

from __future__ import annotations

import torch

from ..bounds import BF16X6_GROUP
from ._common import (
    Tiling,
    _batched,
    _dense,
    _engine_sum,
    _ldexp,
    _mac,
    _round_to,
    _Scaled,
    _single_word,
    _two_sum,
    _words,
)


def _split_fp32(
    a: torch.Tensor,
    b: torch.Tensor,
    words: int,
    mode: str,
    chunk: int | None = None,
    engine=torch.matmul,
    fused=None,
    finish=None,
) -> torch.Tensor:
    """The engine result of a ``words``-word bf16 split of both operands (bf16 operands: one word), computed on
    power-of-two scaled rows of A and columns of B (or on A and B themselves where that is the same, exactly),
    scaled back and passed through ``finish`` (default: rounded once to the operand dtype), tile by tile.
    ``chunk``: bf16x6's chunked accumulation. ``fused(a_scaled, b_scaled, words)``, where given, computes the
    engine result from the whole scaled operands in one device program (the NKI kernels: split on chip, every
    product in PSUM); ``engine``, where not torch.matmul, runs each level of the whole operands as one pass
    (fast's NKI route)."""
    dtype = a.dtype
    if words > 1 and _single_word(a, mode):
        words = 1
    a3, b3, restore = _batched(a, b)
    hooked = fused is not None or engine is not torch.matmul
    if not hooked and finish is None:
        a3, b3, restore = _dense(a3, b3, restore)
    batch, m, k = a3.shape
    plan = Tiling(batch, m, k, b3.shape[-1], align=chunk or 1)
    scaled = _Scaled(a3, b3, plan, words=0 if hooked or finish is not None else words)
    if hooked:
        scaled.certify(mode)
        a_scaled, b_scaled = scaled.whole()
        if fused is not None:
            total = fused(restore(a_scaled), restore(b_scaled), words)
        else:
            total = _engine_sum(_words(restore(a_scaled), words), _words(restore(b_scaled), words), engine)
        finish = finish or (lambda y: _round_to(y, dtype))
        return restore(finish(_ldexp(total.double().reshape(a3.shape[0], a3.shape[1], -1), scaled.e + scaled.f)))
    tiles = list(plan.tiles())
    out = None if len(tiles) == 1 else a3.new_empty(a3.shape[0], a3.shape[1], b3.shape[2])
    for bs, ms, ns in tiles:
        scaled.certify(mode, (bs, ms, ns))
        total = (
            _plain(scaled, bs, ms, ns, words)
            if chunk is None or scaled.k <= chunk
            else _chunked(scaled, bs, ms, ns, words, chunk)
        )
        tile = scaled.finish(total, bs, ms, ns, dtype, finish)
        if out is None:
            out = tile
        else:
            out[bs, ms, ns] = tile
    return restore(out)


def _word_blocks(scaled: _Scaled, bs, ms, ns, ks, words: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The words of one A block [b, m, k] and one B block [b, k, n] in float32: A's as [b, m, words k], largest
    first along K; B's as [b, words k, n], smallest first."""
    x, y = scaled.block_a(bs, ms, ks), scaled.block_b(bs, ks, ns)
    k = x.shape[-1]
    a_words = torch.empty(*x.shape[:-1], words * k, dtype=torch.float32, device=x.device)
    b_words = torch.empty(y.shape[0], words * k, y.shape[-1], dtype=torch.float32, device=y.device)
    scaled.split_into(x, [a_words[..., t * k : (t + 1) * k] for t in range(words)], owned=scaled.owns_a)
    scaled.split_into(y, [b_words[:, (words - 1 - t) * k : (words - t) * k] for t in range(words)], owned=scaled.owns_b)
    return a_words, b_words


def _levels(
    acc: torch.Tensor | None, a_words: torch.Tensor, b_words: torch.Tensor, words: int, k: int, level: int
) -> torch.Tensor:
    """acc plus one level's word products (A's first level - 1 words against B's last level - 1), one GEMM."""
    return _mac(acc, a_words[..., : (level - 1) * k], b_words[:, (words + 1 - level) * k :])


def _plain(scaled: _Scaled, bs, ms, ns, words: int) -> torch.Tensor:
    """One output tile of the engine sum of w_i v_j over i + j <= n + 1 in fp32. One K-block: a single
    accumulation, levels smallest first. Several: each level accumulated over all of K in its own accumulator,
    K-block after K-block, then the levels added smallest first."""
    depth = scaled.plan.depth
    if len(depth) == 1:
        a_words, b_words = _word_blocks(scaled, bs, ms, ns, depth[0], words)
        k = a_words.shape[-1] // words
        total = None
        for level in range(words + 1, 1, -1):
            total = _levels(total, a_words, b_words, words, k, level)
        assert total is not None  # words >= 1: level 2 at least ran
        return total
    levels: dict[int, torch.Tensor] = {}
    for ks in depth:
        a_words, b_words = _word_blocks(scaled, bs, ms, ns, ks, words)
        k = a_words.shape[-1] // words
        for level in range(words + 1, 1, -1):
            levels[level] = _levels(levels.get(level), a_words, b_words, words, k, level)
        del a_words, b_words  # before the next block's are made
    total = levels[words + 1]
    for level in range(words, 1, -1):
        total += levels[level]
    return total


def _chunk_words(scaled: _Scaled, bs, ms, ns, ks, words: int, chunk: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The words of one A block and one B block cut into K-chunks of ``chunk`` (zero-padded: zero words add
    nothing), as [b c, m, words chunk] and [b c, words chunk, n] for c chunks: each chunk laid out as
    _word_blocks lays out a block, the chunks a batch dimension."""
    x, y = scaled.block_a(bs, ms, ks), scaled.block_b(bs, ks, ns)
    batch, m, k = x.shape
    n, count = y.shape[-1], -(-k // chunk)
    if k % chunk:
        x = torch.nn.functional.pad(x, (0, count * chunk - k))
        y = torch.nn.functional.pad(y, (0, 0, 0, count * chunk - k))
    x = x.view(batch, m, count, chunk).transpose(1, 2)  # [b, c, m, chunk]
    y = y.view(batch, count, chunk, n)
    a_words = torch.empty(batch, count, m, words * chunk, dtype=torch.float32, device=x.device)
    b_words = torch.empty(batch, count, words * chunk, n, dtype=torch.float32, device=y.device)
    padded = k % chunk != 0  # padding made copies
    scaled.split_into(
        x, [a_words[..., t * chunk : (t + 1) * chunk] for t in range(words)], owned=scaled.owns_a or padded
    )
    scaled.split_into(
        y,
        [b_words[:, :, (words - 1 - t) * chunk : (words - t) * chunk] for t in range(words)],
        owned=scaled.owns_b or padded,
    )
    return a_words.view(batch * count, m, words * chunk), b_words.view(batch * count, words * chunk, n)


class _Sum2Chunks:
    """bf16x6's combination of chunk sums: ``group`` consecutive chunk sums added in fp32, the group sums combined
    by Sum2 (TwoSum into a (hi, lo) pair) in K order; the count carries from one batch of chunks to the next."""

    def __init__(self, group: int) -> None:
        self.group, self.count = group, 0
        self.hi: torch.Tensor | None = None  # the Sum2 pair: both None before the first group sum
        self.lo: torch.Tensor | None = None
        self.partial: torch.Tensor | None = None  # the sum of the open group's chunks

    def add(self, sums: torch.Tensor) -> None:
        """The next chunk sums, [b, c, m, n] for c chunks in K order."""
        count = sums.shape[1]
        if self.count % self.group == 0 and count % self.group == 0:  # whole groups: their sums at once
            grouped = sums.unflatten(1, (count // self.group, self.group))
            partial = grouped[:, :, 0]
            for i in range(1, self.group):
                partial.add_(grouped[:, :, i])
            for g in range(partial.shape[1]):
                self._sum2(partial[:, g])
            self.count += count
            return
        for c in range(count):
            part = sums[:, c]
            if self.count % self.group == 0:
                self.partial = part
            else:
                assert self.partial is not None  # set at the group's first chunk
                self.partial = self.partial.add_(part)
            self.count += 1
            if self.count % self.group == 0:
                self._sum2(self.partial)

    def _sum2(self, part: torch.Tensor) -> None:
        if self.hi is None:
            self.hi, self.lo = part, torch.zeros_like(part)
        else:
            assert self.lo is not None  # set with hi
            self.hi, err = _two_sum(self.hi, part)
            self.lo.add_(err)

    def result(self) -> torch.Tensor:
        if self.count % self.group:
            assert self.partial is not None  # the open group has a chunk
            self._sum2(self.partial)
        assert self.hi is not None and self.lo is not None  # K > 0: some group sum went in
        return self.hi + self.lo


def _chunked(scaled: _Scaled, bs, ms, ns, words: int, chunk: int) -> torch.Tensor:
    """One output tile of bf16x6's accumulation: each K-chunk of ``chunk`` one accumulation (levels smallest
    first), combined by _Sum2Chunks. K-blocks are multiples of ``chunk`` (the plan's ``align``), so the chunks,
    groups and Sum2 order are those of an unblocked pass; each K-block runs in pieces of as many chunks as keep
    their sums within the plan's block budget."""
    plan = scaled.plan
    tile = (bs.stop - bs.start) * (ms.stop - ms.start) * (ns.stop - ns.start)
    piece = chunk * max(1, plan.budget // tile)
    state = _Sum2Chunks(BF16X6_GROUP)
    for ks in plan.depth:
        for start in range(ks.start, ks.stop, piece):
            a_words, b_words = _chunk_words(scaled, bs, ms, ns, slice(start, min(ks.stop, start + piece)), words, chunk)
            sums = None
            for level in range(words + 1, 1, -1):
                sums = _levels(sums, a_words, b_words, words, chunk, level)
            del a_words, b_words  # before the next piece's are made
            assert sums is not None  # words >= 1: level 2 at least ran
            state.add(sums.view(bs.stop - bs.start, -1, *sums.shape[1:]))
    return state.result()
