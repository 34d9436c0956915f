"""A CPU model of the NeuronCore: a stand-in for the part of ``nki``, ``nki.language`` and ``nki.isa`` that our
kernels use, which runs a kernel eagerly with NumPy and ml_dtypes and enforces the documented hardware rules.

``jit(kernel)`` returns a ``Kernel``; calling it with NumPy arrays or torch tensors runs it on a fresh ``Core``
of the target named by NEURON_PLATFORM_TARGET_OVERRIDE (default trn2) and returns the output in the inputs'
kind. ``kernel.last_run`` is that core: instruction counts per engine, DMA bytes, SBUF and PSUM peaks (the
cost model's input). Inside ``counting_only()`` kernels check every rule and count, but skip the arithmetic.
What the model leaves out (scheduling, engine overlap, instructions our kernels do not use) is in
docs/trainium.md.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
from collections.abc import Iterator

import ml_dtypes
import numpy as np
import torch

from . import core, isa, language
from .core import Core, ModelError, Tensor

__all__ = ["jit", "simulate", "Kernel", "language", "isa", "Core", "ModelError", "Tensor", "counting_only",
           "shape_only", "targeting", "target", "STRICT_VARIABLE"]

VERSION = "cpu-model"
STRICT_VARIABLE = "TRN_BACKEND_NKI_MODEL_STRICT"
_COUNTING: list[bool] = [False]
_TARGETS: list[str] = []


@contextlib.contextmanager
def targeting(name: str) -> Iterator[None]:
    """Run kernels on NeuronCore generation ``name`` (trn1, trn2) instead of NEURON_PLATFORM_TARGET_OVERRIDE's."""
    if name not in core.TARGETS:
        raise ModelError(f"the CPU model knows targets {', '.join(core.TARGETS)}, not {name!r}")
    _TARGETS.append(name)
    try:
        yield
    finally:
        _TARGETS.pop()


def target() -> core.Target:
    """The target kernels run on: ``targeting``'s, else NEURON_PLATFORM_TARGET_OVERRIDE's."""
    return core.TARGETS[_TARGETS[-1]] if _TARGETS else core.target_from_environment()


@contextlib.contextmanager
def counting_only() -> Iterator[None]:
    """Run kernels without arithmetic: every rule is checked and every instruction counted (cost modelling)."""
    _COUNTING.append(True)
    try:
        yield
    finally:
        _COUNTING.pop()


def shape_only(shape: tuple[int, ...], dtype) -> np.ndarray:
    """An input with a shape, a dtype and the strides of a contiguous array, but no memory (never read: for
    kernels run under ``counting_only``, where DMA costs still depend on the strides)."""
    return core.no_memory(tuple(shape), np.dtype(dtype))


class Kernel:
    """A kernel function bound to the model: call it like the ``nki.jit`` kernel it stands for."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.last_run: Core | None = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, lnc: int) -> Kernel:
        if lnc != 1:
            raise ModelError(f"kernel[{lnc}]: the CPU model runs one NeuronCore (LNC=1)")
        return self

    def __call__(self, *args):
        run = Core(target(), strict=os.environ.get(STRICT_VARIABLE, "1") != "0", arithmetic=not _COUNTING[-1])
        self.last_run = run
        torch_io = any(isinstance(a, torch.Tensor) for a in args)
        with core.running(run):
            inputs = tuple(_input(a, i) for i, a in enumerate(args))
            out = self.fn(*inputs)
            run.check_memory()
            return _output(out, torch_io, run)


def jit(fn=None, **kwargs):
    """``nki.jit``: compile options are accepted and ignored (the model has no compiler). The kernel's module is
    checked for what the compiler rejects (``raise``)."""
    if fn is None:
        return jit
    _check_module(inspect.getsourcefile(fn))
    return Kernel(fn)


@functools.cache
def _check_module(path: str | None) -> None:
    """Only ``assert`` is documented for checks inside NKI kernels (NKI_FACTS.md section 13): a ``raise`` anywhere
    in a kernel's module (whose helpers the kernel calls) is refused with its file and line."""
    if path is None or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Raise)]
    if found:
        raise ModelError(f"{path}:{found[0]}: `raise` in a kernel module: NKI kernels check conditions only with "
                         "`assert` (write `assert condition, message`)")


def simulate(kernel):
    """``nki.simulate(kernel)``: in the model, running a kernel is simulating it."""
    return kernel if isinstance(kernel, Kernel) else Kernel(kernel)


def _input(arg, index: int):
    """Arrays become HBM tensors (sharing memory, as the simulator updates inputs in place); others pass as
    constants."""
    if isinstance(arg, torch.Tensor):
        arg = _numpy(arg)
    if isinstance(arg, np.ndarray):
        return Tensor.allocate(arg.shape, arg.dtype, core.SHARED_HBM, f"input {index}", data=arg)
    return arg


def _numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach()
    if t.device.type != "cpu":
        raise ModelError(f"the CPU model runs kernels on CPU tensors, got one on {t.device}")
    if t.dtype is torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def _output(out, torch_io: bool, run: Core):
    if isinstance(out, tuple):
        return tuple(_output(o, torch_io, run) for o in out)
    if not isinstance(out, Tensor):
        raise ModelError(f"a kernel returns the tensors it allocated in nl.shared_hbm, got {type(out).__name__}")
    if out.buffer is not core.SHARED_HBM:
        raise ModelError(f"kernel output {out.name!r} is in {out.buffer.name}; outputs must be allocated with "
                         "buffer=nl.shared_hbm")
    if run.strict and not out.written.all():
        raise ModelError(f"kernel output {out.name!r} {out.shape}: {int((~out.written).sum())} elements were "
                         "never written")
    if not run.arithmetic:
        return out.data
    data = np.array(out.data)
    if not torch_io:
        return data
    if data.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(data.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(data)
