"""A CPU model of the NeuronCore: a stand-in for the part of ``nki``, ``nki.language`` and ``nki.isa`` that our
kernels use, which runs a kernel eagerly with NumPy and ml_dtypes and enforces the documented hardware rules.

``jit(kernel)`` returns a ``Kernel``; ``kernel[lnc](...)`` with NumPy arrays or torch tensors launches it on the
target named by NEURON_PLATFORM_TARGET_OVERRIDE (default trn2): programs 0..lnc-1, each on a fresh ``Core`` (one
physical core), and returns the output in the inputs' kind; the LNC must be the runtime's (``runtime_lnc()``: trn2
runs LNC=2 unless NEURON_LOGICAL_NC_CONFIG says 1), a plain call is LNC=1. ``kernel.last_run`` is that ``Launch``:
its cores' instruction counts per engine, DMA bytes, SBUF and PSUM peaks (the cost model's input). Inside
``counting_only()`` kernels check every rule and count, but skip the arithmetic. The programs of a launch run one
after the other (no races between them are modelled). What the model leaves out (scheduling, engine overlap,
instructions our kernels do not use) is in docs/trainium.md.
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
from .core import Core, Launch, ModelError, Tensor

__all__ = ["jit", "simulate", "Kernel", "language", "isa", "Core", "Launch", "ModelError", "Tensor", "counting_only",
           "shape_only", "targeting", "target", "runtime_lnc", "STRICT_VARIABLE"]

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


def runtime_lnc() -> int:
    """The LNC a launch on ``target()`` must use (``core.runtime_lnc``)."""
    return core.runtime_lnc(target())


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
    """A kernel function bound to the model: call it like the ``nki.jit`` kernel it stands for. ``kernel(...)``
    launches it with LNC=1, ``kernel[lnc](...)`` with ``lnc``; the launch must match the runtime's LNC
    (``runtime_lnc()``), as on the device."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.last_run: Launch | None = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, lnc: int):
        if lnc not in (1, 2):
            raise ModelError(f"{self.__name__}[{lnc}]: a logical NeuronCore has 1 or 2 physical cores")
        return functools.partial(self._launch, lnc)

    def __call__(self, *args):
        return self._launch(1, *args)

    def _launch(self, lnc: int, *args):
        """Programs 0..lnc-1 one after the other, each on its own physical core; the outputs (shared_hbm, the
        same tensors in every program) must be fully written by the programs together."""
        chip = target()
        runtime = core.runtime_lnc(chip)
        if lnc != runtime:
            how = f"{core.LNC_VARIABLE}={os.environ[core.LNC_VARIABLE]}" if core.LNC_VARIABLE in os.environ \
                else f"the default of {chip.name}"
            raise ModelError(f"{self.__name__} launched with LNC={lnc} on a runtime of LNC={runtime} ({how}): "
                             f"the launch's LNC must match the runtime's (a mismatch is a runtime error); launch "
                             f"it as {self.__name__}[{runtime}](...)")
        launch = Launch(chip, lnc, strict=os.environ.get(STRICT_VARIABLE, "1") != "0", arithmetic=not _COUNTING[-1])
        self.last_run = launch
        torch_io = any(isinstance(a, torch.Tensor) for a in args)
        outs = []
        with core.running(launch.cores[0]):
            inputs = tuple(_input(a, i) for i, a in enumerate(args))
        for program in launch.cores:
            with core.running(program):
                outs.append(self.fn(*inputs))
                program.check_memory()
        return _output(outs[0], torch_io, launch, outs[1:])


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


def _output(out, torch_io: bool, launch: Launch, others: list):
    """Program 0's outputs in the inputs' kind, after checking that every program returned the same shared_hbm
    tensors and that together they wrote every element."""
    if isinstance(out, tuple):
        return tuple(_output(o, torch_io, launch, [other[i] for other in others]) for i, o in enumerate(out))
    if not isinstance(out, Tensor):
        raise ModelError(f"a kernel returns the tensors it allocated in nl.shared_hbm, got {type(out).__name__}")
    if out.buffer is not core.SHARED_HBM:
        raise ModelError(f"kernel output {out.name!r} is in {out.buffer.name}; outputs must be allocated with "
                         "buffer=nl.shared_hbm")
    if any(not isinstance(o, Tensor) or o.alloc is not out.alloc or o.shape != out.shape for o in others):
        raise ModelError(f"kernel output {out.name!r}: the programs of a launch return different tensors; every "
                         "program returns the same shared_hbm outputs")
    strict, arithmetic = launch.cores[0].strict, launch.cores[0].arithmetic
    if strict and not out.written.all():
        raise ModelError(f"kernel output {out.name!r} {out.shape}: {int((~out.written).sum())} elements were "
                         f"never written (by any of the {launch.lnc} programs)")
    if not arithmetic:
        return out.data
    data = np.array(out.data)
    if not torch_io:
        return data
    if data.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(data.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(data)
