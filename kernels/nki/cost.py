"""The cost model: a modelled time per NKI kernel call on trn2 (trn1 for reference), from the instructions the
CPU model counts, documented hardware numbers (NKI_FACTS.md sections 4, 6, 10 and 13) and constants fitted to
published measurements (``Calibration``; docs/trainium.md lists each calibration point, its source and the
model's error). The rules, each with its source where the code states it:

- engines overlap perfectly: a physical core takes as long as its busiest engine (Tensor, Vector, Scalar, GpSimd,
  DMA); a call takes as long as its slowest physical core (LNC=2 on trn2: two physical cores per logical core);
  no pipeline fill and no dependency stalls, beyond what the fitted Tensor Engine efficiency absorbs;
- nc_matmul: max(N, 64) Tensor Engine cycles for a moving free size N (the documented initiation interval), four
  times that for fp32 operands, at ``Calibration.tensor_efficiency`` of the documented rate; LoadStationary runs
  in the background. nc_transpose on the Tensor Engine is a matmul against an identity of P columns;
- Vector, Scalar and GpSimd instructions: INSTRUCTION_CYCLES each, plus the elements per partition over the
  engine's data-path width (two cycles per element for tensor_tensor's two inputs);
- DMA: each dma_copy costs dma_fixed_s + S (R + dma_half_run_bytes) / (R rate) for S bytes in contiguous runs of
  R bytes, on the DMA queues of its physical core; the physical cores of a call share their HBM (at most
  ``Generation.hbm_bytes_per_s`` per core);
- compile: every Python loop unrolls at specialization and a ``nl.fori_loop`` body compiles once, so a call's
  program is the CPU model's ``program_instructions``; compiling it costs compile_fixed_s +
  compile_s_per_instruction per instruction, once per shape and dtype.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
from collections.abc import Mapping

import torch

__all__ = ["Calibration", "calibration", "CALIBRATION_VARIABLE", "Generation", "TRN1", "TRN2", "GENERATIONS",
           "Estimate", "estimate", "modelled", "default_min_flops", "format_seconds", "LAUNCH_OVERHEAD_S"]

MATMUL_MIN_CYCLES = 64  # MM_INIT_LATENCY: a matmul costs at least this many Tensor Engine cycles
FP32_MATMUL_FACTOR = 4  # fp32 operands: two FP32_LO_HI instructions, a quarter of the bf16 rate
FP32_TRANSPOSE_FACTOR = 2  # "fp32 transpose is 2x faster" than an fp32 matmul pass
# Fixed cost of a Vector/Scalar/GpSimd instruction: the arch guide's ~60-cycle SBUF/PSUM access overhead
# (trainium_inferentia2_arch.rst, "Tensor access overhead"; 100 cycles for back-to-back dependent instructions)
INSTRUCTION_CYCLES = 64
TENSOR_TENSOR_CYCLES = 2  # per element per data-path lane: two input tiles (arch guide: ~2N cycles)
CALIBRATION_VARIABLE = "TRN_BACKEND_NKI_CALIBRATION"
# DMA (SDK nki/deep-dives/nki-dma-bandwidth-guide.rst): 16 DMA queues (engines) per core, each transfer about
# 1.3 us from semaphore to start. With the 16 queues busy in parallel, a transfer holds its queue for that time,
# so it adds 1.3 us / 16 to the core's DMA time: the default dma_fixed_s.
DMA_QUEUES = 16
SEMAPHORE_TO_START_S = 1.3e-6
# The host's cost of one kernel call, warm. No per-kernel launch figure is published for NKI: this is
# vllm-neuron's idle gap (about 0.44 ms) between synchronous whole-model calls (dispatch, allocation, Python),
# not a kernel launch measurement; assumed as the order of a call's host cost. The routing threshold sits where
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
    """The constants of the cost model that a measurement can refit (``check-neuron --calibrate``). The defaults
    are fitted to published measurements (docs/trainium.md lists each point, its source and the model's error).

    The fields are the interface between the cost model and check-neuron's calibration file (JSON of these names;
    a missing field keeps its default)."""

    # Achieved fraction of the documented nc_matmul rate. Fitted: the legacy NKI tutorial's best kernel ran at
    # 85.2% of trn1's peak, a hand kernel at 90.9% of trn2's (nki-autotune); 0.88 is within 3.5% of both.
    tensor_efficiency: float = 0.88
    # Streaming DMA rate per physical core (None: the generation's, Generation.dma_bytes_per_s).
    dma_bytes_per_s: float | None = None
    # The contiguous run at which DMA reaches half its streaming rate. Assumed from the DMA guide's curve (runs of
    # 256 B - 2 KiB per partition below peak, >= 2 KiB near it, >= 4 KiB saturating): 256 B gives 50% at 256 B,
    # 80% at 1 KiB, 89% at 2 KiB, 94% at 4 KiB. The trn1 points (256 B and 1 KiB runs) fit it within 8%.
    dma_half_run_bytes: float = 256.0
    dma_fixed_s: float = SEMAPHORE_TO_START_S / DMA_QUEUES  # per dma_copy, after overlap across the DMA queues
    launch_s: float = LAUNCH_OVERHEAD_S  # host dispatch of one kernel call, warm (assumed: see LAUNCH_OVERHEAD_S)
    # First call per shape and dtype: compile time. Fixed part: about 1.5 s per call where the NKI frontend reruns
    # for a small kernel on Inf2 (aws-neuron/nki-samples pull request 133). Per instruction of the unrolled
    # program: assumed, 0.1 ms; aws-neuron/aws-neuron-sdk issue 1374 reports compiles of 30 minutes and more for
    # large fused-matmul kernels, without instruction counts.
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
            raise ValueError(f"cost calibration file {path}: expected a JSON object of Calibration fields, got "
                             f"{type(data).__name__}")
        names = {field.name for field in dataclasses.fields(cls)}
        for name, value in data.items():
            if name not in names:
                raise ValueError(f"cost calibration file {path}: unknown field {name!r} (fields: "
                                 f"{', '.join(sorted(names))})")
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

    @property
    def bf16_flops(self) -> float:
        """Peak bf16 FLOP/s of one physical core: 128 x 128 multiply-adds per Tensor Engine cycle."""
        return 128 * 128 * 2 * self.tensor_hz

    def engine_hz(self, engine: str) -> float:
        return {"tensor": self.tensor_hz, "vector": self.vector_hz, "scalar": self.scalar_hz,
                "gpsimd": self.gpsimd_hz}[engine]

    def lanes(self, engine: str) -> int:
        """Elements per partition per cycle: the Vector Engine's width; Scalar 128 (one per partition, both
        generations' arch guides); GpSimd undocumented, assumed as its 128 32-bit lanes (one per partition)."""
        return self.vector_lanes if engine == "vector" else 1


# NeuronCore-v2. DMA: the documented 272 GB/s per core (16 queues x 17 B/ns) was not reached by the legacy NKI
# tutorial's DMA-bound kernels: fitted to their three times (runs of 256 B and 1 KiB), 151 GB/s. HBM 820 GB/s per
# chip, 2 cores. Vector data path 128 elements per cycle (trainium_inferentia2_arch.rst).
TRN1 = Generation("trn1", 2.8e9, 1.12e9, 1.4e9, 1.4e9, 151e9, 820e9 / 2, 1)
# NeuronCore-v3. DMA: documented 16 x 23 B/ns = 368 GB/s per core; no DMA-bound trn2 measurement is published.
# HBM 2.9 TB/s per chip, 8 physical cores. Vector data path 256 elements per cycle for fp32 (512 for bf16 in its
# performance mode, not modelled: the model's counts carry no dtypes) (trainium2_arch.rst).
TRN2 = Generation("trn2", 2.4e9, 0.96e9, 1.2e9, 1.2e9, 368e9, 2.9e12 / 8, 2)
GENERATIONS = {g.name: g for g in (TRN1, TRN2)}


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The modelled cost of one kernel call on one logical core: busy seconds per engine (of its slowest physical
    core), and what it computes."""

    kernel: str
    generation: str
    flops: int
    peak_flops: float  # of the physical cores used, on the mode's Tensor Engine path (fp32: a quarter of bf16)
    engine_seconds: dict[str, float]
    instructions: dict[str, int]  # all physical cores together
    dma_bytes: int
    sbuf_peak_bytes: int  # per partition, on the fullest physical core
    psum_banks_peak: int
    cores: int  # physical cores of the launch (LNC)
    program_instructions: int  # of the program the compiler emits (dynamic loop bodies once), busiest core
    compile_seconds: float  # the first call per shape and dtype

    @property
    def seconds(self) -> float:
        return max(self.engine_seconds.values())

    @property
    def bound_by(self) -> str:
        return max(self.engine_seconds, key=self.engine_seconds.get)

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


def _core_seconds(core, generation: Generation, c: Calibration) -> tuple[dict[str, float], int]:
    """Busy seconds per engine of one physical core's recorded run, and the bytes its DMA moved."""
    cycles = dict.fromkeys(("tensor", "vector", "scalar", "gpsimd"), 0.0)
    dma_seconds, dma_bytes = 0.0, 0
    rate = c.dma_bytes_per_s or generation.dma_bytes_per_s
    for (engine, instruction, *details), n in core.events.items():
        if engine == "dma":
            size, run = details[:2]
            dma_seconds += n * (c.dma_fixed_s + size * (run + c.dma_half_run_bytes) / (run * rate))
            dma_bytes += n * size
        elif instruction == "nc_matmul":
            moving, _, _, fp32_operands = details
            cycles[engine] += n * max(moving, MATMUL_MIN_CYCLES) * (FP32_MATMUL_FACTOR if fp32_operands else 1)
        elif instruction == "nc_transpose" and engine == "tensor":
            partitions, width = details
            cycles[engine] += n * max(partitions, MATMUL_MIN_CYCLES) * (FP32_TRANSPOSE_FACTOR if width == 4 else 1)
        else:
            per_element = TENSOR_TENSOR_CYCLES if instruction == "tensor_tensor" else 1
            cycles[engine] += n * (INSTRUCTION_CYCLES + per_element * details[0] / generation.lanes(engine))
    seconds = {engine: count / generation.engine_hz(engine) for engine, count in cycles.items()}
    seconds["tensor"] /= c.tensor_efficiency
    seconds["dma"] = dma_seconds
    return seconds, dma_bytes


def estimate(run, generation: Generation, kernel: str, flops: int, fp32: bool,
             calibration: Calibration | None = None) -> Estimate:
    """The cost of the run recorded by the CPU model (a ``Core``, or a launch with ``.cores``, one per physical
    core) on ``generation`` under ``calibration`` (None: the active one). The call lasts as long as its slowest
    physical core; the DMA of all its cores shares their HBM, so the DMA time is also at least the bytes moved
    over the cores' HBM share together."""
    c = _resolve(calibration)
    cores = getattr(run, "cores", (run,))
    per_core = [_core_seconds(core, generation, c) for core in cores]
    seconds = {engine: max(s[engine] for s, _ in per_core) for engine in per_core[0][0]}
    dma_bytes = sum(b for _, b in per_core)
    seconds["dma"] = max(seconds["dma"], dma_bytes / (len(cores) * generation.hbm_bytes_per_s))
    counts = dict.fromkeys(seconds, 0)
    for core in cores:
        for (engine, *_), n in core.events.items():
            counts[engine] += n
    # the program each physical core runs: a dynamic loop's body counts once (CPU model: Core.program_instructions)
    program = max(core.program_instructions for core in cores)
    peak = len(cores) * generation.bf16_flops / (FP32_MATMUL_FACTOR if fp32 else 1)
    return Estimate(kernel, generation.name, flops, peak, seconds, counts, dma_bytes,
                    max(core.sbuf_peak for core in cores), max(core.banks_peak for core in cores), len(cores),
                    program, c.compile_fixed_s + c.compile_s_per_instruction * program)


@functools.lru_cache(maxsize=1024)
def runs_as(mode: str) -> str:
    """The kernel the kernel layer runs for a step of ``mode``: sr's steps have float32/float64 results, with
    nothing to round stochastically, so they run fast's kernel (``matmul_sr``, which rounds to bf16, is modelled
    under "sr" but never called by the kernel layer; see docs/trainium.md)."""
    return "fast" if mode == "sr" else mode


def modelled(kernel: str, mode: str, bmkn: tuple[int, int, int, int], generation: str = "trn2",
             a_is_transposed: bool = False, float64: bool = False, slices: int | None = None,
             calibration: Calibration | None = None) -> Estimate:
    """The modelled cost of ``nki.<kernel>[<mode>]`` on [B, M, K] x [B, K, N] as the kernel layer calls it,
    counted by running the kernel on the CPU model without arithmetic: fast gets bf16 words, native fp32; dd and
    bf16x6 get fp32 data and split it on chip (``float64``: words split on the host, the product phase only);
    ozaki gets its digit slices (``slices``, default the dtype's; the host's digit extraction and level combination
    are not part of the kernel); sr gets fp32 and rounds its result to bf16. ``calibration``: None for the active
    one (``calibration()``)."""
    b, m, k, n = bmkn
    from . import model

    # a launch at the runtime's LNC on that generation (trn2: 2 physical cores unless NEURON_LOGICAL_NC_CONFIG)
    lnc = model.core.runtime_lnc(model.core.TARGETS[generation])
    run = _counted(kernel, mode, (b, m, k, n), generation, a_is_transposed, float64, slices, lnc)
    return estimate(run, GENERATIONS[generation], f"nki.{kernel}[{mode}]", 2 * b * m * k * n, mode == "native",
                    calibration)


@functools.lru_cache(maxsize=256)
def _counted(kernel: str, mode: str, bmkn: tuple[int, int, int, int], generation: str, a_is_transposed: bool,
             float64: bool, slices: int | None, lnc: int):
    """The CPU model's record of one counting run of the kernel ``modelled`` describes (independent of the
    calibration, which only prices it)."""
    from .. import reference
    from . import WORDS, jitted, model, rng_states

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
        states = model.shape_only(tuple(rng_states(0, lnc).shape), nl.uint32)  # the generator states per program
        name, args = "matmul_sr", (*inputs(nl.float32), a_is_transposed, states)
    else:
        raise ValueError(f"no NKI kernel {kernel!r} for mode {mode!r}")
    fn = jitted(name, "model")
    with model.targeting(generation), model.counting_only():
        fn[lnc](*args)
    return fn.last_run


def default_min_flops(mode: str, generation: str = "trn2", calibration: Calibration | None = None) -> float:
    """The routing threshold: FLOPs of the smallest cube n^3 (n a multiple of the 128 tile) whose modelled
    ``nki.matmul[mode]`` time reaches the launch overhead (``calibration.launch_s``; None: the active
    calibration); below it the launch costs more than the kernel saves."""
    return _min_flops(mode, generation, _resolve(calibration))


@functools.lru_cache(maxsize=64)
def _min_flops(mode: str, generation: str, calibration: Calibration) -> float:
    def reaches(n: int) -> bool:
        return modelled("matmul", mode, (1, n, n, n), generation, calibration=calibration).seconds >= \
            calibration.launch_s

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
