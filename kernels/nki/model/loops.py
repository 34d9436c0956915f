"""Dynamic (on-device) loops in the CPU model: ``nl.fori_loop``, virtual registers and ``NkiTensor.ap``.

A Python loop in a kernel is unrolled while NKI specializes it (NKI_FACTS.md sections 1 and 13): a 4096^3 matmul
call becomes tens of thousands of instructions. ``nl.fori_loop(lower, upper, body_fun, step=1)`` instead becomes
one hardware loop whose body is traced once; the body gets the induction value as a ``VirtualRegister`` and can
only hand it to the hardware, as a dynamic offset: ``tensor.ap(pattern, scalar_offset=i, indirect_dim=d)``
(SDK nki/api/nki/language/__init__.py: fori_loop, NkiTensor.ap; nki/api/nki/isa/__init__.py: VirtualRegister,
register_*; nki/deep-dives/nki-aps.rst and nki-dynamic-loops.rst, aws-neuron-sdk @81ce03ae).

How the model runs a loop, as the compiler does: the first iteration that runs calls ``body_fun`` (Python runs
once) and records every instruction it issues; each later iteration replays that recording with the register's
new value. Python state in the body therefore cannot differ between iterations (it does not on the device), tiles
allocated in the body are allocated once and reused (nki-dynamic-loops.rst) and live per iteration, from their
first to their last use in it (so they start each iteration unwritten: assumed, the compiler's liveness within a
loop body), and every iteration still executes and counts in ``Core.events``. ``Core.program_instructions``
counts the program instead: a recorded instruction once, however often it replays. A loop whose body never runs
adds nothing to it (the model learns a body by running it; the compiler would still emit it). Register
instructions and the loop instruction itself are not engine instructions in ``events`` (the cost model has no
cost for them) and are not counted either.

How the matmul kernels (kernels/nki/matmul.py) use them: the whole batch entries, rows of output blocks, N blocks
and K blocks run in nested ``nl.fori_loop``s, and a partial edge block is a static call of the same body (an int
offset lets the same code run there). Every HBM access is one ``.ap`` on the whole tensor whose dynamic offset,
in elements, comes from an int32 counter tile in SBUF: NKI documents no register arithmetic, so each loop keeps a
counter, advances it after each iteration with exact int32 GpSimd adds (``nisa.tensor_tensor``) and
``nisa.register_load``s it into the register an access passes as ``scalar_offset``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from . import core
from .core import ModelError, Tensor

__all__ = ["VirtualRegister", "RegisterUseError", "fori_loop", "access_pattern", "IndirectView", "recorded",
           "allocated_in_body"]

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1  # registers are 32-bit (SDK isa register_alloc: "64x 32-bit registers")


class RegisterUseError(ModelError, TypeError):
    """A kernel used a VirtualRegister's value while it is being traced (a TypeError under NKI's tracer, SDK isa
    VirtualRegister note)."""


class VirtualRegister:
    """``nisa.VirtualRegister``: an engine register whose value exists only when the kernel runs. The model knows
    the value (for execution) but refuses every use of it at trace time: the NKI 0.6 stubs document no arithmetic,
    comparison or conversion of registers, only loop bounds, ``register_*`` and ``.ap(scalar_offset=...)``."""

    __slots__ = ("_value", "__weakref__")
    __hash__ = object.__hash__  # identity: comparisons are refused below

    def __init__(self, value: int | None = None) -> None:
        self._value = value  # None: never written, or loaded from memory under counting_only (not computed)

    def __repr__(self) -> str:
        return ("VirtualRegister (a run-time value; address memory with it through "
                "tensor.ap(pattern, scalar_offset=reg, indirect_dim=d))")


def _refusal(what: str):
    def refuse(self, *args):
        raise RegisterUseError(
            f"{what} with a VirtualRegister: its value exists only on the device while the kernel runs, so the "
            "traced kernel cannot compute with it, compare it, convert it or branch on it (NKI documents no "
            "register arithmetic). Use it as a dynamic offset, tensor.ap(pattern, scalar_offset=reg, "
            "indirect_dim=d), or as a loop bound, and carry other loop state in SBUF (exact int32 nisa.tensor_tensor "
            "adds on GpSimd, then nisa.register_load)")
    return refuse


_CONVERSIONS = {"__bool__": "a Python if/while/and/or (bool())", "__int__": "int()",
                "__index__": "use as a Python int (range(), indexing, slicing)", "__float__": "float()",
                "__complex__": "complex()", "__round__": "round()", "__trunc__": "math.trunc()",
                "__floor__": "math.floor()", "__ceil__": "math.ceil()"}
_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "divmod", "pow", "lshift", "rshift", "and", "xor",
              "or", "matmul")
for _name, _what in _CONVERSIONS.items():
    setattr(VirtualRegister, _name, _refusal(_what))
for _op in _OPERATORS:
    for _dunder in (f"__{_op}__", f"__r{_op}__"):
        setattr(VirtualRegister, _dunder, _refusal(f"arithmetic ({_dunder})"))
for _dunder in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(VirtualRegister, _dunder, _refusal(f"arithmetic ({_dunder})"))
for _dunder in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(VirtualRegister, _dunder, _refusal(f"a comparison ({_dunder})"))


def compile_time_int(x: object, what: str) -> int:
    """``x`` as a Python int, refusing registers, bools and anything else (``what`` names the argument)."""
    if isinstance(x, VirtualRegister):
        raise ModelError(f"{what} must be a compile-time int, not a VirtualRegister")
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise ModelError(f"{what} must be a compile-time int, got {type(x).__name__} {x!r}")
    return int(x)


def register_int(x: object, what: str) -> int:
    """A compile-time int that fits a 32-bit register."""
    value = compile_time_int(x, what)
    if not INT32_MIN <= value <= INT32_MAX:
        raise ModelError(f"{what} = {value} does not fit a 32-bit register (int32)")
    return value


# --- NkiTensor.ap ------------------------------------------------------------------------------------------------
def access_pattern(t: Tensor, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim: int = 0,
                   dtype=None) -> Tensor:
    """``t.ap(...)``: the view of t's allocation whose element [j0, j1, ...] is storage element
    start + sum(j_d * stride_d) for ``pattern`` [[stride_d, count_d], ...] (in elements of ``dtype``), where
    start = t's storage offset + ``offset`` + ``scalar_offset`` * (the stride of t's dimension ``indirect_dim``)
    (SDK language stub NkiTensor.ap; nki-aps.rst). A VirtualRegister or a [1, 1] int32 SBUF tile as
    ``scalar_offset`` is read when an instruction uses the view, not when it is built; an access outside the
    allocation is an error (dma_copy's default oob_mode=error)."""
    where = f"{t.name}.ap"
    if isinstance(t, IndirectView):
        raise ModelError(f"{where}: this view already has a dynamic offset (an indirect view cannot be re-indirected: "
                         "SDK NkiTensor.is_indirect); build the whole access with one .ap() on the tensor")
    if vector_offset is not None:
        raise ModelError(f"{where}: vector_offset (per-partition indirect access) is not modelled by the CPU model")
    entries = _pattern(pattern, where)
    storage = t.alloc.data
    dtype = t.dtype if dtype is None else np.dtype(dtype)
    if dtype.itemsize != storage.dtype.itemsize:
        raise ModelError(f"{where}: the CPU model reinterprets storage only between dtypes of one width, not "
                         f"{storage.dtype} -> {dtype}")
    if not storage.flags.c_contiguous:
        raise ModelError(f"{where}: {t.alloc.name} is a non-contiguous input; the CPU model addresses .ap() "
                         "patterns in contiguous storage only")
    start = (t.data.__array_interface__["data"][0] - storage.__array_interface__["data"][0]) // storage.itemsize
    if offset is not None:
        start += compile_time_int(offset, f"{where}: offset")
    indirect_dim = compile_time_int(indirect_dim, f"{where}: indirect_dim")
    if not 0 <= indirect_dim < t.ndim:
        raise ModelError(f"{where}: indirect_dim {indirect_dim} is not a dimension of shape {t.shape}")
    stride = t.data.strides[indirect_dim] // t.dtype.itemsize
    if scalar_offset is None or isinstance(scalar_offset, (int, np.integer)):
        start += compile_time_int(scalar_offset or 0, f"{where}: scalar_offset") * stride
        return Tensor(t.alloc, *_view(t.alloc, dtype, start, entries, where))
    if isinstance(scalar_offset, Tensor):
        _check_offset_tile(scalar_offset, where)
    elif not isinstance(scalar_offset, VirtualRegister):
        raise ModelError(f"{where}: scalar_offset must be an int, a VirtualRegister or a [1, 1] int32 SBUF tile, "
                         f"got {type(scalar_offset).__name__}")
    if t.buffer.on_chip and indirect_dim == 0:
        raise ModelError(f"{where}: a dynamic offset along the partition dimension of an on-chip tensor (the SDK's "
                         "dynamic select forbids dim 0 on SBUF/PSUM); index a free dimension (indirect_dim >= 1)")
    return IndirectView(t.alloc, dtype, start, stride, scalar_offset, entries, where)


def _pattern(pattern, where: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(pattern, (list, tuple)) or not pattern:
        raise ModelError(f"{where}: pattern must be a non-empty list of [stride, count] pairs, got {pattern!r}")
    entries = []
    for entry in pattern:
        if not isinstance(entry, (list, tuple)) or len(entry) != 2:
            raise ModelError(f"{where}: pattern entry {entry!r} is not a [stride, count] pair")
        stride = compile_time_int(entry[0], f"{where}: pattern stride")
        count = compile_time_int(entry[1], f"{where}: pattern count")
        if stride < 0 or count < 1:
            raise ModelError(f"{where}: pattern entry [{stride}, {count}] needs stride >= 0 and count >= 1 (negative "
                             "strides are not documented)")
        entries.append((stride, count))
    return tuple(entries)


def _check_offset_tile(tile: Tensor, where: str) -> None:
    if tile.buffer is not core.SBUF or tile.shape != (1, 1) or tile.dtype != np.int32:
        raise ModelError(f"{where}: a tensor scalar_offset is a [1, 1] int32 SBUF tile (nki-aps.rst), got "
                         f"{tile.buffer.name} {tile.shape} {tile.dtype}")


def _view(alloc: core.Allocation, dtype: np.dtype, start: int, entries: tuple[tuple[int, int], ...],
          where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(data, written, state) of the pattern at storage element ``start``, checking that every element lies in
    the allocation (on chip: within the partitions, the first entry stepping whole partitions)."""
    storage = alloc.data
    last = start + sum(stride * (count - 1) for stride, count in entries)
    if start < 0 or last >= storage.size:
        raise ModelError(f"{where}: the access covers storage elements {start}..{last} of {alloc.name} "
                         f"{storage.shape}, which has {storage.size}: out of bounds (oob_mode=error)")
    if alloc.buffer.on_chip:
        row = storage.size // storage.shape[0]  # elements per partition
        if len(entries) < 2 or entries[0][0] != row:
            raise ModelError(f"{where}: on {alloc.buffer.name}, the first pattern entry is the partition dimension "
                             f"and steps whole partitions: [{row}, partitions] for {alloc.name} {storage.shape}, "
                             f"then at least one free entry; got {[list(e) for e in entries]} (nki-aps.rst)")
        column = start % row
        if column + sum(stride * (count - 1) for stride, count in entries[1:]) >= row:
            raise ModelError(f"{where}: the free pattern starting at element {column} of a partition runs past the "
                             f"{row} elements of each partition of {alloc.name} {storage.shape}")
    shape = tuple(count for _, count in entries)
    strides = tuple(stride for stride, _ in entries)
    data = np.lib.stride_tricks.as_strided(storage.reshape(-1).view(dtype)[start:], shape,
                                           tuple(s * dtype.itemsize for s in strides))
    if alloc.written.ndim == 0:  # an input or a counting-only output: all of it counts as written
        written = np.broadcast_to(alloc.written, shape)
    else:
        written = np.lib.stride_tricks.as_strided(alloc.written.reshape(-1)[start:], shape, strides)
    state = None
    if alloc.state is not None:
        state = np.lib.stride_tricks.as_strided(alloc.state.reshape(-1)[start:], shape, strides)
    return data, written, state


class IndirectView(Tensor):
    """The view ``t.ap(..., scalar_offset=reg)`` builds: its shape is static, its address is resolved from the
    register (or [1, 1] tile) each time an instruction uses it, as the hardware reads the register when the
    instruction runs. It cannot be indexed, viewed or reshaped further."""

    __slots__ = ("dtype_", "start", "stride", "source", "entries", "where", "resolved")

    def __init__(self, alloc: core.Allocation, dtype: np.dtype, start: int, stride: int,
                 source: VirtualRegister | Tensor, entries: tuple[tuple[int, int], ...], where: str) -> None:
        self.alloc, self.dtype_, self.start, self.stride = alloc, dtype, start, stride
        self.source, self.entries, self.where = source, entries, where
        self.resolved: tuple[int, tuple] | None = None  # (offset, (data, written, state)) of the last use

    def _resolve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        offset = self._offset()
        if self.resolved is None or self.resolved[0] != offset:
            self.resolved = offset, _view(self.alloc, self.dtype_, self.start + offset * self.stride, self.entries,
                                          f"{self.where}(scalar_offset={offset})")
        return self.resolved[1]

    def _offset(self) -> int:
        """The dynamic offset now; 0 where counting_only computed no value (only shapes and strides matter)."""
        run = core.current()
        if isinstance(self.source, VirtualRegister):
            value = self.source._value
        else:
            if run.strict and not self.source.written.all():
                raise ModelError(f"{self.where}: the scalar_offset tile {self.source.name!r} was never written")
            value = int(self.source.data[0, 0]) if run.arithmetic else None
        if value is None:
            if run.arithmetic:
                raise ModelError(f"{self.where}: the scalar_offset register was never written (register_alloc() "
                                 "without a value)")
            return 0
        return value

    @property
    def data(self) -> np.ndarray:
        return self._resolve()[0]

    @property
    def written(self) -> np.ndarray:
        return self._resolve()[1]

    @property
    def state(self) -> np.ndarray | None:
        return self._resolve()[2]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(count for _, count in self.entries)

    @property
    def dtype(self) -> np.dtype:
        return self.dtype_

    @property
    def ndim(self) -> int:
        return len(self.entries)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def _refuse(self, *args, **kwargs):
        raise ModelError(f"{self.where}: a view with a dynamic offset cannot be indexed, viewed or reshaped "
                         "further (the CPU model does not compose them); describe the whole access in one .ap()")

    __getitem__ = view = reshape = _refuse


# --- tracing and replaying loop bodies ---------------------------------------------------------------------------
class _Tracer:
    """What the loops being run are doing: ``programs`` are the recordings of the bodies being traced (innermost
    last); instructions issued while ``quiet`` (inside another instruction, or replayed) are not recorded;
    ``regions`` holds, per iteration being run, the instructions its nested iterations executed."""

    def __init__(self) -> None:
        self.programs: list[list[Callable[[], object]]] = []
        self.quiet = 0
        self.regions: list[int] = []
        self.tracing: list[_Loop] = []  # the loops whose bodies are being traced (innermost last)


_TRACER = _Tracer()


def recorded(instruction: Callable) -> Callable:
    """``instruction`` as kernels call it: inside a loop body being traced it also records itself (with its
    arguments) for the later iterations to replay."""

    @functools.wraps(instruction)
    def issue(*args, **kwargs):
        if not _TRACER.programs or _TRACER.quiet:
            return instruction(*args, **kwargs)
        _TRACER.programs[-1].append(functools.partial(instruction, *args, **kwargs))
        _TRACER.quiet += 1
        try:
            return instruction(*args, **kwargs)
        finally:
            _TRACER.quiet -= 1

    return issue


def allocated_in_body(alloc: core.Allocation) -> None:
    """``nl.ndarray`` made the on-chip ``alloc``: inside a loop body being traced, the tile belongs to that loop's
    body and lives per iteration (``Allocation.next_iteration``)."""
    if _TRACER.tracing:
        _TRACER.tracing[-1].tiles.append(alloc)


def fori_loop(lower, upper, body_fun: Callable[[VirtualRegister], None], step=1) -> None:
    """``nl.fori_loop``: ``body_fun(i)`` for i in range(lower, upper, step) as one hardware loop. ``lower`` and
    ``upper`` are ints or VirtualRegisters (read once, when the loop starts); ``step`` is a compile-time positive
    int; ``i`` is a VirtualRegister; the body returns nothing (state carries through SBUF/HBM)."""
    if isinstance(step, VirtualRegister) or isinstance(step, bool) or not isinstance(step, (int, np.integer)) \
            or step <= 0:
        raise ModelError(f"nl.fori_loop: step must be a compile-time positive int (the loop instruction encodes it "
                         f"as an immediate), got {step!r}")
    for bound, role in ((lower, "lower"), (upper, "upper")):
        if not isinstance(bound, VirtualRegister):
            register_int(bound, f"nl.fori_loop: {role} (an int or a VirtualRegister)")
    if not callable(body_fun):
        raise ModelError(f"nl.fori_loop: body_fun must be a function of the induction register, got {body_fun!r}")
    loop = _Loop(lower, upper, body_fun, int(step))
    if _TRACER.programs and not _TRACER.quiet:  # a loop inside a traced body: part of that body's program
        _TRACER.programs[-1].append(loop.run)
    loop.run()


class _Loop:
    def __init__(self, lower, upper, body: Callable, step: int) -> None:
        self.lower, self.upper, self.body, self.step = lower, upper, body, step
        self.index = VirtualRegister()
        self.program: list[Callable[[], object]] | None = None  # the body's recording, once it has run
        self.tiles: list[core.Allocation] = []  # the on-chip tiles the body allocated (when it was traced)

    def run(self) -> None:
        lower, upper = self._bound(self.lower, "lower"), self._bound(self.upper, "upper")
        run = core.current()
        for value in range(lower, upper, self.step):
            self.index._value = value
            self._iterate(run)
            for bound, role, read in ((self.lower, "lower", lower), (self.upper, "upper", upper)):
                if isinstance(bound, VirtualRegister) and bound._value != read:
                    raise ModelError(f"nl.fori_loop: the body changed the {role}-bound register ({read} -> "
                                     f"{bound._value}); the model reads bounds once, when the loop starts, and NKI "
                                     "does not document re-reading them: keep bound registers fixed in the body")

    @staticmethod
    def _bound(bound, role: str) -> int:
        if not isinstance(bound, VirtualRegister):
            return int(bound)
        if bound._value is None:
            raise ModelError(f"nl.fori_loop: the {role}-bound register has no value (never written, or loaded "
                             "from memory under counting_only, which computes no data)")
        return bound._value

    def _iterate(self, run: core.Core) -> None:
        """One iteration: trace the body if it never ran, else replay it. The instructions a replay executes
        itself (not those of nested loops' iterations, which account for themselves) are not program."""
        before = sum(run.events.values())
        replay = self.program is not None
        for tile in self.tiles:
            tile.next_iteration()
        _TRACER.regions.append(0)
        try:
            if replay:
                _TRACER.quiet += 1
                try:
                    for instruction in self.program:
                        instruction()
                finally:
                    _TRACER.quiet -= 1
            else:
                self.program = self._trace()
        finally:
            nested = _TRACER.regions.pop()
        executed = sum(run.events.values()) - before
        if replay:
            run.replayed += executed - nested
        if _TRACER.regions:
            _TRACER.regions[-1] += executed

    def _trace(self) -> list[Callable[[], object]]:
        program: list[Callable[[], object]] = []
        _TRACER.programs.append(program)
        _TRACER.tracing.append(self)
        quiet, _TRACER.quiet = _TRACER.quiet, 0  # a body first run inside a replay is still traced
        try:
            result = self.body(self.index)
        finally:
            _TRACER.programs.pop()
            _TRACER.tracing.pop()
            _TRACER.quiet = quiet
        if result is not None:
            raise ModelError(f"nl.fori_loop: body_fun returned {type(result).__name__}; a fori_loop body returns "
                             "nothing and carries no values (carry loop state through SBUF or HBM)")
        return program
