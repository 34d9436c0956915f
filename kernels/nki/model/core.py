"""The NeuronCore state of the CPU model: targets, memories, tensors (strided views) and the rules they obey.

A kernel runs eagerly on one ``Core``: every ``nl.ndarray`` is an ``Allocation`` (a NumPy array of the storage
dtype, bf16 through ml_dtypes, so storing rounds to nearest even), every indexing a view of it. The core keeps what
the hardware limits: SBUF bytes per partition and PSUM banks of the live allocations, with the compiler's
liveness (an allocation is live from its creation to the last instruction that reads or writes it), checked when
the program ends; and it counts every instruction per engine for the cost model. A ``Launch`` is the programs of
one kernel call, one per physical core of the logical core (LNC), sharing their shared_hbm tensors. Each
allocation carries a mask of written elements (new memory is NaN; reading an unwritten element is an error in
strict mode) and, in PSUM, who wrote each element (accumulating onto memory that no matmul wrote is undefined
behaviour on NeuronCore-v2/v3). A shared_hbm allocation of a launch has one mask per program: what that program
may read, its own writes and what the others wrote before a ``nisa.core_barrier`` they all passed.

The programs of a launch run in their own threads (model/__init__.py), so the running core (``current()``,
``running()``) and the dynamic-loop tracer (loops.py) are per thread; allocation serials come from per-core
counters (and the launch's, for its shared_hbm tensors), so a launch's trace does not depend on thread timing.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import itertools
import math
import os
import sys
import threading
from collections.abc import Callable, Iterator

import ml_dtypes
import numpy as np
from numpy.lib.array_utils import byte_bounds

from ....errors import ModelError, RegisterUseError

__all__ = [
    "Target",
    "TARGETS",
    "Core",
    "Launch",
    "Allocation",
    "Tensor",
    "Buffer",
    "ModelError",
    "current",
    "running",
    "target_from_environment",
    "runtime_lnc",
    "LNC_VARIABLE",
    "VirtualRegister",
    "RegisterUseError",
    "IndirectView",
    "access_pattern",
    "compile_time_int",
    "register_int",
]


@dataclasses.dataclass(frozen=True)
class Target:
    """The limits of one NeuronCore generation that the model enforces (NKI_FACTS.md sections 2 and 4)."""

    name: str
    sbuf_partition_bytes: int  # usable SBUF bytes per partition (nl.tile_size.sbuf_fmax_bytes)
    partitions: int = 128  # nl.tile_size.pmax
    psum_banks: int = 8
    psum_bank_bytes: int = 2048  # 512 fp32 per partition per bank
    stationary_fmax: int = 128
    moving_fmax: int = 512  # one fp32 PSUM bank (NeuronCore-v2/v3)
    default_lnc: int = 1  # the runtime's logical NeuronCore size unless NEURON_LOGICAL_NC_CONFIG says otherwise
    max_lnc: int = 1


# SBUF the runtime reserves per partition: nki-library budgets 224 * 1024 - 16384 - 8 - 256 bytes of trn2's
# 224 KiB (core/mlp/mlp_cte/mlp_cte_constants.py; NKI_FACTS.md section 13). trn1's 192 KiB loses the same
# reservation: assumed by analogy, nothing documents trn1's.
SBUF_RESERVED_BYTES = 16384 + 8 + 256
TARGETS = {
    "trn1": Target("trn1", 192 * 1024 - SBUF_RESERVED_BYTES),  # no LNC=2 on trn1
    # "On trn2, the default configuration is LNC2" (SDK neuron-runtime/explore/device-memory.rst; NKI_FACTS.md 13)
    "trn2": Target("trn2", 224 * 1024 - SBUF_RESERVED_BYTES, default_lnc=2, max_lnc=2),
}
ALIASES = {"gen2": "trn1", "inf2": "trn1", "gen3": "trn2"}
TARGET_VARIABLE = "NEURON_PLATFORM_TARGET_OVERRIDE"


def target_from_environment() -> Target:
    """The target named by NEURON_PLATFORM_TARGET_OVERRIDE (as for nki.simulate), default trn2 (NeuronCore-v3)."""
    name = os.environ.get(TARGET_VARIABLE, "trn2").lower()
    name = ALIASES.get(name, name)
    try:
        return TARGETS[name]
    except KeyError:
        raise ModelError(
            f"{TARGET_VARIABLE}={name!r}: the CPU model knows {', '.join(TARGETS)} "
            "(trn3's wider moving tiles are not modelled)"
        ) from None


LNC_VARIABLE = "NEURON_LOGICAL_NC_CONFIG"  # the runtime's logical NeuronCore size (1 or 2 physical cores)


def runtime_lnc(target: Target) -> int:
    """The LNC of the runtime a kernel launches on, which the launch must match (a mismatch is a runtime error:
    nki.jit's docstring, NKI_FACTS.md section 13): NEURON_LOGICAL_NC_CONFIG (1 or 2) if set, else the target's
    default (trn2: 2, trn1: 1)."""
    text = os.environ.get(LNC_VARIABLE)
    if text is None:
        return target.default_lnc
    choices = tuple(range(1, target.max_lnc + 1))
    if text.strip() not in tuple(map(str, choices)):
        raise ModelError(
            f"{LNC_VARIABLE}={text!r}: {target.name} runs logical NeuronCores of "
            f"{' or '.join(map(str, choices))} physical cores"
        )
    return int(text)


def no_memory(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A read-only array with contiguous strides over a single element: shapes and strides for cost modelling,
    never read (the core skips arithmetic)."""
    strides = tuple(int(np.prod(shape[i + 1 :])) * dtype.itemsize for i in range(len(shape)))
    return np.lib.stride_tricks.as_strided(np.zeros(1, dtype), shape, strides, writeable=False)


class Buffer:
    """A memory: SBUF, PSUM or HBM (private or shared)."""

    def __init__(self, name: str, on_chip: bool) -> None:
        self.name, self.on_chip = name, on_chip

    def __repr__(self) -> str:
        return f"nl.{self.name}"


SBUF, PSUM = Buffer("sbuf", True), Buffer("psum", True)
PRIVATE_HBM, SHARED_HBM = Buffer("private_hbm", False), Buffer("shared_hbm", False)

# PSUM element states: who wrote it last (accumulate=True needs MATMUL)
UNWRITTEN, MATMUL, OTHER = 0, 1, 2


class Core:
    """One kernel run: the target's limits, on-chip allocations and their lifetimes, peaks, and instruction counts
    for the cost model.

    ``events`` counts instructions by (engine, instruction, details) where details are the numbers the cost model
    needs (free elements per partition; bytes and contiguous run for DMA; operand sizes and widths). ``issued``
    names each instruction in order: its index is the clock of allocation lifetimes."""

    def __init__(
        self,
        target: Target | None = None,
        strict: bool = True,
        arithmetic: bool = True,
        launch: Launch | None = None,
        program: int = 0,
    ) -> None:
        self.target = target or target_from_environment()
        self.strict = strict
        self.arithmetic = arithmetic  # False: check rules and count, but skip the data (cost modelling)
        self.launch, self.program = launch, program  # which launch, and which of its programs runs here
        self.shared_made = 0  # shared_hbm allocations this program made (the k-th is the launch's k-th)
        self.generators: dict[str, np.random.Generator] = {}  # per engine, once seeded
        self.seeded_lanes: dict[str, int] = {}  # per engine: partitions whose generator state was set
        self.events: collections.Counter[tuple] = collections.Counter()
        self.issued: list[str] = []
        # every executed instruction in order, for the cost model's schedule: (engine, instruction, details, the
        # serials of the allocations it reads, of those it writes); ``Allocation.serial`` names an allocation
        self.trace: list[tuple[str, str, tuple, tuple[int, ...], tuple[int, ...]]] = []
        # the lifetimes of this program's on-chip allocations (records, not the allocations: a core kept by a cost
        # model's cache must not keep every tile's memory)
        self.on_chip: list[Lifetime] = []
        self.sbuf_peak = 0  # set by check_memory
        self.banks_peak = 0
        self.random = np.random.Generator(np.random.PCG64(0))  # the engines' PRNG (nisa.set_rng_seed reseeds)
        self.replayed = 0  # instructions executed by replayed dynamic-loop iterations (loops.py): not program
        self.serials = itertools.count(next(_SERIAL_BLOCKS) << 40)  # names this core's allocations in ``trace``
        # the program's dynamic control flow, in order: ("fori_loop", lower, upper, step) per nl.fori_loop run and
        # ("core_barrier", cores) per barrier reached; the programs of a launch must agree (model/__init__.py)
        self.control_flow: list[tuple] = []
        # per shared_hbm allocation: the instruction index of the last dynamic-offset dma_copy into it, and of the
        # last fence (a static dma_copy whose dst and src are one view of it) (the HBM fence rule, isa.dma_copy)
        self.dynamic_writes: dict[Allocation, int] = {}
        self.fences: dict[Allocation, int] = {}

    # --- accounting -----------------------------------------------------------------------------------------
    def count(self, engine: str, instruction: str, *details: object, reads: tuple = (), writes: tuple = ()) -> None:
        """Count an instruction; ``reads`` and ``writes`` are the tensors it reads and writes (their allocations
        order the instructions in the cost model's schedule)."""
        key = (engine, instruction, *details)  # not starred in the subscript: mypy reads that as 3.11 syntax
        self.events[key] += 1
        self.issued.append(f"{engine} {instruction}")
        self.trace.append(
            (engine, instruction, details, tuple(t.alloc.serial for t in reads), tuple(t.alloc.serial for t in writes))
        )

    @property
    def step(self) -> int:
        """The index of the instruction being issued."""
        return len(self.issued)

    def instructions(self, engine: str | None = None, instruction: str | None = None) -> int:
        """How many instructions ran (on ``engine``, of kind ``instruction``; None means any)."""
        return sum(
            n
            for key, n in self.events.items()
            if (engine is None or key[0] == engine) and (instruction is None or key[1] == instruction)
        )

    @property
    def program_instructions(self) -> int:
        """Instructions of the program the compiler would emit: as ``instructions()``, but an instruction in a
        dynamic loop's body (nl.fori_loop) counts once however many iterations ran (loops.py)."""
        return self.instructions() - self.replayed

    def check_memory(self) -> None:
        """At the end of a program: the peak over time of the SBUF bytes per partition, and of the PSUM banks, of
        the allocations live then (from creation to last use, the compiler's rule; a tile a dynamic loop's body
        allocated lives for the whole loop) must fit the target."""
        target = self.target
        self.sbuf_peak, at, live = self._peak(SBUF, lambda a: a.partition_bytes)
        if self.sbuf_peak > target.sbuf_partition_bytes:
            raise ModelError(
                f"SBUF budget exceeded: {self.sbuf_peak} bytes per partition are live {at}, over the "
                f"{target.sbuf_partition_bytes} usable bytes per partition of {target.name}; largest "
                f"live: {_largest(live, lambda a: f'{a.partition_bytes} bytes')}"
            )
        self.banks_peak, at, live = self._peak(PSUM, lambda a: a.banks)
        if self.banks_peak > target.psum_banks:
            raise ModelError(
                f"PSUM banks exhausted: {self.banks_peak} banks are live {at}, over the "
                f"{target.psum_banks} of {target.name} (at most {target.psum_banks} accumulation groups "
                f"in flight); largest live: {_largest(live, lambda a: f'{a.banks} banks')}"
            )

    def _peak(self, buffer: Buffer, size) -> tuple[int, str, list[Lifetime]]:
        """(peak of ``size`` summed over the live allocations of ``buffer``, where it is, the allocations live
        there), sweeping creations and last uses in instruction order (an allocation dies after its last use)."""
        allocations = [a for a in self.on_chip if a.buffer is buffer]
        changes = sorted(
            [(a.created, size(a)) for a in allocations] + [(a.last_use + 1, -size(a)) for a in allocations]
        )
        peak, when, total = 0, 0, 0
        for time, change in changes:  # at equal times deaths (negative) come first
            total += change
            if total > peak:
                peak, when = total, time
        live = [a for a in allocations if a.created <= when <= a.last_use]
        where = (
            f"at instruction {when} ({self.issued[when]})" if when < len(self.issued) else "after the last instruction"
        )
        return peak, where, live


def _largest(allocations: list[Lifetime], describe) -> str:
    ranked = sorted(allocations, key=lambda a: -a.partition_bytes)[:3]
    return ", ".join(f"{a.name} {a.shape} {a.dtype} ({describe(a)})" for a in ranked)


@dataclasses.dataclass
class Lifetime:
    """An on-chip allocation as the liveness check sees it: its size and the instructions it lives between."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    buffer: Buffer
    partition_bytes: int
    banks: int
    created: int
    last_use: int


class Launch:
    """One launch of a kernel at an LNC: programs 0..lnc-1, each on its own physical ``Core``; the programs share
    the launch's shared_hbm allocations (the k-th allocation of every program is the same tensor).

    The programs run in their own threads, one at a time (``Schedule``): a program runs until it ends or waits at
    a ``nisa.core_barrier``, then the next one that can run does. The order is fixed, so a launch's results, counts
    and errors do not depend on thread timing; the hardware runs the programs in parallel, and what may race there
    is refused instead: a program reads a shared_hbm element another program wrote only after a barrier both passed
    (strict mode), and the programs must run the same dynamic control flow (``Core.control_flow``)."""

    def __init__(self, target: Target, lnc: int, strict: bool = True, arithmetic: bool = True) -> None:
        self.lnc = lnc
        self.cores = tuple(Core(target, strict, arithmetic, self, p) for p in range(lnc))
        self.shared: list[Allocation] = []
        self.serials = itertools.count(next(_SERIAL_BLOCKS) << 40)  # serials of the shared allocations
        self.lock = threading.Lock()  # guards ``shared`` (programs run in threads)
        self.schedule = Schedule(lnc)

    def shared_hbm(self, core: Core, shape: tuple[int, ...], dtype: np.dtype, name: str) -> Allocation:
        """The ``core``'s next shared_hbm allocation: new for the first program that makes it, the same tensor
        for the others (SPMD), which must ask for the same shape and dtype."""
        with self.lock:
            index = core.shared_made
            core.shared_made += 1
            if index == len(self.shared):
                self.shared.append(
                    Allocation(core, shape, dtype, SHARED_HBM, name, programs=self.lnc, serial=next(self.serials))
                )
            alloc = self.shared[index]
        if alloc.data.shape != shape or alloc.data.dtype != dtype:
            raise ModelError(
                f"{name}: program {core.program} makes shared_hbm allocation {index} as {shape} "
                f"{dtype}, an earlier program as {alloc.data.shape} {alloc.data.dtype}: the programs "
                "of a launch share their shared_hbm tensors, the k-th of each program is one tensor"
            )
        return alloc

    # --- the launch's counts, for callers of a single core's ---------------------------------------------------
    @property
    def events(self) -> collections.Counter[tuple]:
        """Instruction counts summed over the physical cores."""
        return sum((c.events for c in self.cores), collections.Counter())

    @property
    def sbuf_peak(self) -> int:
        return max(c.sbuf_peak for c in self.cores)

    @property
    def banks_peak(self) -> int:
        return max(c.banks_peak for c in self.cores)

    def instructions(self, engine: str | None = None, instruction: str | None = None) -> int:
        return sum(c.instructions(engine, instruction) for c in self.cores)

    @property
    def program_instructions(self) -> int:
        """The largest program of the launch's physical cores (each runs its own; see Core.program_instructions)."""
        return max(c.program_instructions for c in self.cores)


class Stopped(BaseException):
    """Raised in a program's thread when the launch stops (another program failed, or the programs diverged at a
    barrier): the thread unwinds without an error of its own. Not an Exception, so kernel code cannot catch it."""


class Schedule:
    """Which program of a launch runs: one at a time, in a fixed order. Program 0 starts; a program that ends or
    waits at a barrier hands over to the next program (cyclically) that can run; when every program waits at a
    barrier, the barrier opens (its tensors' writes become visible to all programs) and program 0's turn comes
    again. A program that ends while another waits at a barrier (or the reverse) means the programs' control
    flows differ: the launch stops (``diverged``) and the caller names the difference (rule 1)."""

    def __init__(self, programs: int) -> None:
        self.programs = programs
        self.cond = threading.Condition()
        self.turn = 0
        self.state = ["ready"] * programs  # ready, waiting (at a barrier) or done
        self.waiting_on: list[Allocation] = []  # the allocations the barrier being waited at is about
        self.stopped = False
        self.diverged = False

    def wait_turn(self, program: int) -> None:
        """Block until ``program`` may run (raises Stopped when the launch stopped meanwhile)."""
        with self.cond:
            while self.turn != program and not self.stopped:
                self.cond.wait()
            if self.stopped:
                raise Stopped

    def barrier(self, program: int, allocations: tuple[Allocation, ...]) -> None:
        """``program`` reached a core_barrier about ``allocations``: wait until every program has reached it."""
        with self.cond:
            self.state[program] = "waiting"
            self.waiting_on.extend(allocations)
            self._hand_over(program)
        self.wait_turn(program)

    def finish(self, program: int) -> None:
        """``program`` ended (normally)."""
        with self.cond:
            self.state[program] = "done"
            self._hand_over(program)

    def stop(self) -> None:
        """A program failed: every other program's thread unwinds (Stopped)."""
        with self.cond:
            self.stopped = True
            self.cond.notify_all()

    def _hand_over(self, program: int) -> None:
        n = self.programs
        for k in range(1, n + 1):
            other = (program + k) % n
            if self.state[other] == "ready":
                self.turn = other
                self.cond.notify_all()
                return
        if all(s == "waiting" for s in self.state):  # everyone reached the barrier: it opens
            for alloc in dict.fromkeys(self.waiting_on):
                alloc.publish()
            self.waiting_on.clear()
            self.state = ["ready"] * n
            self.turn = 0
        elif "waiting" in self.state:  # some ended, the others wait at a barrier they will never pass
            self.diverged = self.stopped = True
        self.cond.notify_all()


_SERIAL_BLOCKS = itertools.count()  # each core (and launch) numbers its allocations from its own block


class _Running(threading.local):
    def __init__(self) -> None:
        self.cores: list[Core] = []
        # the sys.settrace function checking the kernel's Python (model/__init__.py: _objects_checked) while it is
        # installed; model code suspends it (``untraced``): a tracer slows every Python call in the thread
        self.checker: Callable | None = None


_CURRENT = _Running()  # per thread: the programs of a launch run in threads of their own


@contextlib.contextmanager
def untraced() -> Iterator[None]:
    """Suspend the kernel-Python checker (if installed) in this thread while model code runs."""
    running = _CURRENT
    checker = running.checker
    if checker is None:
        yield
        return
    running.checker = None
    sys.settrace(None)
    try:
        yield
    finally:
        sys.settrace(checker)
        running.checker = checker


def model_code(fn: Callable) -> Callable:
    """``fn``, a model entry point kernels call (instructions, allocation, views), run with the kernel-Python
    checker suspended: it runs no kernel Python (``untraced``, inlined: this wraps every instruction)."""

    @functools.wraps(fn)
    def call(*args, **kwargs):
        running = _CURRENT
        checker = running.checker
        if checker is None:
            return fn(*args, **kwargs)
        running.checker = None
        sys.settrace(None)
        try:
            return fn(*args, **kwargs)
        finally:
            sys.settrace(checker)
            running.checker = checker

    return call


def current() -> Core:
    """The core the running kernel executes on (a default one outside kernels, for tests of single rules)."""
    cores = _CURRENT.cores
    if not cores:
        cores.append(Core())
    return cores[-1]


@contextlib.contextmanager
def running(core: Core) -> Iterator[Core]:
    cores = _CURRENT.cores
    cores.append(core)
    try:
        yield core
    finally:
        cores.remove(core)


class Allocation:
    """One ``nl.ndarray``: its storage, written-mask, PSUM writer states, and its claim on the core's memory.

    A shared_hbm allocation of a launch of ``programs`` programs has a written-mask per program (``masks``): the
    elements that program may read, its own writes and the others' published by a barrier (``publish``)."""

    def __init__(
        self,
        core: Core,
        shape: tuple[int, ...],
        dtype: np.dtype,
        buffer: Buffer,
        name: str,
        data: np.ndarray | None = None,
        programs: int = 1,
        serial: int | None = None,
    ) -> None:
        self.core, self.buffer, self.name = core, buffer, name
        self.serial = next(core.serials) if serial is None else serial  # names the allocation in Core.trace
        self.masks: list[np.ndarray] | None = None
        self.loop_ended = False  # that loop has ended: the tile can no longer be used
        shape = tuple(int(d) for d in shape)
        if any(d <= 0 for d in shape):
            raise ModelError(f"{name}: shape {shape} has a dimension that is not positive")
        if buffer.on_chip:
            if len(shape) < 2:
                raise ModelError(
                    f"{name}: on-chip tensors have a partition dimension and at least one free "
                    f"dimension, got shape {shape}"
                )
            if shape[0] > core.target.partitions:
                raise ModelError(
                    f"{name}: partition dimension {shape[0]} exceeds {core.target.partitions} "
                    "(nl.tile_size.pmax); dim 0 of an on-chip tensor is the partition dimension"
                )
        if data is not None:  # an input: written
            self.data, self.written = data, np.ones((), bool)
        elif not core.arithmetic and not buffer.on_chip:
            # cost modelling: HBM outputs hold no data
            self.data, self.written = no_memory(shape, dtype), np.ones((), bool)
        else:
            # new memory holds garbage: NaN for floats, 4 for integers (as the NKI simulator fills it)
            fill = np.nan if dtype in FLOAT_DTYPES else 4
            self.data = np.empty(shape, dtype) if not core.arithmetic else np.full(shape, fill, dtype)
            self.written = np.zeros(shape, bool)
            if programs > 1:
                self.masks = [self.written] + [np.zeros(shape, bool) for _ in range(programs - 1)]
        self.state = np.full(shape, UNWRITTEN, np.uint8) if buffer is PSUM else None
        self.partition_bytes = math.prod(shape[1:]) * dtype.itemsize if buffer.on_chip else 0
        if buffer.on_chip:
            self._claim(core, name)

    def _claim(self, core: Core, name: str) -> None:
        """Record the allocation's lifetime (created now; live until its last use, at least this instant: assumed,
        a tile no instruction touches would be removed by the compiler) and refuse one that alone cannot fit."""
        target = core.target
        step = core.step
        if self.buffer is SBUF and self.partition_bytes > target.sbuf_partition_bytes:
            raise ModelError(
                f"SBUF budget exceeded allocating {name}: {self.partition_bytes} bytes per partition, "
                f"over the {target.sbuf_partition_bytes} usable bytes per partition of {target.name}"
            )
        self.banks = max(1, math.ceil(self.partition_bytes / target.psum_bank_bytes)) if self.buffer is PSUM else 0
        total = target.psum_banks * target.psum_bank_bytes
        if self.buffer is PSUM and self.partition_bytes > total:
            raise ModelError(
                f"PSUM allocation {name} needs {self.partition_bytes} bytes per partition; PSUM has "
                f"{total} ({target.psum_banks} banks of {target.psum_bank_bytes})"
            )
        self.life = Lifetime(
            name, self.data.shape, self.data.dtype, self.buffer, self.partition_bytes, self.banks, step, step
        )
        core.on_chip.append(self.life)

    def mask(self, program: int) -> np.ndarray:
        """The written-mask that ``program`` sees (its own for a shared_hbm allocation of a launch)."""
        return self.written if self.masks is None else self.masks[program]

    def publish(self) -> None:
        """A barrier about this allocation opened: every program sees what any of them wrote."""
        if self.masks is not None:
            merged = np.logical_or.reduce(self.masks)
            for m in self.masks:
                m[...] = merged

    def use(self) -> None:
        """An instruction reads or writes this allocation (on chip: extends its lifetime to this instruction)."""
        if self.buffer.on_chip:
            if self.loop_ended:
                raise ModelError(
                    f"{self.name!r} {self.data.shape} was allocated in the body of an nl.fori_loop and is used after "
                    "the loop ended: tensors declared in a dynamic loop's body cannot be used after the loop (NKI "
                    "0.5 -> 0.6 migration guide, nki/migration/index.rst; nki/deep-dives/nki-dynamic-loops.rst); "
                    "allocate it before the loop (nl.ndarray outside body_fun) to use it afterwards"
                )
            self.life.last_use = self.core.step

    def next_iteration(self) -> None:
        """The dynamic loop whose body allocated this on-chip tile starts another iteration. The tile is allocated
        once and lives for the whole loop (nki-dynamic-loops.rst), but it starts each iteration unwritten (assumed:
        nothing documents a value carried in a body tile from one iteration to the next), so a body that reads a
        value left by the previous iteration fails in strict mode; carry loop state in a tile allocated before the
        loop."""
        self.written[...] = False
        if self.state is not None:
            self.state[...] = UNWRITTEN

    def loop_end(self, first: int, last: int) -> None:
        """The dynamic loop whose body allocated this tile ran instructions ``first``..``last``: the tile lives for
        all of them (the compiler keeps a loop's live tensors on chip for the whole loop and allocates body tiles
        once, nki-dynamic-loops.rst), and no instruction after the loop may use it."""
        self.life.created = min(self.life.created, first)
        self.life.last_use = max(self.life.last_use, last)
        self.loop_ended = True


FLOAT_DTYPES = {
    np.dtype(np.float32),
    np.dtype(np.float16),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(ml_dtypes.float8_e4m3),
    np.dtype(ml_dtypes.float8_e5m2),
}


def _reshaped(array: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``array`` viewed with ``shape`` (a broadcast mask stays a broadcast); never a copy."""
    if array.strides and not any(array.strides):  # a broadcast of one value
        return np.broadcast_to(array.reshape(-1)[:1].reshape(()), shape)
    view = array.view()
    try:
        view.shape = shape
    except AttributeError:
        raise ModelError(f"{name}: reshape {array.shape} -> {shape} is not a view of these strides") from None
    return view


class Tensor:
    """An NkiTensor: a strided view of an allocation (indexing, ``view(dtype)`` and ``reshape`` never copy)."""

    __slots__ = ("alloc", "data", "written", "state", "__weakref__")

    def __init__(self, alloc: Allocation, data: np.ndarray, written: np.ndarray, state: np.ndarray | None) -> None:
        self.alloc, self.data, self.written, self.state = alloc, data, written, state

    @classmethod
    def allocate(cls, shape, dtype, buffer: Buffer, name: str = "", data: np.ndarray | None = None) -> Tensor:
        core, shape, dtype = current(), tuple(int(d) for d in shape), np.dtype(dtype)
        name = name or f"{buffer.name} tensor"
        if buffer is SHARED_HBM and data is None and core.launch is not None:
            alloc = core.launch.shared_hbm(core, shape, dtype, name)
        else:
            alloc = Allocation(core, shape, dtype, buffer, name, data)
        mask = alloc.mask(core.program)
        written = mask if mask.ndim else np.broadcast_to(mask, alloc.data.shape)
        return cls(alloc, alloc.data, written, alloc.state)

    # --- the NkiTensor attributes -----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    @property
    def dtype(self) -> np.dtype:
        return self.data.dtype

    @property
    def buffer(self) -> Buffer:
        return self.alloc.buffer

    @property
    def ndim(self) -> int:
        return self.data.ndim

    @property
    def size(self) -> int:
        return self.data.size

    @property
    def name(self) -> str:
        return self.alloc.name

    def __repr__(self) -> str:
        return f"<{self.buffer.name} tensor {self.name!r} {self.shape} {self.dtype}>"

    # --- views -------------------------------------------------------------------------------------------------
    @model_code
    def __getitem__(self, key) -> Tensor:
        key = key if isinstance(key, tuple) else (key,)
        if self.buffer.on_chip and key and isinstance(key[0], (int, np.integer)):
            key = (slice(int(key[0]), int(key[0]) + 1), *key[1:])  # integer indexing keeps the partition dim
        for k in key:
            if not (k is Ellipsis or isinstance(k, (slice, int, np.integer))):
                raise ModelError(f"{self.name}: index {k!r} is not an integer, slice or ...")
        self._check_bounds(key)
        data = self.data[key]
        if self.buffer.on_chip and data.ndim < 2:
            data = data.reshape(data.shape[0] if data.ndim else 1, -1)
        written = self.written[key].reshape(data.shape)
        state = None if self.state is None else self.state[key].reshape(data.shape)
        return Tensor(self.alloc, data, written, state)

    def _check_bounds(self, key: tuple) -> None:
        """Slices past the end are an error on the hardware (NumPy would clip them silently)."""
        dims = iter(range(self.ndim))
        for k in key:
            if k is Ellipsis:
                dims = iter(range(self.ndim - (len(key) - 1 - key.index(Ellipsis)), self.ndim))
                continue
            d = next(dims, None)
            if d is None:
                raise ModelError(f"{self.name}: too many indices for shape {self.shape}")
            size = self.shape[d]
            if isinstance(k, slice):
                start, stop, step = k.start or 0, size if k.stop is None else k.stop, k.step or 1
                if step <= 0 or start < 0 or stop > size or start > stop:
                    raise ModelError(
                        f"{self.name}: slice {start}:{stop}:{step} is out of bounds for dimension {d} of size {size}"
                    )
            elif not -size <= int(k) < size:
                raise ModelError(f"{self.name}: index {k} is out of bounds for dimension {d} of size {size}")

    @model_code
    def view(self, dtype) -> Tensor:
        """The same bytes as another dtype of the same width (fp32 <-> uint32: what bit tricks need; the model
        leaves out views that rescale the last dimension)."""
        dtype = np.dtype(dtype)
        if dtype.itemsize != self.dtype.itemsize:
            raise ModelError(
                f"{self.name}: the CPU model supports .view() between dtypes of one width, not {self.dtype} -> {dtype}"
            )
        return Tensor(self.alloc, self.data.view(dtype), self.written, self.state)

    @model_code
    def ap(
        self, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim: int = 0, dtype=None
    ) -> Tensor:
        """``NkiTensor.ap``: an explicit [[stride, count], ...] access pattern over the allocation's storage, with
        an optional dynamic offset (a VirtualRegister); see access_pattern."""
        return access_pattern(self, pattern, offset, scalar_offset, vector_offset, indirect_dim, dtype)

    @model_code
    def reshape(self, shape) -> Tensor:
        """A view with a new shape; a reshape that would need a copy is an error (views never copy)."""
        shape = tuple(int(d) for d in shape)
        if self.buffer.on_chip and shape[0] != self.shape[0]:
            raise ModelError(f"{self.name}: reshape to {shape} changes the partition dimension {self.shape[0]}")
        state = None if self.state is None else _reshaped(self.state, shape, self.name)
        return Tensor(
            self.alloc, _reshaped(self.data, shape, self.name), _reshaped(self.written, shape, self.name), state
        )

    # --- where a view lies on chip ---------------------------------------------------------------------------
    def partitions(self) -> tuple[int, int]:
        """(first partition, number of partitions) of an on-chip view, checking the documented access rules:
        partitions are contiguous (no stride along P) and start where the span allows."""
        base = self.alloc.data
        stride = base.strides[0]
        start = (byte_bounds(self.data)[0] - byte_bounds(base)[0]) // stride
        count = self.shape[0]
        if count > 1 and self.data.strides[0] != stride:
            raise ModelError(
                f"{self.name}: a view with a stride along the partition dimension (partitions must be consecutive)"
            )
        allowed = (0,) if count > 64 else (0, 64) if count > 32 else (0, 32, 64, 96)
        if start not in allowed:
            raise ModelError(
                f"{self.name}: a view over {count} partitions must start at partition "
                f"{' or '.join(map(str, allowed))}, not {start}"
            )
        return start, count

    def free_bytes(self) -> tuple[int, int]:
        """[first, last] byte offsets, within a partition, that the view touches."""
        base = self.alloc.data
        first_row = self.data[:1]
        lo, hi = byte_bounds(first_row)
        offset = byte_bounds(base)[0]
        stride = base.strides[0]
        row_start = (lo - offset) // stride * stride + offset
        return lo - row_start, hi - row_start - 1


# --- virtual registers and NkiTensor.ap (dynamic offsets; the loops that hand them out: loops.py) ---------------

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1  # registers are 32-bit (SDK isa register_alloc: "64x 32-bit registers")


class VirtualRegister:
    """``nisa.VirtualRegister``: an engine register whose value exists only when the kernel runs. The model knows
    the value (for execution) but refuses every use of it at trace time: the NKI 0.6 stubs document no arithmetic,
    comparison or conversion of registers, only loop bounds, ``register_*`` and ``.ap(scalar_offset=...)``."""

    __slots__ = ("_value", "_induction", "__weakref__")
    __hash__ = object.__hash__  # identity: comparisons are refused below

    def __init__(self, value: int | None = None, induction: bool = False) -> None:
        self._value = value  # None: never written, or loaded from memory under counting_only (not computed)
        self._induction = induction  # an nl.fori_loop's induction register: read-only (loops.py)

    def __repr__(self) -> str:
        return (
            "VirtualRegister (a run-time value; address memory with it through "
            "tensor.ap(pattern, scalar_offset=reg, indirect_dim=d))"
        )


def _refusal(what: str):
    def refuse(self, *args):
        raise RegisterUseError(
            f"{what} with a VirtualRegister: its value exists only on the device while the kernel runs, so the "
            "traced kernel cannot compute with it, compare it, convert it or branch on it (NKI documents no "
            "register arithmetic). Use it as a dynamic offset, tensor.ap(pattern, scalar_offset=reg, "
            "indirect_dim=d), or as a loop bound, and carry other loop state in SBUF (exact int32 nisa.tensor_tensor "
            "adds on GpSimd, then nisa.register_load)"
        )

    return refuse


_CONVERSIONS = {
    "__bool__": "a Python if/while/and/or (bool())",
    "__int__": "int()",
    "__index__": "use as a Python int (range(), indexing, slicing)",
    "__float__": "float()",
    "__complex__": "complex()",
    "__round__": "round()",
    "__trunc__": "math.trunc()",
    "__floor__": "math.floor()",
    "__ceil__": "math.ceil()",
}
_OPERATORS = (
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "divmod",
    "pow",
    "lshift",
    "rshift",
    "and",
    "xor",
    "or",
    "matmul",
)
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
def access_pattern(
    t: Tensor, pattern, offset=None, scalar_offset=None, vector_offset=None, indirect_dim: int = 0, dtype=None
) -> Tensor:
    """``t.ap(...)``: the view of t's allocation whose element [j0, j1, ...] is storage element
    start + sum(j_d * stride_d) for ``pattern`` [[stride_d, count_d], ...] (in elements of ``dtype``), where
    start = t's storage offset + ``offset`` + ``scalar_offset`` * (the stride of t's dimension ``indirect_dim``)
    (SDK language stub NkiTensor.ap; nki-aps.rst). A VirtualRegister or a [1, 1] int32 SBUF tile as
    ``scalar_offset`` is read when an instruction uses the view, not when it is built; an access outside the
    allocation is an error (dma_copy's default oob_mode=error)."""
    where = f"{t.name}.ap"
    if isinstance(t, IndirectView):
        raise ModelError(
            f"{where}: this view already has a dynamic offset (an indirect view cannot be re-indirected: "
            "SDK NkiTensor.is_indirect); build the whole access with one .ap() on the tensor"
        )
    if vector_offset is not None:
        raise ModelError(f"{where}: vector_offset (per-partition indirect access) is not modelled by the CPU model")
    entries = _pattern(pattern, where)
    storage = t.alloc.data
    dtype = t.dtype if dtype is None else np.dtype(dtype)
    if dtype.itemsize != storage.dtype.itemsize:
        raise ModelError(
            f"{where}: the CPU model reinterprets storage only between dtypes of one width, not "
            f"{storage.dtype} -> {dtype}"
        )
    if not storage.flags.c_contiguous:
        raise ModelError(
            f"{where}: {t.alloc.name} is a non-contiguous input; the CPU model addresses .ap() "
            "patterns in contiguous storage only"
        )
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
        raise ModelError(
            f"{where}: scalar_offset must be an int, a VirtualRegister or a [1, 1] int32 SBUF tile, "
            f"got {type(scalar_offset).__name__}"
        )
    if t.buffer.on_chip and indirect_dim == 0:
        raise ModelError(
            f"{where}: a dynamic offset along the partition dimension of an on-chip tensor (the SDK's "
            "dynamic select forbids dim 0 on SBUF/PSUM); index a free dimension (indirect_dim >= 1)"
        )
    _check_dynamic_base(t, indirect_dim, where)
    return IndirectView(t.alloc, dtype, start, stride, scalar_offset, entries, where)


def _check_dynamic_base(t: Tensor, indirect_dim: int, where: str) -> None:
    """A dynamic offset is taken on the unreshaped tensor, along its last dimension: the SDK stub reads
    ``indirect_dim`` against ``self.shape`` and nki-aps.rst against the base tensor, which differ for a reshaped
    or sliced view; on the tensor as allocated, with the last dimension (stride one element), both readings agree
    and the offset counts elements (NKI_FACTS.md section 14)."""
    storage = t.alloc.data
    unreshaped = (
        t.data.shape == storage.shape
        and t.data.strides == storage.strides
        and t.dtype == storage.dtype
        and t.data.__array_interface__["data"][0] == storage.__array_interface__["data"][0]
    )
    if not unreshaped or indirect_dim != t.ndim - 1:
        what = (
            f"along indirect_dim={indirect_dim} of a {t.ndim}-D tensor"
            if unreshaped
            else f"on a view {t.shape} {t.dtype} of {t.alloc.name!r} {storage.shape} {storage.dtype} (a slice, "
            "reshape or .view of it)"
        )
        raise ModelError(
            f"{where}: a dynamic offset (scalar_offset) {what}: the SDK stub (NkiTensor.ap, "
            "nki/api/nki/language/__init__.py) and nki/deep-dives/nki-aps.rst disagree on what indirect_dim refers "
            "to for a reshaped view, so call .ap on the tensor exactly as allocated (a kernel argument or "
            f"nl.ndarray) with indirect_dim={len(storage.shape) - 1}, its last dimension (the offset counts "
            "elements), and put any static part of the address in offset= and the pattern"
        )


def _pattern(pattern, where: str) -> tuple[tuple[int, int], ...]:
    if not isinstance(pattern, list) or not pattern or not all(isinstance(e, list) for e in pattern):
        raise ModelError(
            f"{where}: pattern must be a non-empty list of lists [[stride, count], ...] (NkiTensor.ap's "
            "pattern: list[list[int]], SDK nki/api/nki/language/__init__.py and every example in "
            f"nki/deep-dives/nki-aps.rst), got {pattern!r}; write [[s0, c0], [s1, c1]], not tuples"
        )
    entries = []
    for entry in pattern:
        if len(entry) != 2:
            raise ModelError(f"{where}: pattern entry {entry!r} is not a [stride, count] pair")
        stride = compile_time_int(entry[0], f"{where}: pattern stride")
        count = compile_time_int(entry[1], f"{where}: pattern count")
        if stride < 0 or count < 1:
            raise ModelError(
                f"{where}: pattern entry [{stride}, {count}] needs stride >= 0 and count >= 1 (negative "
                "strides are not documented)"
            )
        entries.append((stride, count))
    return tuple(entries)


def _check_offset_tile(tile: Tensor, where: str) -> None:
    if tile.buffer is not SBUF or tile.shape != (1, 1) or tile.dtype != np.int32:
        raise ModelError(
            f"{where}: a tensor scalar_offset is a [1, 1] int32 SBUF tile (nki-aps.rst), got "
            f"{tile.buffer.name} {tile.shape} {tile.dtype}"
        )


def _view(
    alloc: Allocation, dtype: np.dtype, start: int, entries: tuple[tuple[int, int], ...], where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(data, written, state) of the pattern at storage element ``start``, checking that every element lies in
    the allocation (on chip: within the partitions, the first entry stepping whole partitions)."""
    storage = alloc.data
    last = start + sum(stride * (count - 1) for stride, count in entries)
    if start < 0 or last >= storage.size:
        raise ModelError(
            f"{where}: the access covers storage elements {start}..{last} of {alloc.name} "
            f"{storage.shape}, which has {storage.size}: out of bounds (oob_mode=error)"
        )
    if alloc.buffer.on_chip:
        row = storage.size // storage.shape[0]  # elements per partition
        if len(entries) < 2 or entries[0][0] != row:
            raise ModelError(
                f"{where}: on {alloc.buffer.name}, the first pattern entry is the partition dimension "
                f"and steps whole partitions: [{row}, partitions] for {alloc.name} {storage.shape}, "
                f"then at least one free entry; got {[list(e) for e in entries]} (nki-aps.rst)"
            )
        column = start % row
        if column + sum(stride * (count - 1) for stride, count in entries[1:]) >= row:
            raise ModelError(
                f"{where}: the free pattern starting at element {column} of a partition runs past the "
                f"{row} elements of each partition of {alloc.name} {storage.shape}"
            )
    shape = tuple(count for _, count in entries)
    strides = tuple(stride for stride, _ in entries)
    data = np.lib.stride_tricks.as_strided(
        storage.reshape(-1).view(dtype)[start:], shape, tuple(s * dtype.itemsize for s in strides)
    )
    mask = alloc.mask(current().program)
    if mask.ndim == 0:  # an input or a counting-only output: all of it counts as written
        written = np.broadcast_to(mask, shape)
    else:
        written = np.lib.stride_tricks.as_strided(mask.reshape(-1)[start:], shape, strides)
    state = None
    if alloc.state is not None:
        state = np.lib.stride_tricks.as_strided(alloc.state.reshape(-1)[start:], shape, strides)
    return data, written, state


class IndirectView(Tensor):
    """The view ``t.ap(..., scalar_offset=reg)`` builds: its shape is static, its address is resolved from the
    register (or [1, 1] tile) each time an instruction uses it, as the hardware reads the register when the
    instruction runs. It cannot be indexed, viewed or reshaped further."""

    __slots__ = ("dtype_", "start", "stride", "source", "entries", "where", "resolved")

    def __init__(
        self,
        alloc: Allocation,
        dtype: np.dtype,
        start: int,
        stride: int,
        source: VirtualRegister | Tensor,
        entries: tuple[tuple[int, int], ...],
        where: str,
    ) -> None:
        self.alloc, self.dtype_, self.start, self.stride = alloc, dtype, start, stride
        self.source, self.entries, self.where = source, entries, where
        self.resolved: tuple[int, tuple] | None = None  # (offset, (data, written, state)) of the last use

    def _resolve(self) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        offset = self._offset()
        if self.resolved is None or self.resolved[0] != offset:
            self.resolved = (
                offset,
                _view(
                    self.alloc,
                    self.dtype_,
                    self.start + offset * self.stride,
                    self.entries,
                    f"{self.where}(scalar_offset={offset})",
                ),
            )
        return self.resolved[1]

    def _offset(self) -> int:
        """The dynamic offset now; 0 where counting_only computed no value (only shapes and strides matter)."""
        run = current()
        if isinstance(self.source, VirtualRegister):
            value = self.source._value
        else:
            self.source.alloc.use()  # an instruction reads the offset tile
            if run.strict and not self.source.written.all():
                raise ModelError(f"{self.where}: the scalar_offset tile {self.source.name!r} was never written")
            value = int(self.source.data[0, 0]) if run.arithmetic else None
        if value is None:
            if run.arithmetic:
                raise ModelError(
                    f"{self.where}: the scalar_offset register was never written (register_alloc() without a value)"
                )
            return 0
        return value

    @property
    def data(self) -> np.ndarray:  # type: ignore[override]  # resolved per use (the slot: base only)
        return self._resolve()[0]

    @property
    def written(self) -> np.ndarray:  # type: ignore[override]  # resolved per use (the slot: base only)
        return self._resolve()[1]

    @property
    def state(self) -> np.ndarray | None:  # type: ignore[override]  # resolved per use (the slot: base only)
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
        raise ModelError(
            f"{self.where}: a view with a dynamic offset cannot be indexed, viewed or reshaped "
            "further (the CPU model does not compose them); describe the whole access in one .ap()"
        )

    __getitem__ = view = reshape = _refuse
