"""The kernel layer (installed as ``trn_backend.kernels``): the only place where contraction arithmetic happens.

``matmul(a, b, mode)`` multiplies [M, K] x [K, N] and ``bmm(a, b, mode)`` [B, M, K] x [B, K, N], both on torch
tensors, under a precision mode named in ``trn_backend.precision``. The torch reference implementation of every
mode (``reference/``) runs on any torch device. Routing (``implementation``): on a Neuron device with the NKI
toolchain installed, float32 steps of a mode with an NKI kernel (``nki/``, import-gated) and at least
``config.nki_min_flops`` FLOPs (default: the cost model's break-even with the kernel launch) run the NKI kernel;
smaller ones run torch on the device, and so do steps with a tensor too large for the kernels' 32-bit dynamic
offsets (``nki.addressable``). Under the default rule a kernel also pays its compile: a Neuron device
compiles a kernel on its first call per shape, dtype and mode (eager TorchNeuron), so a step whose signature has
not run in this process goes to the kernel only if its modelled run time is at least its modelled compile time,
else it runs torch on the device and the kernel takes over from the signature's next call (``first_calls``).
The CPU default is unchanged (``config.nki = "model"`` sends CPU steps to the kernels on the CPU model of the
NeuronCore). On NKI every split mode is its reference with the engine work
run by the kernel: the same power-of-two scaling and underflow certificate on the host, then fast's one Tensor
Engine pass, dd's and bf16x6's fused split-and-multiply (``nki.split_product``), ozaki's exact level sums
(``nki.level_sums``, combined on the host); ``native`` is the kernel alone. float64 data runs the split modes
too (scaled on the host; no fp64 on chip); ``native`` on NKI is float32 only.

``mul(a, b, mode)`` is the elementwise product of broadcastable operands, for contraction steps with nothing to
contract (Hadamard, outer, broadcast and batched-outer products): always torch.mul, never NKI (see ``mul``).

Every call is counted in ``CALLS`` so tests can prove that no contraction bypasses this layer; calls that ran an
NKI kernel are also counted under ``("nki.matmul", mode)`` / ``("nki.bmm", mode)``.
"""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from . import config as _config
from . import dtypes as _dtypes
from . import reference

__all__ = [
    "matmul",
    "bmm",
    "mul",
    "CALLS",
    "count_calls",
    "first_calls",
    "reference",
    "implementation",
    "NKI_MODES",
    "NEURON_DEVICE_TYPES",
]

NKI_MODES = ("fast", "native", "dd", "bf16x6", "ozaki", "sr")  # the modes with an NKI kernel
# torch-neuronx's device types (native TorchNeuron, PyTorch/XLA); trn_backend._device.NEURON_TYPES is this tuple
NEURON_DEVICE_TYPES = ("neuron", "xla")

# (kernel name, mode name) -> number of calls since import
CALLS: collections.Counter[tuple[str, str]] = collections.Counter()
# The compile state of the routing rule, per process: signatures (kernel, mode, dtype, (B, M, K, N)) whose first
# call has been made (it ran torch, or compiled and ran the kernel). A signature in here routes by FLOPs alone.
_CALLED: set[tuple[str, str, torch.dtype, tuple[int, int, int, int]]] = set()


@contextlib.contextmanager
def count_calls() -> Iterator[collections.Counter[tuple[str, str]]]:
    """Count kernel calls made inside the block: ``with count_calls() as c: ...; c[("bmm", "native")]``."""
    before = CALLS.copy()
    delta: collections.Counter[tuple[str, str]] = collections.Counter()
    try:
        yield delta
    finally:
        delta.update(CALLS - before)


def _implementation(mode: str):
    try:
        return reference.MODES[mode]
    except KeyError:
        raise ValueError(f"unknown kernel mode {mode!r}; known: {', '.join(reference.MODES)}") from None


def implementation(
    kernel: str,
    mode: str,
    dtype: torch.dtype,
    device: torch.device,
    bmkn: tuple[int, int, int, int],
    params: dict[str, Any] | None = None,
    compiled: bool | None = None,
    preview: bool = False,
) -> str:
    """What runs a ``kernel`` step (matmul, bmm, mul) of sizes (B, M, K, N): ``nki.matmul[fast]`` or
    ``torch.matmul``; ``mul`` is always ``torch.mul``. ``compiled``: whether the step's signature has made its
    first call (None: as this process has it; True: the routing once it has). ``preview``: route a Neuron device
    as one with the NKI toolchain does, whether or not this machine has the toolchain (explain()'s preview)."""
    if kernel == "mul":
        return "torch.mul"
    return _nki_route(kernel, mode, dtype, device, bmkn, params or {}, compiled, preview) or f"torch.{kernel}"


def _nki_route(
    kernel: str,
    mode: str,
    dtype: torch.dtype,
    device: torch.device,
    bmkn: tuple[int, int, int, int],
    params: dict[str, Any],
    compiled: bool | None = None,
    preview: bool = False,
) -> str | None:
    """The NKI kernel's name when the routing rule sends this step to it (see the module docstring)."""
    setting = _config.config
    dtypes = (torch.float32,) if mode == "native" else (torch.float32, torch.float64)
    if setting.nki == "off" or mode not in NKI_MODES or dtype not in dtypes or 0 in bmkn:
        return None
    if params and not (mode == "ozaki" and set(params) == {"slices"}):  # sr's generator: the reference
        return None
    if device.type in NEURON_DEVICE_TYPES:
        from .nki import toolchain

        if not (preview or toolchain.REAL):
            return None
    elif not (setting.nki == "model" and device.type == "cpu"):
        return None
    from . import nki
    from .nki import cost

    if not nki.addressable(mode, dtype is torch.float64, bmkn, params.get("slices")):
        return None  # a tensor too large for the kernels' 32-bit dynamic offsets: the reference runs it
    b, m, k, n = bmkn
    if setting.nki_min_flops is not None:  # the user's threshold replaces the cost model's rule
        return nki.name(kernel, mode) if 2 * b * m * k * n >= setting.nki_min_flops else None
    if 2 * b * m * k * n < cost.default_min_flops(mode):
        return None
    if not (compiled if compiled is not None else (kernel, mode, dtype, bmkn) in _CALLED):
        estimate = cost.modelled(
            kernel, cost.runs_as(mode), bmkn, float64=dtype is torch.float64, slices=params.get("slices")
        )
        if estimate.seconds < estimate.compile_seconds:
            return None
    return nki.name(kernel, mode)


@contextlib.contextmanager
def first_calls() -> Iterator[None]:
    """Forget which signatures have made their first call, inside the block (the routing rule's compile state
    is per process; tests and benchmarks use this to see a first call again)."""
    saved = set(_CALLED)
    _CALLED.clear()
    try:
        yield
    finally:
        _CALLED.clear()
        _CALLED.update(saved)


def _run(
    kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str, params: dict[str, Any], check_specials: bool = True
) -> torch.Tensor:
    CALLS[kernel, mode] += 1
    # only a Neuron device, or the CPU model, can route to NKI: the common call (CPU, GPU) stops at is_cpu or
    # is_cuda, without building a torch.device (this runs once per step of a network)
    # (config's slot read directly: its property is a Python call on every step)
    if (
        _config.config._nki == "model" if a.is_cpu else not a.is_cuda and a.device.type in NEURON_DEVICE_TYPES
    ) and a.dtype is b.dtype:
        bmkn = (a.shape[0] if kernel == "bmm" else 1, a.shape[-2], a.shape[-1], b.shape[-1])
        routed = _nki_route(kernel, mode, a.dtype, a.device, bmkn, params)
        _CALLED.add((kernel, mode, a.dtype, bmkn))
        if routed is not None:
            return _run_nki(kernel, a, b, mode, params)
    if mode == "native" and not params:  # with params: native's own TypeError
        # floating-point native is ``reference.native``'s torch.matmul, which on two 2-D (3-D, one batch size)
        # operands of one dtype is exactly ATen's mm (bmm): called directly, without matmul's dispatch; complex
        # products then get native's textbook inf/nan entries (one check of the product)
        if a.is_floating_point():
            if kernel == "bmm":
                return _blas_layout(a).bmm(_blas_layout(b))
            if a.shape[0] == 1 == b.shape[1]:
                # a dot product: torch's mm runs [1, K] x [K, 1] through its GEMM (25x slower than BLAS's dot at
                # K = 5e6 on 2 cores, gemv 1.8x); views of one non-trivial dimension, whatever the strides. Any
                # summation order is within native's bound
                return torch.dot(a.view(-1), b.view(-1)).view(1, 1)
            return a.mm(b)
        if a.is_complex() and a.dtype is b.dtype:
            if kernel == "bmm":
                a, b = _blas_layout(a), _blas_layout(b)
                c = a.bmm(b)
            else:
                c = a.mm(b)
            return reference.textbook_specials(c, a, b) if check_specials else c
    return _implementation(mode)(a, b, **params)


def _blas_layout(t: torch.Tensor) -> torch.Tensor:
    """A bmm operand whose matrices a GEMM can read as they are (unit stride along rows or columns): ``t``
    itself, or else one contiguous copy. torch's CPU bmm would copy such an operand one matrix at a time, inside
    its loop over the batch: for a [B, M, K] view of a [M, K, B] tensor (batch stride 1) the copy up front makes
    the step 2-3x faster at 128 x 128 x 128 on a 2-core CPU, and 1.2x slower at 128 x 256 x 256 (32 MB, beyond
    the cache), where both copies run at memory speed (benchmarks/bench_layouts.py)."""
    stride, shape = t.stride(), t.shape
    if stride[2] == 1 or stride[1] == 1 or shape[2] == 1 or shape[1] == 1:
        return t
    return t.contiguous()


def _run_nki(kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str, params: dict[str, Any]) -> torch.Tensor:
    """A step the routing rule sends to an NKI kernel (see the module docstring)."""
    from . import nki

    CALLS[f"nki.{kernel}", mode] += 1
    if mode == "native":
        return nki.run(kernel, a, b, mode)
    if mode in ("dd", "bf16x6"):
        return reference.MODES[mode](a, b, fused=nki.split_product)
    if mode == "ozaki":
        return reference.ozaki(a, b, levels=nki.level_sums, **params)
    # fast, and sr to a float32/float64 output (where sr is fast: no rounding to randomise)
    return reference.fast(a, b, engine=_nki_fast_pass)


def _nki_fast_pass(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One Tensor Engine pass of the fast mode on the NKI kernel: fp32 tensors holding bf16 values (exact in
    bf16, so the kernel loads them as bf16)."""
    from . import nki

    return nki.run("bmm" if x.dim() == 3 else "matmul", x.to(torch.bfloat16), y.to(torch.bfloat16), "fast")


def matmul(
    a: torch.Tensor, b: torch.Tensor, mode: str = "native", *, check_specials: bool = True, **params: Any
) -> torch.Tensor:
    """[M, K] x [K, N] -> [M, N] under ``mode``; ``params`` are the mode's own settings.

    ``check_specials=False`` leaves a complex ``native`` product's inf and nan entries as the GEMM makes them
    (torch's: nan+nanj) instead of the textbook formula's, saving the check that finds them (a sum of the product
    and its read). Both forms have the same non-finite entries and agree on every finite one, so a caller that
    finds its finished result finite has lost nothing, and one that does not reruns with the check (the runner's
    deferred check, ``contraction.runner``). Every other mode and dtype ignores it."""
    sa, sb = a.shape, b.shape
    if len(sa) != 2 or len(sb) != 2 or sa[1] != sb[0]:
        raise ValueError(f"kernels.matmul needs [M, K] x [K, N], got {tuple(sa)} x {tuple(sb)}")
    if mode not in reference.MODES:
        mode = reference.renamed(mode, "kernels.matmul")  # a former name, or the error naming the known modes
    return _run("matmul", a, b, mode, params, check_specials)


def bmm(
    a: torch.Tensor, b: torch.Tensor, mode: str = "native", *, check_specials: bool = True, **params: Any
) -> torch.Tensor:
    """[B, M, K] x [B, K, N] -> [B, M, N] under ``mode``; ``check_specials`` as in ``matmul``."""
    sa, sb = a.shape, b.shape
    if len(sa) != 3 or len(sb) != 3 or sa[0] != sb[0] or sa[2] != sb[1]:
        raise ValueError(f"kernels.bmm needs [B, M, K] x [B, K, N], got {tuple(sa)} x {tuple(sb)}")
    if mode not in reference.MODES:
        mode = reference.renamed(mode, "kernels.bmm")  # a former name, or the error naming the known modes
    return _run("bmm", a, b, mode, params, check_specials)


def mul(
    a: torch.Tensor, b: torch.Tensor, mode: str = "native", *, check_specials: bool = True, **params: Any
) -> torch.Tensor:
    """The elementwise product of broadcastable operands of one dtype under ``mode``: a contraction step with
    nothing to contract (K = 1), the planner laying the operands out so the product comes out in output order.

    Each entry is one product, one rounding to the output dtype: native arithmetic is within every mode's bound
    at K = 1 (the bounds include the output rounding), so every mode runs torch.mul, except ``sr`` on bf16/fp16
    outputs, which keeps its promise of unbiased rounding: the product computed in fp32 (exact for two bf16 or
    fp16 values) and rounded stochastically as ``reference.sr`` does (its ``generator`` seeds it); other mode
    parameters (ozaki's ``slices``) change nothing for a single product. Integers multiply modulo 2**bits and
    bool operands are a logical and, as native's exact products; complex inf/nan follow the textbook formula,
    as NumPy's elementwise multiply (torch's complex mul computes it so). The modes other than native need
    floating-point operands, as in ``matmul``. Never routed to NKI: there is no engine work to offload.
    ``check_specials`` is taken as ``matmul`` takes it and changes nothing here: torch.mul's complex products
    already have the textbook formula's inf and nan entries."""
    if a.dtype is not b.dtype:
        raise TypeError(f"kernels.mul needs operands of one dtype, got {a.dtype} and {b.dtype}")
    if any(x != y and x != 1 and y != 1 for x, y in zip(reversed(a.shape), reversed(b.shape), strict=False)):
        raise ValueError(f"kernels.mul needs broadcastable operands, got {tuple(a.shape)} x {tuple(b.shape)}")
    _implementation(mode)
    if mode != "native":
        reference._common._operands(a, b, mode)  # the emulated modes' TypeError for integer and bool operands
    CALLS["mul", mode] += 1
    dtype = a.dtype
    if dtype.is_floating_point or dtype.is_complex:
        if mode == "sr" and dtype in reference._common._NARROW_BITS:
            product = torch.mul(a.float(), b.float())  # exact: at most 2 * 11 significand bits
            return reference._sr._stochastic_round(product, dtype, params.get("generator"))
        return torch.mul(a, b)
    if dtype is torch.bool:
        return torch.logical_and(a, b)
    return _dtypes.restore(torch.mul(_dtypes.compute(a), _dtypes.compute(b)), dtype)
