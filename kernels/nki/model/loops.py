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
new value. Python state in the body therefore cannot differ between iterations (it does not on the device), and
every iteration still executes and counts in ``Core.events``. ``Core.program_instructions`` counts the program
instead: a recorded instruction once, however often it replays. A loop whose body never runs adds nothing to it
(the model learns a body by running it; the compiler would still emit it). Register instructions and the loop
instruction itself are not engine instructions in ``events`` (the cost model has no cost for them) and are not
counted either.

The documented rules of dynamic loops (nki/deep-dives/nki-dynamic-loops.rst, the 0.5 -> 0.6 migration guide, the
release notes; NKI_FACTS.md section 14), enforced here and in core.py:

- no ``nl.fori_loop`` inside a ``fori_loop`` body (nested dynamic loops with loop-carried values fail to compile,
  a known issue since 0.4.0, and no public example nests them): flatten them into one loop, or unroll the inner
  one with a Python loop in the body;
- a tile the body allocates is allocated once and lives for the whole loop, from the loop's first instruction to
  its last (``Allocation.loop_end``: SBUF and PSUM peaks count it throughout), yet starts each iteration
  unwritten (assumed: a body cannot lean on a value left by the previous iteration);
- a tile the body allocates cannot be used after the loop (``Allocation.use``);
- the induction register is read-only: ``register_move`` / ``register_load`` into it are refused (isa.py).

Each program records the loops it runs, with their resolved ranges, in ``Core.control_flow``: the programs of a
launch must run the same ones (model/__init__.py).

The tracer state (which body is being traced, whether instructions are being replayed) is per thread, as the
programs of a launch run in threads of their own.

The form a kernel takes (the model's tests plant it): loops one after another, not nested; a partial edge block is
a static call of the same body (an int offset lets the same code run there). Every HBM access is one ``.ap`` on the
whole tensor, along its last dimension, whose dynamic offset, in elements, is the induction register or comes from
an int32 counter tile in SBUF: NKI documents no register arithmetic, so a loop keeps a counter, advances it after
each iteration with exact int32 GpSimd adds (``nisa.tensor_tensor``) and ``nisa.register_load``s it into the
register an access passes as ``scalar_offset``; each such DMA names its descriptor generation
(``dge_mode=nisa.dge_mode.hwdge``), and an output written so is fenced before the kernel returns.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np

from . import core

# The registers and .ap are core's (its Tensor.ap needs them); published here with the loops that hand them out.
from .core import IndirectView, ModelError, RegisterUseError, VirtualRegister, access_pattern, register_int

__all__ = [
    "VirtualRegister",
    "RegisterUseError",
    "fori_loop",
    "access_pattern",
    "IndirectView",
    "recorded",
    "allocated_in_body",
]


# --- tracing and replaying loop bodies ---------------------------------------------------------------------------
class _Tracer(threading.local):
    """What the loop being run (one at most: loops do not nest) is doing, per thread: ``program`` is the recording
    of the body being traced; instructions issued while ``quiet`` (inside another instruction, or replayed) are not
    recorded."""

    def __init__(self) -> None:
        self.program: list[Callable[[], object]] | None = None
        self.quiet = 0
        self.loop: _Loop | None = None  # the loop running (tracing or replaying its body)


_TRACER = _Tracer()


def recorded(instruction: Callable) -> Callable:
    """``instruction`` as kernels call it: inside a loop body being traced it also records itself (with its
    arguments) for the later iterations to replay."""

    @core.model_code  # an instruction runs no kernel Python
    @functools.wraps(instruction)
    def issue(*args, **kwargs):
        tracer = _TRACER
        if tracer.program is None or tracer.quiet:
            return instruction(*args, **kwargs)
        tracer.program.append(functools.partial(instruction, *args, **kwargs))
        tracer.quiet += 1
        try:
            return instruction(*args, **kwargs)
        finally:
            tracer.quiet -= 1

    return issue


def allocated_in_body(alloc: core.Allocation) -> None:
    """``nl.ndarray`` made the on-chip ``alloc``: inside a loop body being traced, the tile belongs to that loop's
    body: it lives for the whole loop and cannot be used after it (``Allocation.loop_end``)."""
    loop = _TRACER.loop
    if loop is not None and _TRACER.program is not None:
        loop.tiles.append(alloc)


def fori_loop(lower, upper, body_fun: Callable[[VirtualRegister], None], step=1) -> None:
    """``nl.fori_loop``: ``body_fun(i)`` for i in range(lower, upper, step) as one hardware loop. ``lower`` and
    ``upper`` are ints or VirtualRegisters (read once, when the loop starts); ``step`` is a compile-time positive
    int; ``i`` is a read-only VirtualRegister; the body returns nothing (state carries through SBUF/HBM). Loops do
    not nest."""
    if _TRACER.loop is not None:
        raise ModelError(
            "nl.fori_loop inside the body of another nl.fori_loop: nested dynamic loops are refused (NKI release "
            "notes, known issue since 0.4.0: nested dynamic loops with loop-carried values fail to compile, 'Could "
            "not find register'; no example in nki/deep-dives/nki-dynamic-loops.rst or nki-library nests them); "
            "flatten the two into one fori_loop over the combined range (a counter tile gives the inner offset), or "
            "unroll the inner loop with a Python for loop inside the body"
        )
    if (
        isinstance(step, VirtualRegister)
        or isinstance(step, bool)
        or not isinstance(step, (int, np.integer))
        or step <= 0
    ):
        raise ModelError(
            f"nl.fori_loop: step must be a compile-time positive int (the loop instruction encodes it "
            f"as an immediate), got {step!r}"
        )
    for bound, role in ((lower, "lower"), (upper, "upper")):
        if not isinstance(bound, VirtualRegister):
            register_int(bound, f"nl.fori_loop: {role} (an int or a VirtualRegister)")
    if not callable(body_fun):
        raise ModelError(f"nl.fori_loop: body_fun must be a function of the induction register, got {body_fun!r}")
    _Loop(lower, upper, body_fun, int(step)).run()


class _Loop:
    def __init__(self, lower, upper, body: Callable, step: int) -> None:
        self.lower, self.upper, self.body, self.step = lower, upper, body, step
        self.index = VirtualRegister(induction=True)
        self.program: list[Callable[[], object]] | None = None  # the body's recording, once it has run
        self.tiles: list[core.Allocation] = []  # the on-chip tiles the body allocated (when it was traced)

    def run(self) -> None:
        lower, upper = self._bound(self.lower, "lower"), self._bound(self.upper, "upper")
        run = core.current()
        run.control_flow.append(("fori_loop", lower, upper, self.step))
        first = run.step
        _TRACER.loop = self
        try:
            for value in range(lower, upper, self.step):
                self.index._value = value
                self._iterate(run)
                for bound, role, read in ((self.lower, "lower", lower), (self.upper, "upper", upper)):
                    if isinstance(bound, VirtualRegister) and bound._value != read:
                        raise ModelError(
                            f"nl.fori_loop: the body changed the {role}-bound register ({read} -> "
                            f"{bound._value}); the model reads bounds once, when the loop starts, and "
                            "NKI does not document re-reading them: keep bound registers fixed in the "
                            "body"
                        )
        finally:
            _TRACER.loop = None
        for tile in self.tiles:
            tile.loop_end(first, run.step - 1)

    @staticmethod
    def _bound(bound, role: str) -> int:
        if not isinstance(bound, VirtualRegister):
            return int(bound)
        if bound._value is None:
            raise ModelError(
                f"nl.fori_loop: the {role}-bound register has no value (never written, or loaded "
                "from memory under counting_only, which computes no data)"
            )
        return bound._value

    def _iterate(self, run: core.Core) -> None:
        """One iteration: trace the body if it never ran, else replay it (replayed instructions are not program)."""
        for tile in self.tiles:
            tile.next_iteration()
        if self.program is None:
            self.program = self._trace()
            return
        before = sum(run.events.values())
        _TRACER.quiet += 1
        try:
            with core.untraced():  # a replay runs no kernel Python
                for instruction in self.program:
                    instruction()
        finally:
            _TRACER.quiet -= 1
        run.replayed += sum(run.events.values()) - before

    def _trace(self) -> list[Callable[[], object]]:
        program: list[Callable[[], object]] = []
        _TRACER.program = program
        try:
            result = self.body(self.index)
        finally:
            _TRACER.program = None
        if result is not None:
            raise ModelError(
                f"nl.fori_loop: body_fun returned {type(result).__name__}; a fori_loop body returns "
                "nothing and carries no values (carry loop state through SBUF or HBM)"
            )
        return program
