"""NKI kernels for the Tensor Engine, and the host side of calling them on torch tensors.

Import-gated: nothing outside this package imports ``nki``. ``toolchain`` picks the real NKI where installed, else
the CPU model of the NeuronCore (``model/``), on which the same kernels run in tests. ``run`` hands torch tensors
to a kernel: on a Neuron device the jitted kernel runs there; CPU tensors run through ``nki.simulate`` (the CPU
model, or the real simulator where installed). ``cost`` models the time of a call on trn2.
"""

from __future__ import annotations

import functools

import torch

from . import toolchain

__all__ = ["KERNEL_SOURCES", "MODES", "TOOLCHAIN", "run", "jitted", "name"]

# The kernel sources (checked against the documented NKI 0.6 API by tests/test_nki_api.py).
KERNEL_SOURCES = ("matmul.py",)
# Modes with an NKI kernel, and the operand dtypes each accepts in HBM.
MODES = {"fast": (torch.float32, torch.bfloat16), "native": (torch.float32,)}
TOOLCHAIN = toolchain.NAME


def name(kernel: str, mode: str) -> str:
    """How explain() and the call counters name a kernel: ``nki.matmul[fast]``."""
    return f"nki.{kernel}[{mode}]"


def jitted(kernel: str, choice: str | None = None):
    """Kernel function ``kernel`` (matmul, bmm) wrapped by the ``nki.jit`` of toolchain ``choice`` (``model``,
    ``nki``; default: the selected one). One wrapper per kernel and toolchain: on the model its ``last_run``
    holds the counts of the latest call."""
    return _jitted(kernel, choice or ("model" if toolchain.nki.__name__.endswith(".model") else "nki"))


@functools.cache
def _jitted(kernel: str, choice: str):
    return toolchain.select(choice)[0].jit(getattr(toolchain.kernels_on(choice), kernel))


def run(kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str, choice: str | None = None) -> torch.Tensor:
    """``kernel`` (matmul: [M, K] x [K, N]; bmm: [B, M, K] x [B, K, N]) in ``mode`` on the NKI kernel: an fp32
    result on a's device. A whose transpose is contiguous goes in as that view (the stationary layout); other A
    is transposed on chip. Empty operands (nothing for the Tensor Engine to do) give torch's exact zeros.
    ``choice`` picks the toolchain (``model``, ``nki``; default: the selected one)."""
    if mode not in MODES:
        raise ValueError(f"no NKI kernel for mode {mode!r}; NKI modes: {', '.join(MODES)}")
    rank = {"matmul": 2, "bmm": 3}.get(kernel)
    if rank is None:
        raise ValueError(f"no NKI kernel {kernel!r}; kernels: matmul, bmm")
    if a.dim() != rank or b.dim() != rank or a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"{name(kernel, mode)} needs {'[M, K] x [K, N]' if rank == 2 else '[B, M, K] x [B, K, N]'}"
                         f", got {tuple(a.shape)} x {tuple(b.shape)}")
    for x, role in ((a, "A"), (b, "B")):
        if x.dtype not in MODES[mode]:
            raise TypeError(f"{name(kernel, mode)} takes {' or '.join(map(str, MODES[mode]))} operands, got "
                            f"{role} in {x.dtype}")
    if a.numel() == 0 or b.numel() == 0:
        return torch.matmul(a.float(), b.float())
    transposed = a.mT.is_contiguous()
    a_arg = a.mT if transposed else a.contiguous()
    fn = jitted(kernel, choice)
    if a.device.type == "cpu":
        fn = (toolchain.select(choice)[0] if choice else toolchain.nki).simulate(fn)
    return fn(a_arg, b.contiguous(), transposed, mode == "fast")
