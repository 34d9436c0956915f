"""The cost model: a modelled time per NKI kernel call on trn2 (trn1 for reference), from the instructions the
CPU model counts and the documented costs (NKI_FACTS.md sections 4, 6 and 10). Assumptions, also in
docs/trainium.md:

- engines overlap perfectly: the call takes as long as its busiest engine (Tensor, Vector, Scalar, GpSimd, DMA);
  no pipeline fill, no dependency stalls, no kernel launch (that is LAUNCH_OVERHEAD_S, outside the kernel);
- nc_matmul: max(N, 64) Tensor Engine cycles for a moving free size N (the documented initiation interval), four
  times that for fp32 operands; LoadStationary runs in the background. nc_transpose on the Tensor Engine is a
  matmul against an identity of P columns (P the data's partitions), fp32 at twice the bf16 cost;
- Vector, Scalar and GpSimd instructions process one element per partition per cycle at the engine's clock (128
  lanes), tensor_tensor two (its documented ~2N), plus INSTRUCTION_CYCLES of fixed cost each (assumed);
- DMA moves bytes at the core's aggregate DMA bandwidth; a contiguous run shorter than DMA_MIN_RUN bytes costs as
  much as one of DMA_MIN_RUN (the DMA guide asks for >= 2 KiB per partition to stream well; assumed).
"""

from __future__ import annotations

import dataclasses
import functools

import torch

__all__ = ["Calibration", "Generation", "TRN1", "TRN2", "GENERATIONS", "Estimate", "estimate", "modelled", "default_min_flops",
           "format_seconds", "LAUNCH_OVERHEAD_S"]

MATMUL_MIN_CYCLES = 64  # MM_INIT_LATENCY: a matmul costs at least this many Tensor Engine cycles
FP32_MATMUL_FACTOR = 4  # fp32 operands: two FP32_LO_HI instructions, a quarter of the bf16 rate
FP32_TRANSPOSE_FACTOR = 2  # "fp32 transpose is 2x faster" than an fp32 matmul pass
INSTRUCTION_CYCLES = 64  # fixed cost of a Vector/Scalar/GpSimd instruction (assumed, like MM_INIT_LATENCY)
TENSOR_TENSOR_CYCLES = 2  # per element per partition (documented: ~2N cycles)
DMA_MIN_RUN = 512  # bytes: a shorter contiguous run costs as much as this (assumed)
# Host dispatch of one NKI kernel call on a Neuron device (the vllm-neuron figure): where a step's modelled
# kernel time falls below this, running torch on the device is as good, so the routing threshold sits there.
LAUNCH_OVERHEAD_S = 0.4e-3


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The constants of the cost model that a measurement can refit (``check-neuron --calibrate``). The defaults
    are fitted to published measurements (docs/trainium.md lists each point, its source and the model's error).

    The fields are the interface between the cost model and check-neuron's calibration file (JSON of these names;
    a missing field keeps its default)."""

    tensor_efficiency: float = 1.0  # achieved fraction of the documented nc_matmul rate
    dma_bytes_per_s: float | None = None  # streaming DMA rate per physical core (None: the generation's)
    dma_half_run_bytes: float = 0.0  # contiguous run at which DMA reaches half its streaming rate
    dma_fixed_s: float = 0.0  # fixed cost per dma_copy, after overlap across the DMA queues
    launch_s: float = 0.4e-3  # host dispatch of one kernel call, warm
    compile_fixed_s: float = 0.0  # first call per shape/dtype: compile time, fixed part
    compile_s_per_instruction: float = 0.0  # and per instruction of the unrolled program
    source: str = "defaults"  # where the constants come from (a file path, or "defaults")


@dataclasses.dataclass(frozen=True)
class Generation:
    """Clocks and DMA bandwidth of one NeuronCore generation (NKI_FACTS.md section 10)."""

    name: str
    tensor_hz: float
    vector_hz: float
    scalar_hz: float
    gpsimd_hz: float
    dma_bytes_per_s: float

    @property
    def bf16_flops(self) -> float:
        """Peak bf16 FLOP/s of one core: 128 x 128 multiply-adds per Tensor Engine cycle."""
        return 128 * 128 * 2 * self.tensor_hz

    def engine_hz(self, engine: str) -> float:
        return {"tensor": self.tensor_hz, "vector": self.vector_hz, "scalar": self.scalar_hz,
                "gpsimd": self.gpsimd_hz}[engine]


TRN1 = Generation("trn1", 2.8e9, 1.12e9, 1.4e9, 1.4e9, 272e9)  # NeuronCore-v2
TRN2 = Generation("trn2", 2.4e9, 0.96e9, 1.2e9, 1.2e9, 368e9)  # NeuronCore-v3
GENERATIONS = {g.name: g for g in (TRN1, TRN2)}


@dataclasses.dataclass(frozen=True)
class Estimate:
    """The modelled cost of one kernel call: busy seconds per engine, and what it computes."""

    kernel: str
    generation: str
    flops: int
    peak_flops: float  # of the mode's Tensor Engine path (fp32: a quarter of bf16)
    engine_seconds: dict[str, float]
    instructions: dict[str, int]
    dma_bytes: int
    sbuf_peak_bytes: int
    psum_banks_peak: int

    @property
    def seconds(self) -> float:
        return max(self.engine_seconds.values())

    @property
    def bound_by(self) -> str:
        return max(self.engine_seconds, key=self.engine_seconds.get)

    @property
    def utilization(self) -> float:
        """Useful FLOPs over what the Tensor Engine could do at its peak in the modelled time."""
        return self.flops / (self.seconds * self.peak_flops) if self.seconds else 0.0

    @property
    def tflops(self) -> float:
        return self.flops / self.seconds / 1e12 if self.seconds else 0.0

    def share(self, engine: str) -> float:
        """The fraction of the modelled time ``engine`` is busy."""
        return self.engine_seconds[engine] / self.seconds if self.seconds else 0.0


def estimate(core, generation: Generation, kernel: str, flops: int, fp32: bool) -> Estimate:
    """The cost of the run recorded on ``core`` (a CPU-model Core) on ``generation``."""
    cycles = dict.fromkeys(("tensor", "vector", "scalar", "gpsimd"), 0.0)
    counts = dict.fromkeys((*cycles, "dma"), 0)
    dma_seconds, dma_bytes = 0.0, 0
    for (engine, instruction, *details), n in core.events.items():
        counts[engine] += n
        if engine == "dma":
            size, run = details
            runs = size / run
            dma_seconds += n * runs * max(run, DMA_MIN_RUN) / generation.dma_bytes_per_s
            dma_bytes += n * size
        elif instruction == "nc_matmul":
            moving, _, _, fp32_operands = details
            cycles[engine] += n * max(moving, MATMUL_MIN_CYCLES) * (FP32_MATMUL_FACTOR if fp32_operands else 1)
        elif instruction == "nc_transpose" and engine == "tensor":
            partitions, width = details
            cycles[engine] += n * max(partitions, MATMUL_MIN_CYCLES) * (FP32_TRANSPOSE_FACTOR if width == 4 else 1)
        else:
            free = details[0]
            per_element = TENSOR_TENSOR_CYCLES if instruction == "tensor_tensor" else 1
            cycles[engine] += n * (INSTRUCTION_CYCLES + per_element * free)
    seconds = {engine: c / generation.engine_hz(engine) for engine, c in cycles.items()}
    seconds["dma"] = dma_seconds
    peak = generation.bf16_flops / (FP32_MATMUL_FACTOR if fp32 else 1)
    return Estimate(kernel, generation.name, flops, peak, seconds, counts, dma_bytes, core.sbuf_peak,
                    core.banks_peak)


@functools.lru_cache(maxsize=1024)
def runs_as(mode: str) -> str:
    """The kernel the kernel layer runs for a step of ``mode``: sr's steps have float32/float64 results, with
    nothing to round stochastically, so they run fast's kernel (``matmul_sr``, which rounds to bf16, is modelled
    under "sr" but never called by the kernel layer; see docs/trainium.md)."""
    return "fast" if mode == "sr" else mode


def modelled(kernel: str, mode: str, bmkn: tuple[int, int, int, int], generation: str = "trn2",
             a_is_transposed: bool = False, float64: bool = False, slices: int | None = None) -> Estimate:
    """The modelled cost of ``nki.<kernel>[<mode>]`` on [B, M, K] x [B, K, N] as the kernel layer calls it,
    counted by running the kernel on the CPU model without arithmetic: fast gets bf16 words, native fp32; dd and
    bf16x6 get fp32 data and split it on chip (``float64``: words split on the host, the product phase only);
    ozaki gets its digit slices (``slices``, default the dtype's; the host's digit extraction and level combination
    are not part of the kernel); sr gets fp32 and rounds its result to bf16."""
    from .. import reference
    from . import WORDS, jitted, model

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
        name, args = "matmul_sr", (*inputs(nl.float32), a_is_transposed, model.shape_only((1, 1), nl.uint32))
    else:
        raise ValueError(f"no NKI kernel {kernel!r} for mode {mode!r}")
    fn = jitted(name, "model")
    with model.targeting(generation), model.counting_only():
        fn(*args)
    return estimate(fn.last_run, GENERATIONS[generation], f"nki.{kernel}[{mode}]", 2 * b * m * k * n,
                    mode == "native")


@functools.cache
def default_min_flops(mode: str, generation: str = "trn2") -> float:
    """The routing threshold: FLOPs of the smallest cube n^3 (n a multiple of the 128 tile) whose modelled
    ``nki.matmul[mode]`` time reaches the launch overhead; below it the launch costs more than the kernel saves."""
    def reaches(n: int) -> bool:
        return modelled("matmul", mode, (1, n, n, n), generation).seconds >= LAUNCH_OVERHEAD_S

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
