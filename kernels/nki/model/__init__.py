"""A CPU model of the NeuronCore: a stand-in for the part of ``nki``, ``nki.language`` and ``nki.isa`` that our
kernels use, which runs a kernel eagerly with NumPy and ml_dtypes and enforces the documented hardware rules.

``jit(kernel)`` returns a ``Kernel``; ``kernel[lnc](...)`` with NumPy arrays or torch tensors launches it on the
target named by NEURON_PLATFORM_TARGET_OVERRIDE (default trn2): programs 0..lnc-1, each on a fresh ``Core`` (one
physical core), and returns the output in the inputs' kind; the LNC must be the runtime's (``runtime_lnc()``: trn2
runs LNC=2 unless NEURON_LOGICAL_NC_CONFIG says 1), a plain call is LNC=1. ``kernel.last_run`` is that ``Launch``:
its cores' instruction counts per engine, DMA bytes, SBUF and PSUM peaks (the cost model's input). Inside
``counting_only()`` kernels check every rule and count, but skip the arithmetic. ``simulate(kernel[lnc])(...)``
is the simulator's form (the jit stub's example); running a kernel on the model is simulating it.

The programs of a launch run in threads of their own, one at a time in a fixed order (``core.Schedule``): a
program runs until it ends or waits at a ``nisa.core_barrier``. Where the programs of the hardware could race,
the model refuses instead: reading shared_hbm elements another program wrote is an unwritten read (strict mode)
until a barrier both passed, and the programs must run the same dynamic control flow (the same ``nl.fori_loop``
ranges and barriers, in order: ``Core.control_flow``; nki/get-started/about/lnc.rst). The kernel's Python is
checked for what the compiler rejects: ``raise`` and, in kernel sources, imports and classes (at jit time,
``_check_module``), and instances of classes other than ``nl.NKIObject`` subclasses, model types and builtins in
the kernel module's frames while the kernel runs (``_objects_checked``). What the model leaves out (scheduling,
engine overlap, instructions our kernels do not use) is in docs/trainium.md.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
import sys
import threading
from collections.abc import Iterator

import ml_dtypes
import numpy as np
import torch

from . import core, isa, language
from .core import Core, Launch, ModelError, Tensor

__all__ = [
    "jit",
    "simulate",
    "Kernel",
    "Launcher",
    "Simulation",
    "language",
    "isa",
    "Core",
    "Launch",
    "ModelError",
    "Tensor",
    "counting_only",
    "shape_only",
    "targeting",
    "target",
    "runtime_lnc",
    "STRICT_VARIABLE",
]

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
    launches it with LNC=1, ``kernel[lnc](...)`` with ``lnc`` (``kernel[lnc]`` is a ``Launcher``); the launch must
    match the runtime's LNC (``runtime_lnc()``), as on the device."""

    __name__: str  # the kernel function's, as functools.update_wrapper copies it

    def __init__(self, fn) -> None:
        self.fn = fn
        self.last_run: Launch | None = None
        functools.update_wrapper(self, fn)

    def __getitem__(self, lnc: int) -> Launcher:
        if lnc not in (1, 2):
            raise ModelError(f"{self.__name__}[{lnc}]: a logical NeuronCore has 1 or 2 physical cores")
        return Launcher(self, lnc)

    def __call__(self, *args):
        return self._launch(1, *args)

    def _launch(self, lnc: int, *args):
        """Programs 0..lnc-1, each on its own physical core (in threads, one at a time: ``_run_programs``); they
        must run the same dynamic control flow, and the outputs (shared_hbm, the same tensors in every program)
        must be fully written by the programs together."""
        chip = target()
        runtime = core.runtime_lnc(chip)
        if lnc != runtime:
            how = (
                f"{core.LNC_VARIABLE}={os.environ[core.LNC_VARIABLE]}"
                if core.LNC_VARIABLE in os.environ
                else f"the default of {chip.name}"
            )
            raise ModelError(
                f"{self.__name__} launched with LNC={lnc} on a runtime of LNC={runtime} ({how}): "
                f"the launch's LNC must match the runtime's (a mismatch is a runtime error); launch "
                f"it as {self.__name__}[{runtime}](...)"
            )
        launch = Launch(chip, lnc, strict=os.environ.get(STRICT_VARIABLE, "1") != "0", arithmetic=not _COUNTING[-1])
        self.last_run = launch
        torch_io = any(isinstance(a, torch.Tensor) for a in args)
        with core.running(launch.cores[0]):
            inputs = tuple(_input(a, i) for i, a in enumerate(args))
        outs = _run_programs(self, launch, inputs)
        _check_control_flow(self.__name__, launch)
        return _output(outs[0], torch_io, launch, outs[1:])


class Launcher:
    """``kernel[lnc]``: the kernel launched at LNC ``lnc`` when called (what ``nki.simulate`` takes)."""

    def __init__(self, kernel: Kernel, lnc: int) -> None:
        self.kernel, self.lnc = kernel, lnc

    def __call__(self, *args):
        return self.kernel._launch(self.lnc, *args)

    def __repr__(self) -> str:
        return f"{self.kernel.__name__}[{self.lnc}]"


class Simulation:
    """``nki.simulate(kernel[lnc])``: calling it launches the kernel on the model at that LNC."""

    def __init__(self, launcher: Launcher) -> None:
        self.launcher = launcher
        self.kernel = launcher.kernel

    def __call__(self, *args):
        return self.launcher(*args)

    def __getitem__(self, lnc):
        name = self.kernel.__name__
        raise ModelError(
            f"nki.simulate({name})[{lnc}]: the simulator takes the launch, not the other way round: "
            f"write nki.simulate({name}[{lnc}])(...) (the nki.jit stub's example, "
            "nki/api/nki/__init__.py: nki.simulate(kernel[2])(a, b); NKI_FACTS.md section 14)"
        )


def simulate(kernel) -> Simulation:
    """``nki.simulate(kernel[lnc])``: in the model, running a kernel is simulating it. Takes a launch
    (``kernel[lnc]``, at its LNC), a ``Kernel`` (LNC 1) or a plain kernel function (jitted, LNC 1); subscripting
    the result is refused (write ``nki.simulate(kernel[lnc])``, not ``nki.simulate(kernel)[lnc]``)."""
    if isinstance(kernel, Simulation):
        return kernel
    if isinstance(kernel, Launcher):
        return Simulation(kernel)
    return Simulation((kernel if isinstance(kernel, Kernel) else jit(kernel))[1])


def _run_programs(kernel: Kernel, launch: Launch, inputs: tuple) -> list:
    """Each program's return value. LNC=1 runs in the caller's thread; more programs run in threads of their own,
    one at a time (``core.Schedule``). A program's error stops the others (they unwind at their next barrier or
    turn) and is raised here; programs that stop at a barrier the others never reach are reported by
    ``_check_control_flow``."""
    outs: list = [None] * launch.lnc
    errors: list[BaseException | None] = [None] * launch.lnc
    schedule = launch.schedule

    def program(p: int) -> None:
        run = launch.cores[p]
        try:
            schedule.wait_turn(p)
            with core.running(run):
                with _objects_checked(kernel):
                    out = kernel.fn(*inputs)
                isa.check_fences(out)
                run.check_memory()
            outs[p] = out
        except core.Stopped:
            return
        except BaseException as e:  # noqa: BLE001  (re-raised in the caller's thread)
            errors[p] = e
            schedule.stop()
            return
        schedule.finish(p)

    if launch.lnc == 1:
        program(0)
    else:
        threads = [
            threading.Thread(target=program, args=(p,), name=f"{kernel.__name__} program {p}", daemon=True)
            for p in range(launch.lnc)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    error = next((e for e in errors if e is not None), None)
    if error is not None:
        raise error
    if schedule.diverged:
        _check_control_flow(kernel.__name__, launch)
        raise ModelError(f"{kernel.__name__}: the programs stopped at a nisa.core_barrier that not all of them reach")
    return outs


def _check_control_flow(name: str, launch: Launch) -> None:
    """Rule 1: the programs of a multi-core launch run the same dynamic control flow: the same nl.fori_loop
    ranges and core_barriers, in the same order (static code may differ). The error names the first difference
    between program 0 and another program."""
    flows = [c.control_flow for c in launch.cores]
    for p in range(1, launch.lnc):
        for i in range(max(len(flows[0]), len(flows[p]))):
            mine = flows[0][i] if i < len(flows[0]) else None
            theirs = flows[p][i] if i < len(flows[p]) else None
            if mine == theirs:
                continue
            either = mine or theirs
            assert either is not None  # they differ: not both None
            kind = either[0]
            raise ModelError(
                f"{name}: the programs of an LNC={launch.lnc} launch run different dynamic control flow: "
                f"{_describe(flows[0], i, 0, kind)}, {_describe(flows[p], i, p, kind)}. Control flow that differs "
                "between the cores of a multi-core launch is undefined behaviour (nki/get-started/about/lnc.rst); "
                "every program must run the same nl.fori_loop ranges and reach the same nisa.core_barrier calls in "
                "the same order: split the work with program_id-dependent static offsets or per-program data (for "
                "example counter start values in SBUF), not with different loop bounds"
            )


def _describe(flow: list[tuple], i: int, program: int, kind: str) -> str:
    if i >= len(flow):
        what = "loop" if kind == "fori_loop" else "barrier"
        return f"program {program} has no such {what} (its control flow ends after {len(flow)} steps)"
    step = flow[i]
    number = sum(1 for e in flow[: i + 1] if e[0] == step[0])
    if step[0] == "fori_loop":
        return f"program {program} runs loop #{number} with range({step[1]}, {step[2]}, {step[3]})"
    return f"program {program} reaches nisa.core_barrier #{number} (cores {step[1]})"


def jit(fn=None, **kwargs):
    """``nki.jit``: compile options are accepted and ignored (the model has no compiler). The kernel's module is
    checked for what the compiler rejects (``_check_module``)."""
    if fn is None:
        return jit
    _check_module(inspect.getsourcefile(fn))
    return Kernel(fn)


@functools.cache
def _check_module(path: str | None) -> None:
    """What the NKI compiler rejects in the source of a kernel's module, refused with its file and line:

    - ``raise`` anywhere: only ``assert`` is documented for checks inside NKI kernels (NKI_FACTS.md section 13);
    - in a kernel source (a module that takes NKI from the toolchain: ``from .toolchain import ...``), any class
      whose bases are not exactly ``nl.NKIObject`` and any import other than ``from .toolchain import ...`` and
      ``from __future__ import ...``: NKI traces only instances of ``nl.NKIObject`` subclasses, plain tuples and
      builtins (nki/get-started/nki-language-guide.rst, class support), so typing.NamedTuple, dataclasses and
      collections cannot be used. Other modules (tests' planted kernels, calibration ports) are checked for
      ``raise`` only here; the classes their kernels use are checked while they run (``_objects_checked``)."""
    if path is None or not os.path.exists(path):
        return
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise):
            found.append(
                (
                    node.lineno,
                    "`raise` in a kernel module: NKI kernels check conditions only with `assert` "
                    "(write `assert condition, message`)",
                )
            )
    kernel_source = any(isinstance(n, ast.ImportFrom) and n.level == 1 and n.module == "toolchain" for n in tree.body)
    if kernel_source:
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _toolchain_import(node):
                found.append(
                    (
                        node.lineno,
                        f"`{ast.unparse(node)}` in a kernel source: a kernel module takes NKI "
                        "from the toolchain and imports nothing else (NKI traces only builtins, "
                        "plain tuples and classes that inherit nl.NKIObject: nki/get-started/"
                        "nki-language-guide.rst, class support; a NamedTuple, dataclass or "
                        "collections type fails to compile); write `from .toolchain import nki, "
                        "nl, nisa` only, and plain functions, tuples or nl.NKIObject classes",
                    )
                )
            elif isinstance(node, ast.ClassDef) and not _nki_object_class(node):
                bases = ", ".join(ast.unparse(b) for b in [*node.bases, *node.keywords])
                found.append(
                    (
                        node.lineno,
                        f"`class {node.name}({bases})` in a kernel source: NKI supports only "
                        "classes that inherit nl.NKIObject and nothing else (nki/get-started/"
                        "nki-language-guide.rst, class support; the simulator runs any class but "
                        "the compiler rejects it, nki/guides/nki_simulator.rst); write `class "
                        f"{node.name}(nl.NKIObject):` or use a plain tuple",
                    )
                )
    if found:
        line, message = min(found)
        raise ModelError(f"{path}:{line}: {message}")


def _toolchain_import(node: ast.Import | ast.ImportFrom) -> bool:
    return isinstance(node, ast.ImportFrom) and (
        (node.level == 1 and node.module == "toolchain") or (node.level == 0 and node.module == "__future__")
    )


def _nki_object_class(node: ast.ClassDef) -> bool:
    if node.keywords or len(node.bases) != 1:
        return False
    base = node.bases[0]
    return (isinstance(base, ast.Name) and base.id == "NKIObject") or (
        isinstance(base, ast.Attribute)
        and base.attr == "NKIObject"
        and isinstance(base.value, ast.Name)
        and base.value.id == "nl"
    )


# --- classes in the kernel's frames while it runs ---------------------------------------------------------------
_ALLOWED = (
    core.Tensor,
    core.VirtualRegister,
    core.Buffer,
    language.Op,
    language.NKIObject,
    np.dtype,
    type(language.tile_size),
    Kernel,
    Launcher,
)


@contextlib.contextmanager
def _objects_checked(kernel: Kernel) -> Iterator[None]:
    """While the kernel's Python runs (its first trace; dynamic-loop replays run no kernel Python): every local
    variable, argument and return value of a frame of the kernel's module (its code's file) holds a builtin
    (tuples, lists and dicts element-wise), a model type (tensors, registers, buffers, operators, dtypes; the enum
    members are strings) or an instance of an nl.NKIObject subclass; anything else is refused, naming the class,
    the variable and the kernel (nki/get-started/nki-language-guide.rst: only classes that inherit nl.NKIObject).

    A ``sys.settrace`` tracer for this thread: frames of other files run untraced (the global tracer returns None
    for them) and kernel frames report no lines, only calls and returns. Where the thread already has a tracer (a
    debugger, coverage), this check is skipped rather than chained (coverage's C tracer re-installs itself when
    called from Python, so chaining is not simple); ``_check_module``'s static check stays."""
    code = getattr(kernel.fn, "__code__", None)
    if code is None or sys.gettrace() is not None:
        yield
        return
    path, name = code.co_filename, kernel.__name__
    unwinding: set[int] = set()

    def local(frame, event, arg):
        if event == "exception":
            unwinding.add(id(frame))
        elif event == "return":
            if id(frame) in unwinding:  # an error passes through (or was handled here): leave it be
                unwinding.discard(id(frame))
            else:
                _check_frame(frame, name, "returns", arg)
        return local

    def trace(frame, event, arg):
        if frame.f_code.co_filename != path:
            return None
        frame.f_trace_lines = False
        _check_frame(frame, name, "is called", None)
        return local

    sys.settrace(trace)
    core._CURRENT.checker = trace  # model code suspends it (core.untraced)
    try:
        yield
    finally:
        core._CURRENT.checker = None
        sys.settrace(None)


def _check_frame(frame, kernel: str, when: str, returned) -> None:
    items = list(frame.f_locals.items())
    if returned is not None:
        items.append(("its return value", returned))
    for variable, value in items:
        kind = _foreign(value, 0)
        if kind is not None:
            held = "" if kind is type(value) else f" (inside a {type(value).__name__})"
            shown = variable if variable == "its return value" else f"variable {variable!r}"
            raise ModelError(
                f"{kernel}: {shown} of {frame.f_code.co_name} ({os.path.basename(frame.f_code.co_filename)}:"
                f"{frame.f_lineno}, when it {when}) holds an instance of {kind.__module__}.{kind.__qualname__}"
                f"{held}: NKI traces only instances of classes that inherit nl.NKIObject, plain tuples and builtins "
                "(nki/get-started/nki-language-guide.rst, class support; the simulator runs any Python but the "
                f"compiler rejects it, nki/guides/nki_simulator.rst); make {kind.__qualname__} inherit "
                "nl.NKIObject and nothing else, or use a tuple"
            )


def _foreign(value, depth: int) -> type | None:
    """The class of ``value`` (or of an element of it) that kernel code may not hold, None when all is allowed."""
    kind = type(value)
    if kind.__module__ == "builtins":
        if depth < 8:
            if kind in (tuple, list, set, frozenset):
                for v in value:
                    found = _foreign(v, depth + 1)
                    if found is not None:
                        return found
            elif kind is dict:
                for k, v in value.items():
                    found = _foreign(k, depth + 1) or _foreign(v, depth + 1)
                    if found is not None:
                        return found
        return None
    return None if isinstance(value, _ALLOWED) else kind


_TORCH_UNSIGNED = tuple(getattr(torch, name) for name in ("uint16", "uint32", "uint64") if hasattr(torch, name))


def _input(arg, index: int):
    """Arrays become HBM tensors (sharing memory, as the simulator updates inputs in place); others pass as
    constants. Torch tensors of unsigned dtypes other than uint8 are refused (torch supports them only partly)."""
    if isinstance(arg, torch.Tensor):
        if arg.dtype in _TORCH_UNSIGNED:
            raise ModelError(
                f"kernel input {index}: a torch.{str(arg.dtype).removeprefix('torch.')} tensor: torch's "
                "unsigned dtypes other than uint8 have limited support (its documentation), so a kernel "
                "input is uint8 or signed; pass the bits as int32 (or int16) and reinterpret them on "
                "chip with .view(nl.uint32)"
            )
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
        raise ModelError(
            f"kernel output {out.name!r} is in {out.buffer.name}; outputs must be allocated with buffer=nl.shared_hbm"
        )
    if any(not isinstance(o, Tensor) or o.alloc is not out.alloc or o.shape != out.shape for o in others):
        raise ModelError(
            f"kernel output {out.name!r}: the programs of a launch return different tensors; every "
            "program returns the same shared_hbm outputs"
        )
    strict, arithmetic = launch.cores[0].strict, launch.cores[0].arithmetic
    written = functools.reduce(np.logical_or, [o.written for o in others], out.written)  # each program's view
    if strict and not written.all():
        raise ModelError(
            f"kernel output {out.name!r} {out.shape}: {int((~written).sum())} elements were "
            f"never written (by any of the {launch.lnc} programs)"
        )
    if not arithmetic:
        return out.data
    data = np.array(out.data)
    if not torch_io:
        return data
    if data.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(data.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(data)
