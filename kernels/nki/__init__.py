"""NKI kernels for the Tensor Engine, and the host side of calling them on torch tensors.

Import-gated: nothing outside this package imports ``nki``. ``toolchain`` picks the real NKI where installed, else
the CPU model of the NeuronCore (``model/``), on which the same kernels run in tests. On a Neuron device the
jitted kernels run there; CPU tensors run through ``nki.simulate`` (the CPU model, or the real simulator where
installed). ``cost`` models the time of a call on trn2.

- ``run(kernel, a, b, mode)``: one kernel on fp32 (or bf16) operands as they are: fast, native, dd and bf16x6
  (dd/bf16x6 split on chip), sr (a bf16 result; ``seed``).
- ``split_product`` and ``level_sums``: the engine work of the reference's dd/bf16x6 (``fused=``) and ozaki
  (``levels=``) hooks, which keep the reference's scaling, certificates and host-side combination.
"""

from __future__ import annotations

import functools
import os

import torch

from . import toolchain
from .model.core import LNC_VARIABLE  # the runtime's logical NeuronCore size (1 or 2 physical cores)

__all__ = [
    "KERNEL_SOURCES",
    "MODES",
    "TOOLCHAIN",
    "run",
    "call",
    "jitted",
    "lnc",
    "name",
    "rng_states",
    "table",
    "addressable",
    "split_product",
    "level_sums",
    "WORDS",
    "LNC_VARIABLE",
]

# The kernel sources (checked against the documented NKI 0.6 API by tests/kernels/test_nki_api.py).
KERNEL_SOURCES = ("matmul.py", "probes.py")
# Modes with an NKI kernel, and the operand dtypes ``run`` accepts for each.
MODES = {
    "fast": (torch.float32, torch.bfloat16),
    "native": (torch.float32,),
    "dd": (torch.float32,),
    "bf16x6": (torch.float32,),
    "sr": (torch.float32,),
}
WORDS = {"dd": 2, "bf16x6": 3}  # bf16 words per operand of the split modes
TOOLCHAIN = toolchain.NAME


def name(kernel: str, mode: str) -> str:
    """How explain() and the call counters name a kernel: ``nki.matmul[fast]``."""
    return f"nki.{kernel}[{mode}]"


def jitted(kernel: str, choice: str | None = None, module: str = "matmul"):
    """Kernel function ``kernel`` (matmul, bmm, matmul_split, ...) of kernel source ``module`` wrapped by the
    ``nki.jit`` of toolchain ``choice`` (``model``, ``nki``; default: the selected one). One wrapper per kernel and
    toolchain: on the model its ``last_run`` holds the counts of the latest call."""
    return _jitted(kernel, _choice(choice), module)


def _choice(choice: str | None) -> str:
    """``choice``, or the selected toolchain's name (``model``, ``nki``)."""
    return choice or ("model" if toolchain.nki.__name__.endswith(".model") else "nki")


@functools.cache
def _jitted(kernel: str, choice: str, module: str):
    return toolchain.select(choice)[0].jit(getattr(toolchain.kernels_on(choice, module), kernel))


def lnc(choice: str | None = None) -> int:
    """The LNC every launch uses: the runtime's, which a launch must match (a mismatch is a runtime error, nki.jit's
    docstring). On the model, the model's (``model.runtime_lnc``: its target's default unless
    NEURON_LOGICAL_NC_CONFIG); on the real toolchain NEURON_LOGICAL_NC_CONFIG, default 2, trn2's default ("On trn2,
    the default configuration is LNC2", SDK neuron-runtime/explore/device-memory.rst; NKI 0.6 supports no trn1)."""
    if _choice(choice) == "model":
        from . import model

        return model.runtime_lnc()
    return int(os.environ.get(LNC_VARIABLE, "2"))


def table(
    kernel: str,
    a_shape: tuple[int, ...],
    b_shape: tuple[int, ...],
    a_is_transposed: bool,
    programs: int,
    words: int = 1,
) -> torch.Tensor:
    """The ``table`` argument of matmul kernel ``kernel`` (int32 [programs, rows, matmul.ROW]: which unit of the
    output, and which pieces the split kernels split, each iteration of a program's loops takes) for operands of
    ``a_shape`` (A [..., M, K], or A^T [..., K, M]) and ``b_shape`` ([..., K, N]), leading word dimensions included;
    ``words``: the split kernels' words."""
    from . import matmul

    batch = b_shape[-3] if kernel.startswith("bmm") else 1
    m = a_shape[-1] if a_is_transposed else a_shape[-2]
    rows = matmul.table_rows(kernel, batch, m, b_shape[-2], b_shape[-1], a_is_transposed, programs, words)
    return torch.tensor(rows, dtype=torch.int32).reshape(programs, -1, matmul.ROW)


def _call_matmul(
    kernel: str, choice: str | None, a: torch.Tensor, b: torch.Tensor, a_is_transposed: bool, *args, words: int = 1
):
    """``call`` of matmul kernel ``kernel`` on (a, b, a_is_transposed, *args) and its ``table`` for the runtime's
    LNC (``words``: the split kernels')."""
    plan = table(kernel, tuple(a.shape), tuple(b.shape), a_is_transposed, lnc(choice), words).to(a.device)
    return call(kernel, a.device, choice, a, b, a_is_transposed, *args, plan)


def call(kernel: str, device: torch.device, choice: str | None, *args, module: str = "matmul"):
    """Launch jitted ``kernel`` of ``module`` at the runtime's LNC: on the device, or through nki.simulate for CPU
    tensors."""
    fn = jitted(kernel, choice, module)
    launch = fn[lnc(choice)]
    if device.type == "cpu":  # the simulator takes the launch: nki.simulate(kernel[lnc]) (the jit stub's example)
        launch = (toolchain.select(choice)[0] if choice else toolchain.nki).simulate(launch)
    return launch(*args)


def _stationary(a: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """A as the kernel takes it: its transposed view when that is contiguous (the stationary layout, no transpose
    on chip), else A contiguous (transposed on chip)."""
    if a.mT.is_contiguous():
        return _dense(a.mT), True
    return _dense(a), False


def _dense(t: torch.Tensor) -> torch.Tensor:
    """``t`` contiguous with the canonical strides (torch leaves any stride on a dimension of size 1; the kernels'
    dynamic accesses count elements along the last dimension, whose stride must be 1)."""
    t = t.contiguous()
    strides, step = [], 1
    for size in reversed(t.shape):
        strides.append(step)
        step *= size
    return t.as_strided(t.shape, tuple(reversed(strides)))


def _check(kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str, dtypes) -> int:
    rank = {"matmul": 2, "bmm": 3}.get(kernel)
    if rank is None:
        raise ValueError(f"no NKI kernel {kernel!r}; kernels: matmul, bmm")
    if a.dim() != rank or b.dim() != rank or a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(
            f"{name(kernel, mode)} needs {'[M, K] x [K, N]' if rank == 2 else '[B, M, K] x [B, K, N]'}"
            f", got {tuple(a.shape)} x {tuple(b.shape)}"
        )
    for x, role in ((a, "A"), (b, "B")):
        if x.dtype not in dtypes:
            raise TypeError(
                f"{name(kernel, mode)} takes {' or '.join(map(str, dtypes))} operands, got {role} in {x.dtype}"
            )
    return rank


def run(
    kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str, choice: str | None = None, seed: int = 0
) -> torch.Tensor:
    """``kernel`` (matmul: [M, K] x [K, N]; bmm: [B, M, K] x [B, K, N]) in ``mode`` on the NKI kernel, on the
    operands as they are (no scaling): an fp32 result on a's device (bf16 for sr, rounded stochastically from
    ``seed``). Empty operands (nothing for the Tensor Engine to do) give torch's exact zeros. ``choice`` picks
    the toolchain (``model``, ``nki``; default: the selected one)."""
    if mode not in MODES:
        raise ValueError(f"no NKI kernel for mode {mode!r}; NKI modes: {', '.join(MODES)}")
    _check(kernel, a, b, mode, MODES[mode])
    if a.numel() == 0 or b.numel() == 0:
        c = torch.matmul(a.float(), b.float())
        return c.to(torch.bfloat16) if mode == "sr" else c
    a_arg, transposed = _stationary(a)
    b = _dense(b)
    if mode in WORDS:
        return _call_matmul(f"{kernel}_split", choice, a_arg, b, transposed, WORDS[mode], words=WORDS[mode])
    if mode == "sr":
        if kernel != "matmul":
            raise ValueError("nki sr: the stochastic-rounding kernel is matmul only")
        return _call_matmul("matmul_sr", choice, a_arg, b, transposed, rng_states(seed, lnc(choice)).to(a.device))
    return _call_matmul(kernel, choice, a_arg, b, transposed, mode == "fast")


def _check_fits(label: str, m: int, k: int, n: int, slices: int, what: str) -> None:
    """Refuse, before launching, a call whose K blocks cannot fit in SBUF (the kernel asserts the same)."""
    from . import matmul, model

    budget = model.target().sbuf_partition_bytes
    if matmul.k_tiles(m, k, n, slices, 2, 0, False, budget, lnc()) < 1:
        raise ValueError(
            f"{label}: {what} ({2 * slices} bytes per element of A and B) do not fit one K tile of a unit "
            f"in the {budget} bytes of SBUF per partition of {model.target().name}; use fewer"
        )


def addressable(mode: str, float64: bool, bmkn: tuple[int, int, int, int], slices: int | None = None) -> bool:
    """Whether every tensor mode's kernel addresses with a dynamic offset holds at most 2**31 - 1 elements (the
    offsets are 32-bit registers): A, B and the output, the split kernels' words, ozaki's digit slices and its
    int32 level sums per K block (as many blocks as SBUF allows, so that output grows with K)."""
    from .. import reference
    from . import matmul, model

    b, m, k, n = bmkn
    words = WORDS.get(mode, 1)
    sizes = [words * b * m * k, words * b * k * n, b * m * n]
    if mode == "ozaki":
        slices = slices or reference.ozaki_default_slices(torch.float64 if float64 else torch.float32)
        budget = model.core.TARGETS["trn2"].sbuf_partition_bytes
        blocks = len(matmul._k_blocks(k, matmul.level_k_tiles(m, k, n, slices, budget, 2), 1))
        sizes = [slices * b * m * k, slices * b * k * n, slices * blocks * b * m * n]
    return max(sizes) <= matmul.INT32_MAX


def rng_states(seed: int, programs: int) -> torch.Tensor:
    """The GpSimd generator states ``matmul_sr`` sets from ``seed`` (taken modulo 2**32): int32 [programs, 128,
    6], the bits of an XORWOW state (6 uint32, nki.isa.rand_set_state) per lane of each program's core, drawn
    from torch's generator seeded with ``seed``. The first word is odd, so no state has its five xorshift words all
    zero (such a state draws only zeros). int32, which torch supports everywhere (its uint32 has limited support);
    the kernel views the bits as uint32 on chip."""
    generator = torch.Generator().manual_seed(seed & 0xFFFFFFFF)
    states = torch.randint(0, 2**32, (programs, 128, 6), generator=generator, dtype=torch.int64)
    states[..., 0] |= 1
    return torch.where(states >= 2**31, states - 2**32, states).to(torch.int32)


def split_product(a_scaled: torch.Tensor, b_scaled: torch.Tensor, words: int) -> torch.Tensor:
    """The reference's ``fused`` hook for dd (2 words) and bf16x6 (3): the fp32 engine result of the word
    products of the scaled operands. float32 data is split on chip; float64 data (no fp64 on chip) is split
    here exactly as the reference splits it and the words go to the same product phase."""
    kernel = "bmm" if a_scaled.dim() == 3 else "matmul"
    if a_scaled.dtype is torch.float32:
        a_arg, transposed = _stationary(a_scaled)
        return _call_matmul(f"{kernel}_split", None, a_arg, _dense(b_scaled), transposed, words, words=words)
    from .. import reference

    a_words = _dense(torch.stack(reference._common._words(a_scaled, words)))
    b_words = _dense(torch.stack(reference._common._words(b_scaled, words)))
    return _call_matmul(f"{kernel}_words", None, a_words, b_words, False)


def level_sums(a_digits: list[torch.Tensor], b_digits: list[torch.Tensor]) -> dict[int, torch.Tensor]:
    """The reference's ``levels`` hook for ozaki: each level's exact sum of digit products (float64), from the
    kernel's exact int32 sums per K block, added here exactly (int64)."""
    slices = len(a_digits)
    a, b = _dense(torch.stack(a_digits)), _dense(torch.stack(b_digits))
    kernel = "bmm_levels" if a.dim() == 4 else "matmul_levels"
    _check_fits(f"nki.{kernel}[ozaki]", a.shape[-2], a.shape[-1], b.shape[-1], slices, f"{slices} digit slices")
    sums = _call_matmul(kernel, None, a, b, False)
    exact = sums.to(torch.int64).sum(1)
    return {slices + 1 - index: exact[index].double() for index in range(slices)}
