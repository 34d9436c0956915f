"""Dynamic (on-device) loops in the CPU model: ``nl.fori_loop``, with the virtual registers and ``NkiTensor.ap``
it hands its induction value to (those are defined in core.py, whose Tensor.ap needs them).

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
from collections.abc import Callable

import numpy as np

from . import core

# The registers and .ap are core's (its Tensor.ap needs them); published here with the loops that hand them out.
from .core import IndirectView, ModelError, RegisterUseError, VirtualRegister, access_pattern, register_int

__all__ = ["VirtualRegister", "RegisterUseError", "fori_loop", "access_pattern", "IndirectView", "recorded",
           "allocated_in_body"]

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
