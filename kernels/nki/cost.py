"""The cost model: a modelled time per NKI kernel call on trn2 (trn1 for reference), from the instructions the
CPU model records, documented hardware numbers (NKI_FACTS.md sections 3, 4, 6, 10, 13 and 14) and two constants
fitted to published measurements (docs/trainium.md lists each calibration point, its source, the model's error
in sample and left out of the fit, and further published times the fit never saw). Every constant below says
whether it is documented (with its source), fitted (to what) or assumed.

The schedule. The CPU model records every instruction each physical core executes, in program order, with the
allocations (whole tiles and HBM tensors) it reads and writes (``Core.trace``). ``schedule`` places them:

- the Tensor, Vector, Scalar and GpSimd engines each execute their instructions in program order (in-order
  queues: the compiler's reordering within a queue is not modelled), an instruction starting when its engine is
  free and its operands are ready;
- operands are ready after read-after-write (the writes of every allocation it reads have finished),
  write-after-read (every read of an allocation it writes has finished) and write-after-write (the earlier
  writes of an allocation it writes have finished). Dependencies are per whole allocation: a tile reused by the
  next loop iteration (a dynamic loop's body tile, or one Python loop tile written again) makes the next load
  into it wait for the previous iteration's last read of it, which perfect overlap hid; a fresh allocation per
  iteration never waits (the model assumes the compiler gives each its own buffer: the schedule does not model
  PSUM's 8 banks or SBUF rotation, only reuse the kernel writes itself). Exception: two dma_copy writes of one
  allocation do not order each other (kernels fill blocks and outputs with one DMA per slice, disjoint parts
  that whole-allocation tracking cannot tell apart); a DMA write still waits for compute engines' writes and for
  every read;
- DMA: each dma_copy costs the core's DMA bandwidth dma_fixed_s + S (R + dma_half_run_bytes) / (R rate) for S
  bytes in contiguous runs of R bytes (the formula below). A physical core has 16 DMA queues (engines); a
  128-partition transfer is spread over all of them (the DMA guide: fewer partitions use fewer engines), so the
  core's transfers share one bandwidth. The model is that shared bandwidth as a server that fills gaps: in
  program order, each transfer takes the earliest free bandwidth after it is ready, so a store waiting for its
  tile does not hold back later loads whose operands are ready (the compiler puts those on other queues; a single
  in-order queue would serialize them behind the store). A transfer is ready DMA_LATENCY_S after its operands
  are (the DMA guide's ~1.3 us semaphore-to-start latency; it does not occupy the bandwidth: with the 16 queues
  busy it costs the bandwidth 1.3 us / 16 per transfer, the formula's dma_fixed_s);
- descriptor generation (SDK nki/deep-dives/nki-dge.rst): a dma_copy with a dynamic offset ("hwdge", or the CPU
  model's older True where the generation has hardware DGE) first needs DGE_SECONDS (~600 ns, documented per
  hardware-DGE instruction) on one of the core's 2 DGE instances (documented for trn2), the one free first, in
  program order, once its operands are ready; "swdge" spends that time on GpSimd instead, in GpSimd's program
  order (the duration is assumed equal: the DGE guide gives none for software DGE). Static DMAs (descriptors
  precomputed) need none. trn1 has no hardware DGE: its dynamic DMAs are swdge;
- barriers: ``core_barrier`` appears in each core's trace at the same point; every core's schedule synchronises
  there: the barrier completes, on every core, one instruction time after the last core reached it (its engine
  free and its operands ready), and nothing after it on any core starts before that. (Conservative: the SDK
  blocks only the barrier's engine and the compiler orders the consumers of the shared data after it; the model
  cannot tell which later instructions read what the other core wrote, so it holds them all.);
- cores: each physical core of the launch is scheduled; the call takes as long as the last to finish, and at
  least the bytes all cores moved over their share of the chip's HBM (``Generation.hbm_bytes_per_s`` per core).
  Register loads (the offsets dynamic DMAs read) are not in the trace: a DMA does not wait for the counter update
  feeding its offset.

Per-instruction costs (unchanged from the perfect-overlap model; ``Estimate.engine_seconds`` sums them per engine):

- nc_matmul: max(N, 64) Tensor Engine cycles for a moving free size N (the documented initiation interval, four
  times that for fp32 operands), at ``Calibration.tensor_efficiency`` of the documented rate (fitted); its
  LoadStationary runs in the background. nc_transpose on the Tensor Engine is a matmul against an identity of P
  columns;
- Vector, Scalar and GpSimd instructions: INSTRUCTION_CYCLES each, plus the elements per partition over the
  engine's data-path width (two cycles per element for tensor_tensor's two inputs);
- compile: every Python loop unrolls at specialization and a ``nl.fori_loop`` body compiles once, so a call's
  program is the CPU model's ``program_instructions``; compiling it costs compile_fixed_s +
  compile_s_per_instruction per instruction, once per shape and dtype.
"""

from __future__ import annotations

import array
import bisect
import collections
import dataclasses
import functools
import json
import math
import os
from collections.abc import Mapping
from typing import cast

import torch

__all__ = [
    "Calibration",
    "calibration",
    "CALIBRATION_VARIABLE",
    "Generation",
    "TRN1",
    "TRN2",
    "GENERATIONS",
    "Estimate",
    "estimate",
    "schedule",
    "Schedule",
    "record",
    "Recorded",
    "RecordedLaunch",
    "modelled",
    "default_min_flops",
    "format_seconds",
    "LAUNCH_OVERHEAD_S",
    "DMA_LATENCY_S",
    "DGE_SECONDS",
    "ENGINES",
]

MATMUL_MIN_CYCLES = 64  # documented: MM_INIT_LATENCY, a matmul costs at least this many Tensor Engine cycles
FP32_MATMUL_FACTOR = 4  # documented: fp32 operands run two FP32_LO_HI passes, a quarter of the bf16 rate
FP32_TRANSPOSE_FACTOR = 2  # documented: "fp32 transpose is 2x faster" than an fp32 matmul pass (trn2 guide)
# Documented: the fixed cost of a Vector/Scalar/GpSimd instruction, the arch guide's ~60-cycle SBUF/PSUM access
# overhead (trainium_inferentia2_arch.rst, "Tensor access overhead"; 100 cycles for back-to-back dependent
# instructions, which the schedule does not add: assumed hidden).
INSTRUCTION_CYCLES = 64
TENSOR_TENSOR_CYCLES = 2  # documented: per element per data-path lane, two input tiles (arch guide: ~2N cycles)
CALIBRATION_VARIABLE = "TRN_BACKEND_NKI_CALIBRATION"
# DMA (documented, SDK nki/deep-dives/nki-dma-bandwidth-guide.rst): 16 DMA queues (engines) per core, each
# transfer about 1.3 us from semaphore to start. A transfer waits that long after its operands are ready
# (DMA_LATENCY_S); with the 16 queues busy in parallel it holds its queue for that time, so it costs the core's
# DMA bandwidth 1.3 us / 16: the default dma_fixed_s.
DMA_QUEUES = 16
SEMAPHORE_TO_START_S = 1.3e-6
DMA_LATENCY_S = SEMAPHORE_TO_START_S
# Documented (SDK nki/deep-dives/nki-dge.rst): a hardware-DGE DMA instruction takes ~600 ns of descriptor
# generation; each trn2 NeuronCore has two DGE instances. Software DGE (GpSimd) is assumed to take as long.
DGE_SECONDS = 600e-9
DGE_INSTANCES = 2
# Assumed: the host's cost of one kernel call, warm. No per-kernel launch figure is published for NKI: this is
# vllm-neuron's idle gap (about 0.44 ms) between synchronous whole-model calls (dispatch, allocation, Python),
# not a kernel launch measurement; taken as the order of a call's host cost. The routing threshold sits where
# a kernel's modelled time reaches it.
LAUNCH_OVERHEAD_S = 0.4e-3


def _field_problem(name: str, value: object) -> str | None:
    """What is wrong with ``value`` for Calibration field ``name`` (None: nothing)."""
    if name == "source":
        return None if isinstance(value, str) else f"source must be a string, got {value!r}"
    if name == "dma_bytes_per_s" and value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return f"{name} must be a finite number, got {value!r}"
    if name == "tensor_efficiency" and not 0 < value <= 1:
        return f"tensor_efficiency must be in (0, 1] (a fraction of the documented rate), got {value!r}"
    if name == "dma_bytes_per_s" and value <= 0:
        return f"dma_bytes_per_s must be positive (or null: the generation's), got {value!r}"
    if value < 0:
        return f"{name} must not be negative, got {value!r}"
    return None


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The constants of the cost model that a measurement can refit (``check-neuron --calibrate``). Each default
    says whether it is fitted (tensor_efficiency, to published kernel times: docs/trainium.md lists each point, its
    source, the model's error in sample and left out, and out-of-sample times), documented or assumed.

    The fields are the interface between the cost model and check-neuron's calibration file (JSON of these names;
    a missing field keeps its default)."""

    # Achieved fraction of the documented nc_matmul rate. Fitted, together with trn1's DMA rate (TRN1), by least
    # squares of the log errors of the five published calibration points (tests/kernels/nki_calibration_kernels.py
    # POINTS; calibrate.fit_published): the Tensor-Engine-bound ones are the legacy tutorial's best kernel (85.2%
    # of trn1's peak) and nki-autotune's hand kernel (90.9% of trn2's), which the schedule's pipeline fill and
    # drain bring below the rate the engine runs at.
    tensor_efficiency: float = 0.911
    # Streaming DMA rate per physical core (None: the generation's, Generation.dma_bytes_per_s).
    dma_bytes_per_s: float | None = None
    # The contiguous run at which DMA reaches half its streaming rate. Assumed from the DMA guide's curve (runs of
    # 256 B - 2 KiB per partition below peak, >= 2 KiB near it, >= 4 KiB saturating): 256 B gives 50% at 256 B,
    # 80% at 1 KiB, 89% at 2 KiB, 94% at 4 KiB. Not fitted (the trn1 points' two run lengths, 256 B and 1 KiB,
    # with three points, leave it barely determined beside the rate).
    dma_half_run_bytes: float = 256.0
    # Per dma_copy, of the core's DMA bandwidth. Derived from documented numbers: the 1.3 us semaphore-to-start
    # latency spread over the 16 queues working in parallel (the assumption).
    dma_fixed_s: float = SEMAPHORE_TO_START_S / DMA_QUEUES
    launch_s: float = LAUNCH_OVERHEAD_S  # host dispatch of one kernel call, warm (assumed: see LAUNCH_OVERHEAD_S)
    # First call per shape and dtype: compile time. Fixed part: documented by a measurement, about 1.5 s per call
    # where the NKI frontend reruns for a small kernel on Inf2 (aws-neuron/nki-samples pull request 133). Per
    # instruction of the unrolled program: assumed, 0.1 ms; aws-neuron/aws-neuron-sdk issue 1374 reports
    # compiles of 30 minutes and more for large fused-matmul kernels, without instruction counts.
    compile_fixed_s: float = 1.5
    compile_s_per_instruction: float = 1e-4
    source: str = "defaults"  # where the constants come from (a file path, or "defaults")

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            problem = _field_problem(field.name, getattr(self, field.name))
            if problem:
                raise ValueError(f"cost.Calibration: {problem}")

    @classmethod
    def from_file(cls, path: str) -> Calibration:
        """The calibration in JSON file ``path``: an object of Calibration fields (missing ones keep their
        defaults; ``source`` defaults to the path). A ValueError names the file and the field at fault."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError) as e:
            raise ValueError(f"cost calibration file {path}: cannot read it as JSON ({e})") from None
        if not isinstance(data, Mapping):
            raise ValueError(
                f"cost calibration file {path}: expected a JSON object of Calibration fields, got {type(data).__name__}"
            )
        names = {field.name for field in dataclasses.fields(cls)}
        for name, value in data.items():
            if name not in names:
                raise ValueError(
                    f"cost calibration file {path}: unknown field {name!r} (fields: {', '.join(sorted(names))})"
                )
            problem = _field_problem(name, value)
            if problem:
                raise ValueError(f"cost calibration file {path}: field {problem}")
        return cls(**{"source": str(path), **data})


_DEFAULTS = Calibration()


def calibration() -> Calibration:
    """The active calibration: the JSON file named by TRN_BACKEND_NKI_CALIBRATION, else the defaults. The variable
    is read at each call, the file again whenever its modification time or size changed (routing asks for the
    calibration once per step: a stat, not a parse)."""
    path = os.environ.get(CALIBRATION_VARIABLE)
    if not path:
        return _DEFAULTS
    try:
        stat = os.stat(path)
    except OSError as e:
        raise ValueError(f"cost calibration file {path}: cannot read it as JSON ({e})") from None
    return _calibration_file(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=8)
def _calibration_file(path: str, mtime_ns: int, size: int) -> Calibration:
    return Calibration.from_file(path)


def _resolve(given: Calibration | None) -> Calibration:
    return calibration() if given is None else given


@dataclasses.dataclass(frozen=True)
class Generation:
    """Clocks, data paths and DMA of one NeuronCore generation (NKI_FACTS.md section 10)."""

    name: str
    tensor_hz: float
    vector_hz: float
    scalar_hz: float
    gpsimd_hz: float
    dma_bytes_per_s: float  # streaming DMA rate of one physical core (see TRN1, TRN2)
    hbm_bytes_per_s: float  # one physical core's share of the chip's HBM bandwidth, all cores streaming
    vector_lanes: int  # Vector Engine elements per partition per cycle (data-path width / 128 partitions)
    dge_instances: int = 0  # hardware descriptor-generation engines per physical core (NeuronCore-v3+)

    @property
    def bf16_flops(self) -> float:
        """Peak bf16 FLOP/s of one physical core: 128 x 128 multiply-adds per Tensor Engine cycle."""
        return 128 * 128 * 2 * self.tensor_hz

    def engine_hz(self, engine: str) -> float:
        return {"tensor": self.tensor_hz, "vector": self.vector_hz, "scalar": self.scalar_hz, "gpsimd": self.gpsimd_hz}[
            engine
        ]

    def lanes(self, engine: str) -> int:
        """Elements per partition per cycle: the Vector Engine's width; Scalar 128 (one per partition, both
        generations' arch guides); GpSimd undocumented, assumed as its 128 32-bit lanes (one per partition)."""
        return self.vector_lanes if engine == "vector" else 1


# NeuronCore-v2, clocks and data paths documented (trainium_inferentia2_arch.rst; Vector data path 128 elements
# per cycle). DMA rate fitted: the documented 272 GB/s per core (16 queues x 17 B/ns) is not reached by the legacy
# NKI tutorial's DMA-bound kernels; least squares with tensor_efficiency over the five calibration points (the
# three DMA-bound ones move runs of 256 B and 1 KiB) gives 147.5 GB/s. HBM documented: 820 GB/s per chip, 2 cores.
# No hardware DGE (NeuronCore-v3+).
TRN1 = Generation("trn1", 2.8e9, 1.12e9, 1.4e9, 1.4e9, 147.5e9, 820e9 / 2, 1)
# NeuronCore-v3, all documented. DMA: 16 x 23 B/ns = 368 GB/s per core; no DMA-bound trn2 measurement is
# published. HBM 2.9 TB/s per chip, 8 physical cores. Vector data path 256 elements per cycle for fp32 (512 for
# bf16 in its performance mode, not modelled: the model's counts carry no dtypes) (trainium2_arch.rst). Two
# hardware DGE instances per core (nki-dge.rst).
TRN2 = Generation("trn2", 2.4e9, 0.96e9, 1.2e9, 1.2e9, 368e9, 2.9e12 / 8, 2, DGE_INSTANCES)
GENERATIONS = {g.name: g for g in (TRN1, TRN2)}


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The modelled cost of one kernel call on one logical core: the scheduled time (``seconds``, the makespan of
    the slowest physical core, at least the HBM bound), busy seconds per engine (of the busiest physical core for
    each engine), and what it computes."""

    kernel: str
    generation: str
    flops: int
    peak_flops: float  # of the physical cores used, on the mode's Tensor Engine path (fp32: a quarter of bf16)
    engine_seconds: dict[str, float]  # busy seconds per engine (swdge descriptor generation counts on GpSimd)
    instructions: dict[str, int]  # all physical cores together
    dma_bytes: int
    sbuf_peak_bytes: int  # per partition, on the fullest physical core
    psum_banks_peak: int
    cores: int  # physical cores of the launch (LNC)
    program_instructions: int  # of the program the compiler emits (dynamic loop bodies once), busiest core
    compile_seconds: float  # the first call per shape and dtype
    seconds: float = 0.0  # the scheduled time of the call (``schedule``)
    # on the physical core that finishes last: seconds each compute engine sat idle waiting for an instruction's
    # operands (or a barrier) although it was free; "dge": seconds of hardware descriptor generation (busier DGE
    # instance)
    stall: dict[str, float] = dataclasses.field(default_factory=dict)

    @property
    def bound_by(self) -> str:
        """The busiest engine (the schedule's ``seconds`` can exceed its busy time: stalls)."""
        return max(self.engine_seconds, key=self.engine_seconds.__getitem__)

    @property
    def busiest_seconds(self) -> float:
        """The busiest engine's busy time: what the call would take if the engines overlapped perfectly."""
        return max(self.engine_seconds.values())

    @property
    def utilization(self) -> float:
        """Useful FLOPs over what the Tensor Engines of the physical cores used could do at their documented peak
        in the modelled time."""
        return self.flops / (self.seconds * self.peak_flops) if self.seconds else 0.0

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12 if self.seconds else 0.0

    def share(self, engine: str) -> float:
        """The fraction of the modelled time ``engine`` is busy."""
        return self.engine_seconds[engine] / self.seconds if self.seconds else 0.0


# --- what the schedule reads of a recorded run ---------------------------------------------------------------------
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
_TENSOR, _GPSIMD, _DMA = 0, 3, 4
_STATIC, _HWDGE, _SWDGE = 0, 1, 2  # a dma_copy's descriptors: precomputed, hardware DGE, software DGE (GpSimd)


class Recorded:
    """One physical core's run, as compact as the schedule allows (the cost model caches launches): its counts,
    peaks and program size, and its executed instructions in order as kinds (``kinds[kind_of[i]]`` is instruction
    i's (engine, instruction, *details), as ``Core.events`` keys) with the allocations each reads and writes
    (renumbered 0..n-1: ``touched[offsets[i]:split[i]]`` are read, ``touched[split[i]:offsets[i + 1]]`` written)."""

    __slots__ = (
        "events",
        "sbuf_peak",
        "banks_peak",
        "program_instructions",
        "kinds",
        "kind_of",
        "touched",
        "offsets",
        "split",
        "allocations",
        "control_flow",
    )

    def __init__(self, core) -> None:
        self.events = collections.Counter(core.events)
        self.control_flow = tuple(getattr(core, "control_flow", ()))  # its dynamic loops and barriers, in order
        self.sbuf_peak, self.banks_peak = core.sbuf_peak, core.banks_peak
        self.program_instructions = core.program_instructions
        kinds: dict[tuple, int] = {}
        names: dict[int, int] = {}
        kind_of, touched, offsets, split = array.array("I"), array.array("I"), array.array("I", [0]), array.array("I")
        for engine, instruction, details, reads, writes in core.trace:
            kind_of.append(kinds.setdefault((engine, instruction, *details), len(kinds)))
            touched.extend(names.setdefault(serial, len(names)) for serial in reads)
            split.append(len(touched))
            touched.extend(names.setdefault(serial, len(names)) for serial in writes)
            offsets.append(len(touched))
        self.kinds = tuple(kinds)
        self.kind_of, self.touched, self.offsets, self.split = kind_of, touched, offsets, split
        self.allocations = len(names)

    def __len__(self) -> int:
        return len(self.kind_of)


class RecordedLaunch:
    """A launch's physical cores as ``Recorded`` runs (what ``_counted`` caches instead of the CPU model's Launch,
    whose trace, names and lifetimes take far more memory)."""

    __slots__ = ("cores",)

    def __init__(self, run) -> None:
        self.cores = tuple(c if isinstance(c, Recorded) else Recorded(c) for c in getattr(run, "cores", (run,)))

    @property
    def events(self) -> collections.Counter:
        return sum((c.events for c in self.cores), collections.Counter())


def record(run) -> RecordedLaunch:
    """``run`` (a CPU-model ``Core`` or ``Launch``, or anything with their ``events``, ``trace``, ``sbuf_peak``,
    ``banks_peak`` and ``program_instructions``, or a RecordedLaunch) as the schedule reads it."""
    return run if isinstance(run, RecordedLaunch) else RecordedLaunch(run)


def _dge_mode(flag: object, generation: Generation) -> int:
    """A dma_copy event's dynamic field as a descriptor mode: False (or absent) static; "hwdge" or "swdge"; True
    (the older boolean key: some dynamic offset) hardware DGE where the generation has it, else software DGE. A
    generation without hardware DGE (NeuronCore-v2) generates every dynamic descriptor on GpSimd."""
    if flag is False or flag is None:
        return _STATIC
    if flag not in (True, "hwdge", "swdge"):
        raise ValueError(
            f"cost model: a dma_copy's dynamic field is {flag!r}; expected False, True, 'hwdge' or 'swdge'"
        )
    return _HWDGE if flag in (True, "hwdge") and generation.dge_instances else _SWDGE


def _kind_costs(kinds: tuple[tuple, ...], generation: Generation, c: Calibration):
    """Per kind: (engine index, seconds, descriptor mode, is a barrier). Seconds are the engine's busy time for
    compute instructions and the DMA bandwidth's for a dma_copy (the documented and fitted per-instruction costs
    listed in the module docstring)."""
    rate = c.dma_bytes_per_s or generation.dma_bytes_per_s
    engines, seconds, modes, barriers = [], [], [], []
    for engine, instruction, *details in kinds:
        if engine not in ENGINES:
            raise ValueError(
                f"cost model: instruction {instruction!r} on engine {engine!r}; the model knows {', '.join(ENGINES)}"
            )
        mode, barrier = _STATIC, instruction == "core_barrier"
        if engine == "dma":
            size, run = details[:2]
            cost = c.dma_fixed_s + size * (run + c.dma_half_run_bytes) / (run * rate)
            mode = _dge_mode(details[2] if len(details) > 2 else False, generation)
        elif instruction == "nc_matmul":
            moving, _, _, fp32_operands = details
            cycles = max(moving, MATMUL_MIN_CYCLES) * (FP32_MATMUL_FACTOR if fp32_operands else 1)
            cost = cycles / generation.tensor_hz / c.tensor_efficiency
        elif instruction == "nc_transpose" and engine == "tensor":
            partitions, width = details
            cycles = max(partitions, MATMUL_MIN_CYCLES) * (FP32_TRANSPOSE_FACTOR if width == 4 else 1)
            cost = cycles / generation.tensor_hz / c.tensor_efficiency
        elif barrier or not details or isinstance(details[0], bool) or not isinstance(details[0], int):
            cost = INSTRUCTION_CYCLES / generation.engine_hz(engine)  # a barrier: one instruction (assumed)
        else:
            per_element = TENSOR_TENSOR_CYCLES if instruction == "tensor_tensor" else 1
            cycles = INSTRUCTION_CYCLES + per_element * details[0] / generation.lanes(engine)
            cost = cycles / generation.engine_hz(engine)
            if engine == "tensor":
                cost /= c.tensor_efficiency
        engines.append(ENGINES.index(engine))
        seconds.append(cost)
        modes.append(mode)
        barriers.append(barrier)
    return engines, seconds, modes, barriers


# --- the schedule -------------------------------------------------------------------------------------------------
_EPSILON_S = 1e-15  # free DMA capacity shorter than this is dropped (rounding leftovers)


class _Core:
    """The schedule's state of one physical core while its instructions are placed in program order."""

    def __init__(self, program: Recorded, generation: Generation, c: Calibration) -> None:
        self.program = program
        self.engines, self.seconds, self.modes, self.barriers = _kind_costs(program.kinds, generation, c)
        self.kind_of = program.kind_of.tolist()
        self.touched = program.touched.tolist()
        self.offsets = program.offsets.tolist()
        self.split = program.split.tolist()
        self.position = 0
        self.floor = 0.0  # nothing starts before it (the release of the last barrier)
        self.free = [0.0] * 4  # when each in-order engine (tensor, vector, scalar, gpsimd) is next free
        self.busy = [0.0] * 5
        self.stall = [0.0] * 4
        n = program.allocations
        self.written = [0.0] * n  # per allocation: when every write issued so far has finished
        self.written_by_engines = [0.0] * n  # the same over writes by compute engines (DMA writes do not wait for DMA)
        self.read = [0.0] * n  # when every read issued so far has finished
        # the core's DMA bandwidth as a server: its free capacity as intervals [starts[j], ends[j]) in time order
        self.gap_starts, self.gap_ends = [0.0], [math.inf]
        self.dge = [0.0] * generation.dge_instances  # when each hardware DGE instance is next free
        self.dge_busy = [0.0] * generation.dge_instances
        self.end = 0.0

    def serve(self, ready: float, work: float) -> float:
        """Give ``work`` seconds of the DMA bandwidth from ``ready`` on, in its earliest free capacity (filling
        gaps left by transfers that waited for their operands); returns when the transfer completes."""
        starts, ends = self.gap_starts, self.gap_ends
        first = bisect.bisect_right(ends, ready)
        if first == len(ends) - 1:  # the open interval after everything placed: no gap to fill (most transfers)
            t = starts[first]
            if ready > t:
                if ready - t > _EPSILON_S:
                    starts.insert(first, t)
                    ends.insert(first, ready)
                t = ready
            starts[-1] = t + work
            return t + work
        t = max(starts[first], ready)
        last, left = first, work
        while ends[last] - t < left:
            left -= ends[last] - t
            last += 1
            t = starts[last]
        finish = t + left
        kept_starts, kept_ends = [], []
        if starts[first] < ready and ready - starts[first] > _EPSILON_S:
            kept_starts.append(starts[first])
            kept_ends.append(ready)
        if ends[last] - finish > _EPSILON_S:
            kept_starts.append(finish)
            kept_ends.append(ends[last])
        starts[first : last + 1] = kept_starts
        ends[first : last + 1] = kept_ends
        return finish

    def run(self, dge_s: float, latency_s: float) -> tuple[int, float] | None:
        """Place instructions from ``position`` on until the next barrier or the end. At a barrier: (its index,
        when it could start here), leaving it for ``release``; at the end None."""
        kind_of, touched, offsets, split = self.kind_of, self.touched, self.offsets, self.split
        engines, seconds, modes, barriers = self.engines, self.seconds, self.modes, self.barriers
        free, busy, stall = self.free, self.busy, self.stall
        written, by_engines, read = self.written, self.written_by_engines, self.read
        serve = self.serve
        floor, end = self.floor, self.end
        for i in range(self.position, len(kind_of)):
            k = kind_of[i]
            engine, cost = engines[k], seconds[k]
            lo, mid, hi = offsets[i], split[i], offsets[i + 1]
            reads, writes = touched[lo:mid], touched[mid:hi]
            if engine == _DMA:
                t = floor
                for a in reads:  # read after write
                    if written[a] > t:
                        t = written[a]
                for a in writes:  # write after read, and after compute engines' writes
                    if read[a] > t:
                        t = read[a]
                    if by_engines[a] > t:
                        t = by_engines[a]
                mode = modes[k]
                if mode == _HWDGE:
                    dge = self.dge
                    unit = dge.index(min(dge))
                    t = max(t, dge[unit]) + dge_s
                    dge[unit] = t
                    self.dge_busy[unit] += dge_s
                elif mode == _SWDGE:
                    start = max(t, free[_GPSIMD])
                    stall[_GPSIMD] += start - free[_GPSIMD]
                    t = free[_GPSIMD] = start + dge_s
                    busy[_GPSIMD] += dge_s
                finish = serve(t + latency_s, cost)
                busy[_DMA] += cost
                for a in writes:
                    if written[a] < finish:
                        written[a] = finish
            else:
                t = free[engine]
                if floor > t:
                    t = floor
                for a in reads:
                    if written[a] > t:
                        t = written[a]
                for a in writes:
                    if read[a] > t:
                        t = read[a]
                    if written[a] > t:
                        t = written[a]
                if barriers[k]:
                    self.position, self.end = i, end
                    return i, t
                stall[engine] += t - free[engine]
                finish = free[engine] = t + cost
                busy[engine] += cost
                for a in writes:
                    if written[a] < finish:
                        written[a] = finish
                    if by_engines[a] < finish:
                        by_engines[a] = finish
            for a in reads:
                if read[a] < finish:
                    read[a] = finish
            if finish > end:
                end = finish
        self.position, self.end = len(kind_of), end
        return None

    def release(self, arrival: float, release: float) -> None:
        """The barrier at ``position`` (reached here at ``arrival``) completes at ``release`` on every core."""
        i = self.position
        k = self.kind_of[i]
        engine = self.engines[k]
        self.stall[engine] += arrival - self.free[engine]
        self.busy[engine] += self.seconds[k]
        self.free[engine] = self.floor = release
        for j in range(self.offsets[i], self.split[i]):
            self.read[self.touched[j]] = max(self.read[self.touched[j]], release)
        for j in range(self.split[i], self.offsets[i + 1]):
            a = self.touched[j]
            self.written[a] = self.written_by_engines[a] = max(self.written[a], release)
        self.end = max(self.end, release)
        self.position = i + 1


@dataclasses.dataclass(frozen=True)
class Schedule:
    """The list schedule of one launch: per physical core its makespan, busy seconds per engine (tensor, vector,
    scalar, gpsimd, dma), operand-wait seconds per compute engine and the busier DGE instance's seconds."""

    ends: tuple[float, ...]
    busy: tuple[tuple[float, ...], ...]
    stall: tuple[tuple[float, ...], ...]
    dge: tuple[float, ...]


def schedule(run, generation: Generation, calibration: Calibration | None = None) -> Schedule:
    """List-schedule the instructions ``run`` recorded (a Core, a Launch or a RecordedLaunch: every physical core
    of the launch) under ``calibration`` (None: the active one); the rules are the module docstring's."""
    c = _resolve(calibration)
    cores = [_Core(program, generation, c) for program in record(run).cores]
    dge_s, latency_s = DGE_SECONDS, DMA_LATENCY_S
    while True:
        stops = [core.run(dge_s, latency_s) for core in cores]
        if all(stop is None for stop in stops):
            break
        if any(stop is None for stop in stops):
            at = [None if stop is None else stop[0] for stop in stops]
            raise ValueError(
                f"cost model: the physical cores of a launch reach different numbers of barriers "
                f"(next barrier per core, None for none: {at}); a core_barrier must appear in every "
                "core's program"
            )
        reached = cast(list[tuple[int, float]], stops)  # no core's stop is None (checked above)
        arrival = max(t for _, t in reached)
        for core, (i, t) in zip(cores, reached, strict=True):
            core.release(t, arrival + core.seconds[core.kind_of[i]])
    return Schedule(
        tuple(core.end for core in cores),
        tuple(tuple(core.busy) for core in cores),
        tuple(tuple(core.stall) for core in cores),
        tuple(max(core.dge_busy, default=0.0) for core in cores),
    )


def estimate(
    run, generation: Generation, kernel: str, flops: int, fp32: bool, calibration: Calibration | None = None
) -> Estimate:
    """The cost of the run recorded by the CPU model (a ``Core``, a launch with ``.cores``, one per physical core,
    or a ``RecordedLaunch``) on ``generation`` under ``calibration`` (None: the active one): the list schedule's
    makespan over the launch's physical cores, and at least the launch's DMA bytes over the cores' HBM share
    together (they share their HBM)."""
    c = _resolve(calibration)
    recorded = record(run)
    cores = recorded.cores
    planned = schedule(recorded, generation, c)
    dma_bytes = sum(
        n * details[0] for core in cores for (engine, _, *details), n in core.events.items() if engine == "dma"
    )
    hbm_s = dma_bytes / (len(cores) * generation.hbm_bytes_per_s)
    seconds = {engine: max(busy[e] for busy in planned.busy) for e, engine in enumerate(ENGINES)}
    seconds["dma"] = max(seconds["dma"], hbm_s)
    last = max(range(len(cores)), key=planned.ends.__getitem__)
    stall = dict(zip(ENGINES[:4], planned.stall[last], strict=True))
    stall["dge"] = planned.dge[last]
    counts = dict.fromkeys(ENGINES, 0)
    for core in cores:
        for (engine, *_), n in core.events.items():
            counts[engine] += n
    # the program each physical core runs: a dynamic loop's body counts once (CPU model: Core.program_instructions)
    program = max(core.program_instructions for core in cores)
    peak = len(cores) * generation.bf16_flops / (FP32_MATMUL_FACTOR if fp32 else 1)
    return Estimate(
        kernel,
        generation.name,
        flops,
        peak,
        seconds,
        counts,
        dma_bytes,
        max(core.sbuf_peak for core in cores),
        max(core.banks_peak for core in cores),
        len(cores),
        program,
        c.compile_fixed_s + c.compile_s_per_instruction * program,
        max(max(planned.ends), hbm_s),
        stall,
    )


@functools.lru_cache(maxsize=1024)
def runs_as(mode: str) -> str:
    """The kernel the kernel layer runs for a step of ``mode``: sr's steps have float32/float64 results, with
    nothing to round stochastically, so they run fast's kernel (``matmul_sr``, which rounds to bf16, is modelled
    under "sr" but never called by the kernel layer; see docs/trainium.md)."""
    return "fast" if mode == "sr" else mode


def modelled(
    kernel: str,
    mode: str,
    bmkn: tuple[int, int, int, int],
    generation: str = "trn2",
    a_is_transposed: bool = False,
    float64: bool = False,
    slices: int | None = None,
    calibration: Calibration | None = None,
    lnc: int | None = None,
) -> Estimate:
    """The modelled cost of ``nki.<kernel>[<mode>]`` on [B, M, K] x [B, K, N] as the kernel layer calls it,
    counted by running the kernel on the CPU model without arithmetic: fast gets bf16 words, native fp32; dd and
    bf16x6 get fp32 data and split it on chip (``float64``: words split on the host, the product phase only);
    ozaki gets its digit slices (``slices``, default the dtype's; the host's digit extraction and level combination
    are not part of the kernel); sr gets fp32 and rounds its result to bf16. ``calibration``: None for the active
    one (``calibration()``). ``lnc``: the launch's physical cores (None: the runtime's, as the kernel layer
    launches)."""
    b, m, k, n = bmkn
    from . import model

    # a launch at the runtime's LNC on that generation (trn2: 2 physical cores unless NEURON_LOGICAL_NC_CONFIG)
    if lnc is None:
        lnc = model.core.runtime_lnc(model.core.TARGETS[generation])
    run = _counted(kernel, mode, (b, m, k, n), generation, a_is_transposed, float64, slices, lnc)
    return estimate(
        run, GENERATIONS[generation], f"nki.{kernel}[{mode}]", 2 * b * m * k * n, mode == "native", calibration
    )


@functools.lru_cache(maxsize=256)
def _counted(
    kernel: str,
    mode: str,
    bmkn: tuple[int, int, int, int],
    generation: str,
    a_is_transposed: bool,
    float64: bool,
    slices: int | None,
    lnc: int,
):
    """The CPU model's record of one counting run of the kernel ``modelled`` describes, as the schedule reads it
    (a ``RecordedLaunch``: independent of the calibration, which only prices it)."""
    from .. import reference
    from . import WORDS, jitted, model, rng_states, table

    b, m, k, n = bmkn
    nl = model.language
    lead = (b,) if kernel == "bmm" else ()
    a_shape = lead + ((k, m) if a_is_transposed else (m, k))

    def inputs(dtype, count=None):
        words = () if count is None else (count,)
        return model.shape_only(words + a_shape, dtype), model.shape_only(words + lead + (k, n), dtype)

    if mode in ("fast", "native"):
        name, args = kernel, (*inputs(nl.bfloat16 if mode == "fast" else nl.float32), a_is_transposed, mode == "fast")
    elif mode in WORDS and float64:
        name, args = f"{kernel}_words", (*inputs(nl.bfloat16, WORDS[mode]), a_is_transposed)
    elif mode in WORDS:
        name, args = f"{kernel}_split", (*inputs(nl.float32), a_is_transposed, WORDS[mode])
    elif mode == "ozaki":
        slices = slices or reference.ozaki_default_slices(torch.float64 if float64 else torch.float32)
        name, args = f"{kernel}_levels", (*inputs(nl.bfloat16, slices), a_is_transposed)
    elif mode == "sr" and kernel == "matmul":
        states = model.shape_only(tuple(rng_states(0, lnc).shape), nl.int32)  # the generator states per program
        name, args = "matmul_sr", (*inputs(nl.float32), a_is_transposed, states)
    else:
        raise ValueError(f"no NKI kernel {kernel!r} for mode {mode!r}")
    # the plan's table (which unit each loop iteration takes): its values are data, never read when counting
    plan = table(
        name, args[0].shape, args[1].shape, a_is_transposed, lnc, args[3] if name.endswith("_split") else 1
    ).numpy()
    fn = jitted(name, "model")
    with model.targeting(generation), model.counting_only():
        fn[lnc](*args, plan)
    recorded = record(fn.last_run)  # compact: the Launch's trace, names and lifetimes are dropped
    fn.last_run = None  # nor does the shared jitted kernel keep it (a counting run's trace is large)
    return recorded


def default_min_flops(mode: str, generation: str = "trn2", calibration: Calibration | None = None) -> float:
    """The routing threshold: FLOPs of the smallest cube n^3 (n a multiple of the 128 tile) whose modelled
    ``nki.matmul[mode]`` time reaches the launch overhead (``calibration.launch_s``; None: the active
    calibration); below it the launch costs more than the kernel saves."""
    return _min_flops(mode, generation, _resolve(calibration))


@functools.lru_cache(maxsize=64)
def _min_flops(mode: str, generation: str, calibration: Calibration) -> float:
    def reaches(n: int) -> bool:
        return (
            modelled("matmul", mode, (1, n, n, n), generation, calibration=calibration).seconds >= calibration.launch_s
        )

    hi = 128
    while not reaches(hi):  # doubling, then bisection in tiles
        hi *= 2
    lo = hi // 2 // 128 + 1 if hi > 128 else 1
    hi //= 128
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if reaches(128 * mid) else (mid + 1, hi)
    return 2.0 * (128 * lo) ** 3


def format_seconds(seconds: float) -> str:
    """``seconds`` to 3 significant digits (trailing zeros kept) in the largest unit that keeps it >= 1 (s, ms, us,
    ns). Rounded before the unit is picked, so 999.96 us reads 1.00 ms rather than 1e+03 us."""
    seconds = float(f"{seconds:.3g}")
    units = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6))
    unit, scale = next(((name, size) for name, size in units if seconds >= size), ("ns", 1e-9))
    digits = f"{seconds / scale:#.3g}".rstrip(".")  # '#' keeps 2.80's zero, and leaves 120 as '120.'
    return f"{digits} {unit}"
