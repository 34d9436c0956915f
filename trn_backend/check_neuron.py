"""``python -m trn_backend check-neuron``: every NKI mode checked against float64, and the device assumptions
the kernels rest on, on a Neuron device or the model.

First a compile-and-run gate: every NKI mode (the kernels' modes and ozaki's level sums) runs once, matmul and bmm
at an asymmetric shape (M, K and N all different, none a multiple of 128), at the runtime's LNC, through the
kernel layer's NKI route, against float64 within the mode's bound; one line per mode, "compiles and runs" or the
error. A failure stops there (after the versions and the device) with exit code 1. Then it prints the toolchain
versions and the device, and runs every mode with an NKI route (fast, native, dd, bf16x6, ozaki, sr) through the
kernel layer's NKI route (the full mode: host scaling, the kernel, host combination) on a few shapes
(standard-normal inputs and a cancellation case) and compares each result with a float64 host reference: the max
componentwise error in units of |A||B| against the mode's published bound, with the time and TFLOPS (measured on
a device; the kernel's, from the cost model, without one). A row whose NKI route did not run
fails. Then the device assumptions the documentation leaves open: correct rounding of fp32 vector add and
subtract, the order and rounding of PSUM accumulation, whether the runtime's stochastic-rounding switch reaches
casts inside NKI kernels, the precision of fp32 Tensor Engine products (each verified or refuted on a device),
and that our sr kernel is unbiased. Exit code 0 when every row is within its bound and the sr kernel is unbiased
(the other assumptions are informational). Without a Neuron device the kernels run on the CPU model of a
NeuronCore (or the NKI simulator where nki is installed), whose arithmetic is the model's by construction.

On a device it also measures what the cost model's constants can be fitted to (launch, DMA by run length, compile
time per shape, the Tensor Engine's efficiency, our kernels' times in every mode at a few shapes; "not measured"
elsewhere). ``--json FILE`` writes everything found; ``--calibrate FILE`` fits such a file
(kernels/nki/calibrate.py) and writes the calibration file the cost model reads.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import torch

from . import _device, _precision, kernels
from ._config import config
from .kernels import bounds, nki, reference
from .kernels.nki import calibrate, cost, toolchain
from .kernels.nki import model as nki_model

__all__ = [
    "CASES",
    "MODES",
    "GATE_MODES",
    "GATE_SHAPES",
    "KERNEL_SHAPES",
    "Gate",
    "compile_gate",
    "gate_lines",
    "measure_kernels",
    "Assumption",
    "Case",
    "Measured",
    "Row",
    "Where",
    "add_arguments",
    "run",
    "run_kernel",
    "run_nki",
    "run_probe",
    "cast_counts",
    "rounding_verdict",
    "switch_verdict",
    "unbiased_verdict",
    "measure",
    "measurement_file",
    "calibrate_file",
]

MODES = kernels.NKI_MODES  # every mode with an NKI route
KERNEL_MODE = {"sr": "fast"}  # the kernel a float32 step of the mode runs, where it is another mode's
DISTRIBUTIONS = ("torch", "torch-xla")  # reported beside toolchain.DISTRIBUTIONS (the Neuron ones)
REPEATS = 5  # timed runs per case on a device; the median is shown
# the fp32 path probes: full-significand values (K = 1) and an accumulation whose order shows in its result
PRODUCT_SHAPE = (128, 512)
SMALL_TERM = 2.0**-25  # a quarter of fp32's ulp at 1.0: each one vanishes when added to 1.0 alone
ACCUMULATION_K = 128  # one nc_matmul: the order is the Tensor Engine's own
ROUNDING_SHAPE = (128, 64)  # fp32 (x, y) pairs of the add/subtract probe, one [P, F] tile
CAST_SHAPE = (128, 512)  # copies of CAST_VALUE the stochastic-rounding switch probe casts to bf16
CAST_VALUE = 1.0 + 2.0**-10  # 1/8 of the way from 1 to the next bf16, 1 + 2**-7: nearest even gives 1
CAST_NEIGHBOURS = (1.0, 1.0 + 2.0**-7)
CAST_TIMEOUT_S = 900  # each probe subprocess compiles and runs one small kernel
SR_SEEDS = 100  # seeds of the sr kernel's unbiasedness check
SR_SHAPE = (128, 128)  # products per seed, each 1 * 1 + 2**-10 * 1 = CAST_VALUE (bf16 operands: exact)
SR_SIGMAS = 4.0  # how far the mean may stray from the exact value
# the calibration measurements (device only). DMA: run lengths across the range the DMA guide discusses (256 B to
# 2 KiB below peak, 4 KiB and more saturate: SDK nki-dma-bandwidth-guide.rst), two transfer sizes (per partition) so
# the fit can tell the fixed cost from the rate, DMA_TRANSFERS transfers per kernel into one SBUF tile (64 KiB per
# partition at most). Compile: fresh fast matmul shapes (none is in CASES); the largest also gives the Tensor
# Engine's efficiency.
DMA_RUN_BYTES = (256, 512, 1024, 2048, 4096, 8192)
DMA_PARTITION_BYTES = (4096, 16384)
DMA_TRANSFERS = 4
DMA_PARTITIONS = 128
LAUNCH_SHAPE = (128, 1)
COMPILE_SHAPES = ((1, 256, 256, 256), (1, 512, 512, 512), (1, 1024, 1024, 1024), (1, 2048, 2048, 2048))
# Our kernels' times for the cost model's calibration to compare against (cost.modelled of the same kernel, mode and
# (B, M, K, N), A as given: not a transposed view): every mode at a few shapes, bmm too (the sr kernel is matmul
# only), each launched as the kernel layer launches it (dynamic loops, at the runtime's LNC).
# Shapes large enough that a kernel's time stands well above the launch it is measured less.
KERNEL_SHAPES = (
    ("matmul", (1, 2048, 2048, 2048)),
    ("matmul", (1, 4096, 4096, 4096)),
    ("matmul", (1, 2048, 4096, 1024)),
    ("bmm", (4, 1024, 2048, 1024)),
)
KERNEL_MODES = ("fast", "native", "dd", "bf16x6", "ozaki", "sr")
# The compile-and-run gate: every kernel mode (nki.MODES) and ozaki's level sums, matmul and bmm at a shape whose
# M, K and N all differ and none is a multiple of 128 (edge tiles everywhere), before anything else.
GATE_MODES = (*nki.MODES, "ozaki")
GATE_SHAPES = (("matmul", (1, 200, 300, 700)), ("bmm", (3, 200, 300, 700)))
LNC_VARIABLE = nki.LNC_VARIABLE
LNC_DEFAULT = {name: target.default_lnc for name, target in nki_model.core.TARGETS.items()}  # the runtimes' defaults
CALIBRATION_VARIABLE = cost.CALIBRATION_VARIABLE  # the calibration file the cost model reads
UNIT_EFFICIENCY = cost.Calibration(tensor_efficiency=1.0)

# What the checks call (tests swap them): a kernel as it is (run_nki: the assumption probes, the sr kernel), a mode
# through the kernel layer's NKI route (run_kernel: the table), a probe kernel (run_probe).
run_nki = nki.run


def run_kernel(kernel: str, a: torch.Tensor, b: torch.Tensor, mode: str) -> torch.Tensor:
    """``kernels.matmul`` / ``kernels.bmm`` in ``mode``: the full mode (host scaling, kernel, host combination),
    on the NKI route when ``_routed`` forces it."""
    return getattr(kernels, kernel)(a, b, mode)


run_gate = run_kernel  # the gate's call: the same route (tests swap one without the other)


def run_probe(kernel: str, device: torch.device, *args: torch.Tensor | bool) -> torch.Tensor:
    """Kernel ``kernel`` of kernels/nki/probes.py on ``args`` (on the device, or simulated for CPU tensors)."""
    return nki.call(kernel, device, None, *args, module="probes")


@dataclasses.dataclass(frozen=True)
class Case:
    """One kernel on one problem: (B, M, K, N), the inputs, and whether A goes in as the view A^T.T (the
    stationary layout, no on-chip transpose) or as A (transposed on chip)."""

    kernel: str  # matmul or bmm
    B: int
    M: int
    K: int
    N: int
    inputs: str = "normal"  # normal (standard normal) or cancel (rows [x, -x, ...] against equal B rows)
    a_transposed: bool = False

    @property
    def shape(self) -> str:
        """``MxKxN`` for matmul, ``BxMxKxN`` for bmm."""
        dims = (self.M, self.K, self.N) if self.kernel == "matmul" else (self.B, self.M, self.K, self.N)
        return "x".join(map(str, dims))

    @property
    def inputs_label(self) -> str:
        return self.inputs + (", A^T view" if self.a_transposed else "")

    @property
    def bmkn(self) -> tuple[int, int, int, int]:
        return self.B, self.M, self.K, self.N

    @property
    def flops(self) -> int:
        return 2 * self.B * self.M * self.K * self.N


CASES = (
    Case("matmul", 1, 128, 128, 128),
    Case("matmul", 1, 129, 300, 513),
    Case("matmul", 1, 1000, 257, 130),
    Case("matmul", 1, 256, 200, 300, a_transposed=True),
    Case("matmul", 1, 128, 300, 129, inputs="cancel"),
    Case("bmm", 3, 65, 130, 513),
)


@dataclasses.dataclass(frozen=True)
class Where:
    """Where the kernels run: a Neuron device (times measured) or the CPU (the model or the NKI simulator;
    times from the cost model)."""

    device: torch.device
    measured: bool
    line: str  # what the device section prints
    engine: str  # the short name the summary uses


@dataclasses.dataclass(frozen=True)
class Row:
    """One case in one mode: its error against float64, the published bound, and the time it took (or is
    modelled to take)."""

    case: Case
    mode: str
    error: float
    bound: float
    seconds: float | None
    problem: str = ""  # why the kernel did not run (or not on its NKI route), if it did not

    @property
    def ok(self) -> bool:
        return not self.problem and self.error <= self.bound  # NaN errors fail too

    @property
    def tflops(self) -> float | None:
        return self.case.flops / self.seconds / 1e12 if self.seconds else None


# --- header and device ---


def versions() -> list[tuple[str, str]]:
    """(name, version) of the NKI toolchain the kernels run on, the Neuron distributions (the nki one with how it
    was judged: its version, not installed, or ignored and why), torch's, and Python: what a bug report about these
    kernels needs first. Versions are the installed distributions' (importlib.metadata)."""
    torch_side = [(name, toolchain.distribution_version(name) or "not installed") for name in DISTRIBUTIONS]
    return [
        ("NKI toolchain", nki.TOOLCHAIN),
        *toolchain.distributions(),
        *torch_side,
        ("Python", platform.python_version()),
    ]


def _instance_type() -> str | None:
    """The EC2 instance type (e.g. trn2.48xlarge) from DMI, where readable: names the Trainium generation."""
    try:
        return Path("/sys/devices/virtual/dmi/id/product_name").read_text().strip() or None
    except OSError:
        return None


def find_where(generation: str) -> Where:
    """The Neuron device when torch-neuronx and the real NKI toolchain are both usable, else the CPU with the
    reasons there is no device: the user must know whether the numbers below are the hardware's."""
    reasons = []
    if not _device.neuron_available():
        reasons.append("torch-neuronx is not installed")
    if not toolchain.REAL:
        reasons.append("the NKI toolchain (nki) is not installed")
    if not reasons:
        try:
            device = _device.neuron_device()
        except Exception as e:  # any failure to reach the device means: no device
            reasons.append(f"the Neuron device is not reachable: {e}")
        else:
            instance = _instance_type()
            return Where(
                device,
                True,
                f"Neuron device {device}"
                + (f" on {instance}" if instance else "")
                + f", {toolchain.NAME}; the kernels run there, times measured (median of {REPEATS} runs)",
                f"Neuron device {device}",
            )
    simulator = (
        f"the NKI simulator ({toolchain.NAME}) on the CPU"
        if toolchain.REAL
        else f"the CPU model of a {generation} NeuronCore"
    )
    return Where(
        torch.device("cpu"),
        False,
        f"no Neuron device ({'; '.join(reasons)}): the kernels run on {simulator}, and the times are "
        f"the cost model's for a {generation} NeuronCore (modelled, not measured)",
        simulator.removesuffix(" on the CPU"),
    )


@contextlib.contextmanager
def _simulating(where: Where, generation: str) -> Iterator[None]:
    """On the CPU model, simulate the NeuronCore generation the times are modelled for; elsewhere nothing."""
    if where.measured or toolchain.REAL:
        yield
        return
    from .kernels.nki import model

    with model.targeting(generation):
        yield


# --- the cases ---


def operands(case: Case, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 A [B?, M, K] and B [B?, K, N] (matmul without the batch): standard normal; for ``cancel`` the
    first two columns of A are [x, -x] with |x| ~ 1e4 against equal first two rows of B, so the large products
    cancel exactly and what is left is small beside |A||B|."""
    lead = (case.B,) if case.kernel == "bmm" else ()
    a = rng.standard_normal((*lead, case.M, case.K))
    b = rng.standard_normal((*lead, case.K, case.N))
    if case.inputs == "cancel" and case.K >= 2:
        x = 1e4 * rng.standard_normal((*lead, case.M))
        a[..., 0], a[..., 1] = x, -x
        b[..., 1, :] = b[..., 0, :]
    return torch.from_numpy(a).float(), torch.from_numpy(b).float()


def componentwise_error(c: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> float:
    """max_ij |C - A B|_ij / (|A||B|)_ij in float64, skipping entries where (|A||B|)_ij = 0 (there A B is exactly
    0 too): the quantity the published bounds bound."""
    a64, b64 = a.double(), b.double()
    scale = a64.abs() @ b64.abs()
    if c.shape != scale.shape:
        raise ValueError(f"the kernel returned shape {tuple(c.shape)}, expected {tuple(scale.shape)}")
    error = (c.double() - a64 @ b64).abs()
    mask = scale > 0
    return float((error[mask] / scale[mask]).max()) if mask.any() else 0.0


def _synchronize(result: torch.Tensor) -> None:
    """Wait until the device has computed ``result``: XLA runs its lazy graph at mark_step; other backends have
    torch.<type>.synchronize; failing both, copying the result back to the host waits for it."""
    kind = result.device.type
    if kind == "xla":
        import torch_xla.core.xla_model as xm

        xm.mark_step()
        xm.wait_device_ops()
        return
    sync = getattr(getattr(torch, kind, None), "synchronize", None)
    if callable(sync):
        sync()
    else:
        result.cpu()


def first_and_median(call: Callable[[], torch.Tensor], repeats: int | None = None) -> tuple[float, float]:
    """(the wall time of the first call of ``call``, which on a device pays the kernel's compilation and loading
    where this shape is new; the median over ``repeats`` (default REPEATS) later calls), each synchronized."""
    start = time.perf_counter()
    _synchronize(call())
    first = time.perf_counter() - start
    times = []
    for _ in range(REPEATS if repeats is None else repeats):
        start = time.perf_counter()
        _synchronize(call())
        times.append(time.perf_counter() - start)
    return first, statistics.median(times)


def median_seconds(call: Callable[[], torch.Tensor], repeats: int | None = None) -> float:
    """The median wall time of ``call`` over ``repeats`` (default REPEATS) runs after an untimed first one."""
    return first_and_median(call, repeats)[1]


def _on(where: Where, a: torch.Tensor, b: torch.Tensor, case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """The operands on the device; an A^T-view case moves A^T (contiguous) and hands the kernel its .mT."""
    if case.a_transposed:
        return a.mT.contiguous().to(where.device).mT, b.to(where.device)
    return a.to(where.device), b.to(where.device)


@contextlib.contextmanager
def _routed(where: Where) -> Iterator[None]:
    """Send every step to its NKI route: on a Neuron device whatever its size; on the CPU through the model."""
    if where.device.type in kernels.NEURON_DEVICE_TYPES:
        with config.set(nki_min_flops=0):
            yield
    else:
        with config.set(nki="model", nki_min_flops=0):
            yield


def modelled_seconds(case: Case, mode: str, generation: str) -> float:
    """The cost model's time of the kernel a float32 step of ``mode`` runs (host work left out)."""
    kernel_mode = KERNEL_MODE.get(mode, mode)
    return cost.modelled(case.kernel, kernel_mode, case.bmkn, generation, case.a_transposed).seconds


def _fp32_bound(mode: str, K: int) -> float:
    """The published bound of ``mode`` on a length-K float32 contraction (_precision.error_bound)."""
    bound = _precision.error_bound(mode, torch.float32, K)
    assert bound is not None  # None only where none is published: native bf16/fp16 and integers, never float32
    return bound


def check(case: Case, mode: str, where: Where, generation: str, seed: Sequence[int]) -> Row:
    """Run ``case`` in ``mode`` through the NKI route on inputs from ``seed``, compare with float64, and time it
    (measured on a device, modelled on the CPU). A row fails with its reason when the kernel raises or the route
    did not run; the other cases still run."""
    a, b = operands(case, np.random.default_rng(seed))
    bound = _fp32_bound(mode, case.K)
    try:
        da, db = _on(where, a, b, case)
        with _routed(where):
            with kernels.count_calls() as calls:
                c = run_kernel(case.kernel, da, db, mode)
            error = componentwise_error(c.cpu(), a, b)
            if not calls[f"nki.{case.kernel}", mode]:
                return Row(
                    case,
                    mode,
                    error,
                    bound,
                    None,
                    f"the NKI route did not run (kernels.{case.kernel} ran {mode} without nki.{case.kernel})",
                )
            if where.measured:
                seconds = median_seconds(lambda: run_kernel(case.kernel, da, db, mode))
            else:
                seconds = modelled_seconds(case, mode, generation)
    except Exception as e:  # reported in the row; the exit code says it failed
        return Row(case, mode, math.nan, bound, None, f"{type(e).__name__}: {e}")
    return Row(case, mode, error, bound, seconds)


def table(rows: list[Row], time_label: str) -> str:
    """The rows as an aligned text table, one line per (kernel, mode, shape)."""
    head = ("kernel", "mode", "inputs", "shape", "max error", "bound", "result", time_label, "TFLOPS")
    lines = [head]
    for r in rows:
        lines.append(
            (
                r.case.kernel,
                r.mode,
                r.case.inputs_label,
                r.case.shape,
                f"{r.error:.2e}",
                f"{r.bound:.2e}",
                "ok" if r.ok else "FAIL",
                "-" if r.seconds is None else cost.format_seconds(r.seconds),
                "-" if r.tflops is None else f"{r.tflops:.3g}",
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in lines)


# --- the compile-and-run gate ---


@dataclasses.dataclass(frozen=True)
class Gate:
    """One mode through the gate: each run's (what ran, max error, bound), the LNC of the launches, and what went
    wrong (empty: it compiles, runs and is within its bound everywhere)."""

    mode: str
    lnc: int | None
    runs: tuple[tuple[str, float, float], ...] = ()
    problem: str = ""

    @property
    def ok(self) -> bool:
        return not self.problem

    def line(self) -> str:
        if not self.ok:
            return f"  {self.mode}: FAIL: {self.problem}"
        shown = ", ".join(f"{what} {error:.2e} <= {bound:.2e}" for what, error, bound in self.runs)
        return f"  {self.mode}: compiles and runs; max error <= bound: {shown}"


def sr_kernel_bound(K: int) -> float:
    """The bound of our sr kernel on fp32 data (nki.run, a bf16 result): fast's fp32 engine result (inputs rounded
    to bf16, fp32 accumulation), then one stochastic rounding to bf16, which moves it by less than one bf16 ulp:
    the sr bound of kernels/bounds.py with fp32 operands and a bf16 output."""
    pre = bounds.split_pre(1, torch.float32, K)
    return pre + 2 * bounds.U_BF16 * (1 + pre)


def _gate_shape(kernel: str, bmkn: tuple[int, int, int, int]) -> str:
    return "x".join(map(str, bmkn[1:] if kernel == "matmul" else bmkn))


def gate_mode(mode: str, where: Where, seed: int) -> Gate:
    """``mode`` once per GATE_SHAPES through the kernel layer's NKI route (the full mode: host scaling, the kernel,
    host combination; ozaki's kernel is its level sums), against float64; for sr also the sr kernel itself. The
    first failure (a raise, a missed NKI route, an error beyond the bound) ends the mode's gate."""
    lnc = None
    runs: list[tuple[str, float, float]] = []
    what = mode
    try:
        lnc = nki.lnc()
        for i, (kernel, bmkn) in enumerate(GATE_SHAPES):
            what = f"{kernel} {_gate_shape(kernel, bmkn)}"
            case = Case(kernel, *bmkn)
            a, b = operands(case, np.random.default_rng([seed, i]))
            da, db = _on(where, a, b, case)
            with _routed(where), kernels.count_calls() as calls:
                c = run_gate(kernel, da, db, mode)
            if not calls[f"nki.{kernel}", mode]:
                return Gate(
                    mode,
                    lnc,
                    tuple(runs),
                    f"{what}: the NKI route did not run (kernels.{kernel} ran {mode} without nki.{kernel})",
                )
            runs.append((what, componentwise_error(c.cpu(), a, b), _fp32_bound(mode, case.K)))
            if not runs[-1][1] <= runs[-1][2]:  # NaN fails too
                break
            if mode == "sr" and kernel == "matmul":  # the kernel layer runs fast's kernel for float results
                what = f"the sr kernel {_gate_shape(kernel, bmkn)}, bf16 result"
                c = run_nki("matmul", da, db, "sr", seed=seed)
                runs.append((what, componentwise_error(c.cpu().float(), a, b), sr_kernel_bound(case.K)))
                if not runs[-1][1] <= runs[-1][2]:
                    break
        else:
            return Gate(mode, lnc, tuple(runs))
        what, error, bound = runs[-1]
        return Gate(mode, lnc, tuple(runs), f"{what}: max error {error:.2e} beyond the bound {bound:.2e}")
    except Exception as e:  # the error is the gate's line
        return Gate(mode, lnc, tuple(runs), f"{what}: {type(e).__name__}: {e}")


def compile_gate(where: Where, seed: int) -> list[Gate]:
    """Every GATE_MODES mode through ``gate_mode``."""
    return [gate_mode(mode, where, seed) for mode in GATE_MODES]


def gate_lines(where: Where, gate: Sequence[Gate]) -> list[str]:
    """The gate's heading and one line per mode."""
    lnc = sorted({g.lnc for g in gate if g.lnc is not None})
    shapes = ", ".join(f"{kernel} {_gate_shape(kernel, bmkn)}" for kernel, bmkn in GATE_SHAPES)
    return [
        f"compile-and-run gate (each mode once through the kernel layer's NKI route on {where.engine}, "
        f"{shapes}, at LNC={'/'.join(map(str, lnc)) or '?'}, against float64 within its bound):",
        *(g.line() for g in gate),
    ]


# --- device assumptions ---


@dataclasses.dataclass(frozen=True)
class Assumption:
    """One device assumption: what the kernels assume, the verdict (verified, refuted, model: by construction, not
    applicable; ok or FAIL for a check of our own kernel) and the evidence in one line."""

    claim: str
    verdict: str
    evidence: str
    failed: bool = False  # counts against the exit code (only a check of our own kernel)

    def lines(self) -> list[str]:
        """The claim with its verdict, then the evidence, indented."""
        return [f"  {self.claim}: {self.verdict}", f"    {self.evidence}"]


def _label(where: Where, holds: bool) -> str:
    """verified / refuted on a device; on the CPU the simulation's own arithmetic, unless it contradicts itself."""
    if where.measured:
        return "verified" if holds else "refuted"
    if not holds:
        return "refuted (the simulation contradicts its own arithmetic)"
    return "simulator: not the hardware" if toolchain.REAL else "model: by construction"


def _could_not_run(claim: str, error: Exception, failed: bool = False) -> Assumption:
    """An assumption whose probe raised: informational, except for a check of our own kernel."""
    return Assumption(claim, "FAIL" if failed else "could not run", f"{type(error).__name__}: {error}", failed)


# a. fp32 vector add and subtract


def _f32(values: object) -> np.ndarray:
    """``values`` as a float32 array."""
    return np.asarray(values, dtype=np.float32)


def _bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """Integer bit patterns (below 2**32) as the float32 values they encode."""
    return bits.astype(np.uint32).view(np.float32)


def rounding_pairs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """fp32 (x, y) pairs, ROUNDING_SHAPE of them, whose x + y and x - y are hard to round: exact ties of odd and
    even x (both tie directions), near ties (a bit past or short of the tie: the sticky bit), cancellations of
    neighbours, the split's remainders (x and its nearest bf16 hi: x - hi is exact), and random pairs with
    exponent gaps up to 2**-40, all in the normal range (subnormals are not probed)."""
    count = ROUNDING_SHAPE[0] * ROUNDING_SHAPE[1]
    ties = [
        (1.0, 2.0**-24),
        (1.0 + 2.0**-23, 2.0**-24),
        (1.0, 2.0**-25),
        (1.0 - 2.0**-24, 2.0**-25),
        (1.0, 2.0**-24 * (1 + 2.0**-23)),
        (1.0, 2.0**-24 * (1 - 2.0**-24)),
        (1.0 + 2.0**-23, 1.0),
        (3.0, 2.0**-23),
        (3.0 + 2.0**-22, 2.0**-23),
    ]
    fixed = _f32(ties)
    family = (count - len(ties)) // 5
    x = _f32(rng.uniform(1.0, 2.0, family) * 2.0 ** rng.integers(-30, 30, family))
    half = np.spacing(x) / 2  # y = half an ulp of x: x + y and x - y are exact ties
    tie_x, tie_y = x, half * _f32(rng.choice((-1.0, 1.0), family))
    near_y = _f32(tie_y * (1 + _f32(rng.choice((-1.0, 1.0), family)) * 2.0**-20))
    steps = rng.integers(1, 1 << 12, family)
    cancel_y = _bits_to_f32(x.view(np.uint32) + steps.astype(np.uint32))  # x's neighbours: x - y exact
    hi = _bits_to_f32((x.view(np.uint32).astype(np.uint64) + 0x8000) & 0xFFFF0000)  # the split's first word
    rest = count - len(ties) - 4 * family
    gap_x = _f32(rng.standard_normal(rest))
    gap_y = _f32(rng.standard_normal(rest) * 2.0 ** -rng.integers(0, 41, rest))
    xs = np.concatenate((fixed[:, 0], tie_x, x, x, x, gap_x))
    ys = np.concatenate((fixed[:, 1], tie_y, near_y, cancel_y, hi, gap_y))
    return xs.reshape(ROUNDING_SHAPE), ys.reshape(ROUNDING_SHAPE)


def rounding_verdict(x: np.ndarray, y: np.ndarray, total: np.ndarray, difference: np.ndarray) -> tuple[bool, str]:
    """(whether every x + y and x - y equals numpy's float32 result, IEEE round to nearest even, compared as
    values: signed zeros are not told apart; the evidence line)."""
    x, y = _f32(x).ravel(), _f32(y).ravel()
    results = ((" + ", _f32(total).ravel(), x + y), (" - ", _f32(difference).ravel(), x - y))
    bad = sum(int((got != want).sum()) for _, got, want in results)  # NaN results count as wrong too
    if not bad:
        return True, (
            f"all {2 * x.size} results of {x.size} pairs (ties both ways, near ties, cancellations, the "
            "split's x - hi, exponent gaps to 2**-40) equal numpy float32's (IEEE nearest even)"
        )
    op, got, want = next(result for result in results if (result[1] != result[2]).any())
    i = int(np.flatnonzero(got != want)[0])
    return False, (
        f"{bad} of {2 * x.size} results differ from IEEE nearest even; first: {float(x[i])!r}{op}"
        f"{float(y[i])!r} gave {float(got[i])!r}, IEEE {float(want[i])!r}"
    )


def engine_rounding(where: Where, seed: int, on_gpsimd: bool) -> Assumption:
    """Assumption a (the Vector Engine) or a2 (GpSimd): add_subtract on rounding_pairs, against numpy float32."""
    claim = (
        "a2. fp32 GpSimd add and subtract round to nearest even (dd's and bf16x6's TwoSum run half their steps "
        "on GpSimd)"
        if on_gpsimd
        else "a. fp32 vector add and subtract round to nearest even (the split's x - hi and TwoSum need it)"
    )
    try:
        x, y = rounding_pairs(np.random.default_rng([seed, 2]))
        out = (
            run_probe(
                "add_subtract",
                where.device,
                torch.from_numpy(x).to(where.device),
                torch.from_numpy(y).to(where.device),
                on_gpsimd,
            )
            .cpu()
            .numpy()
        )
        holds, evidence = rounding_verdict(x, y, out[0], out[1])
    except Exception as e:  # informational: say what failed
        return _could_not_run(claim, e)
    return Assumption(claim, _label(where, holds), evidence)


# b. PSUM accumulation; d. fp32 Tensor Engine products


def accumulation_operands() -> tuple[torch.Tensor, torch.Tensor]:
    """A [2, 128] against a column of ones: row 0 is 1.0 followed by 127 terms of 2**-25, row 1 the same terms
    with 1.0 last. In K order in fp32 each small term vanishes into 1.0 in row 0 (1.0 exactly) but adds up
    exactly before the 1.0 in row 1; exact or wider accumulation gives 1 + 127 * 2**-25 (rounded) in both."""
    a = torch.full((2, ACCUMULATION_K), SMALL_TERM)
    a[0, 0], a[1, -1] = 1.0, 1.0
    return a, torch.ones(ACCUMULATION_K, 1)


def accumulation_verdict(first: float, last: float) -> str:
    """Which accumulation gives row 0 = ``first`` and row 1 = ``last`` (see accumulation_operands)."""
    exact = float(np.float32(1.0 + (ACCUMULATION_K - 1) * SMALL_TERM))  # fp32 rounding of the exact sum
    known = {
        (1.0, exact): "sequential fp32 in K order",
        (exact, exact): "exact / wider accumulation",
        (exact, 1.0): "sequential fp32 in reverse K order",
    }
    return known.get((first, last), "other")


def accumulation_order(where: Where) -> tuple[float, float, str]:
    """Row 0 and row 1 of the native kernel on accumulation_operands, and which accumulation they match."""
    a, b = accumulation_operands()
    c = run_nki("matmul", a.to(where.device), b.to(where.device), "native").cpu()
    first, last = float(c[0, 0]), float(c[1, 0])
    return first, last, accumulation_verdict(first, last)


def psum_accumulation(where: Where) -> Assumption:
    """Assumption b: PSUM accumulates in fp32 or wider (every mode's bound; ozaki's exact integer sums)."""
    claim = "b. PSUM accumulates in fp32 or wider (every bound assumes it; ozaki's sums below 2**24 stay exact)"
    try:
        first, last, verdict = accumulation_order(where)
    except Exception as e:  # informational
        return _could_not_run(claim, e)
    exact = 1.0 + (ACCUMULATION_K - 1) * SMALL_TERM
    evidence = (
        f"K = {ACCUMULATION_K}, 1.0 and 127 terms of 2**-25: 1.0 first gives {first!r}, 1.0 last gives "
        f"{last!r} (exact {exact!r}; sequential fp32 gives 1.0 and {float(np.float32(exact))!r}): {verdict}"
    )
    return Assumption(claim, _label(where, verdict != "other"), evidence)


def product_precision(where: Where, seed: int) -> tuple[float, float]:
    """(max relative error, effective significand bits = -log2 of it) of the native kernel's K = 1 products of
    1 + random 23-bit fractions (24 significant bits each) against their exact float64 products: 24 bits are
    correctly rounded fp32 products; about 16 would point at a bf16x2/bf16x3 decomposition."""
    rng = np.random.default_rng([seed, 1 << 20])
    m, n = PRODUCT_SHAPE
    fractions = (rng.integers(0, 1 << 22, size=m + n) << 1) | 1  # odd: the last significand bit is set
    values = torch.from_numpy(1.0 + fractions / 2.0**23).float()
    a, b = values[:m].reshape(m, 1), values[m:].reshape(1, n)
    c = run_nki("matmul", a.to(where.device), b.to(where.device), "native").cpu().double()
    exact = a.double() @ b.double()  # 48-bit products: exact in float64
    worst = float(((c - exact).abs() / exact).max())
    return worst, (-math.log2(worst) if worst > 0 else math.inf)


def tensor_engine_products(where: Where, seed: int) -> Assumption:
    """Assumption d: fp32 x fp32 products on the Tensor Engine are correctly rounded fp32 (native's bound)."""
    claim = "d. fp32 Tensor Engine products are correctly rounded fp32 (native's bound assumes it)"
    try:
        worst, bits = product_precision(where, seed)
    except Exception as e:  # informational
        return _could_not_run(claim, e)
    evidence = (
        f"K = 1, {PRODUCT_SHAPE[0]} x {PRODUCT_SHAPE[1]} full-significand fp32 values: max relative error "
        f"{worst:.3g}, effective significand bits {bits:.1f} (24: correctly rounded; ~16: a bf16x2/3 "
        "decomposition)"
    )
    return Assumption(claim, _label(where, worst <= 2.0**-24), evidence)


# c. the runtime's stochastic-rounding switch; our sr kernel


def rounding_counts(values: np.ndarray, below: float, above: float) -> dict[str, int]:
    """How many of ``values`` are ``below``, ``above``, or neither (the two neighbours of a rounded value)."""
    values = np.asarray(values, dtype=np.float64)
    up, down = int((values == above).sum()), int((values == below).sum())
    return {"up": up, "down": down, "other": values.size - up - down}


def switch_verdict(on: dict[str, int], off: dict[str, int]) -> tuple[str, str]:
    """(verdict, evidence) from round_to_bf16's counts with NEURON_RT_STOCHASTIC_ROUNDING_EN=1 (``on``) and =0
    (``off``): verified when some casts round up with the switch and none without, refuted when none do with it."""
    n = sum(on.values())
    evidence = (
        f"{n} casts of 1 + 2**-10 to bf16 (1/8 of the way to 1 + 2**-7): with the switch {on['up']} rounded "
        f"up (stochastic rounding: ~{n // 8}), {on['other']} neither neighbour; without it {off['up']} up, "
        f"{off['other']} neither"
    )
    if off["up"] or off["other"] or on["other"]:
        return "inconclusive", evidence + " (nearest even rounds every one down)"
    return ("verified" if on["up"] else "refuted"), evidence


def _cast_child(on_gpsimd: bool) -> None:
    """In a probe subprocess: round_to_bf16 (on GpSimd or the Vector Engine) on CAST_SHAPE copies of CAST_VALUE on
    the Neuron device; prints the counts as JSON (the runtime reads NEURON_RT_STOCHASTIC_ROUNDING_EN when this
    process claims the device)."""
    where = find_where("trn2")
    if not where.measured:
        raise SystemExit(f"the probe subprocess found no Neuron device: {where.line}")
    x = torch.full(CAST_SHAPE, CAST_VALUE)
    y = run_probe("round_to_bf16", where.device, x.to(where.device), on_gpsimd).cpu().float().numpy()
    print(json.dumps(rounding_counts(y, *CAST_NEIGHBOURS)))


def _spawn_cast(switch: bool, seed: int, on_gpsimd: bool) -> dict[str, int]:
    """round_to_bf16's counts (the cast on GpSimd or the Vector Engine) in a subprocess with
    NEURON_RT_STOCHASTIC_ROUNDING_EN on or off (seeded)."""
    env = dict(
        os.environ,
        NEURON_RT_STOCHASTIC_ROUNDING_EN="1" if switch else "0",
        NEURON_RT_STOCHASTIC_ROUNDING_SEED=str(seed),
    )
    code = f"from trn_backend.check_neuron import _cast_child; _cast_child({on_gpsimd})"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=CAST_TIMEOUT_S)
    if done.returncode:
        tail = (done.stderr or done.stdout).strip().splitlines()
        raise RuntimeError(f"the probe subprocess exited {done.returncode}: {tail[-1] if tail else ''}")
    return json.loads(done.stdout.strip().splitlines()[-1])


cast_counts = _spawn_cast  # tests swap it: there is no device to spawn onto


def stochastic_switch(where: Where, seed: int, on_gpsimd: bool) -> Assumption:
    """Assumption c (a Vector Engine cast) or c3 (a GpSimd cast, as fast's on-chip fp32 -> bf16 cast): whether
    NEURON_RT_STOCHASTIC_ROUNDING_EN reaches a cast inside an NKI kernel. Runs before this process claims the
    NeuronCore, so the subprocesses can; nothing is spawned on the CPU."""
    claim = (
        "c3. NEURON_RT_STOCHASTIC_ROUNDING_EN reaches fast's on-chip fp32 -> bf16 cast (GpSimd tensor_copy)"
        if on_gpsimd
        else "c. NEURON_RT_STOCHASTIC_ROUNDING_EN reaches casts inside NKI kernels (Vector Engine tensor_copy)"
    )
    if not where.measured:
        return Assumption(
            claim,
            "not applicable (the CPU model has no runtime rounding switch)",
            "the model rounds every cast to nearest even; on a device round_to_bf16 runs in two "
            "subprocesses, with the switch and without",
        )
    try:
        verdict, evidence = switch_verdict(cast_counts(True, seed, on_gpsimd), cast_counts(False, seed, on_gpsimd))
    except Exception as e:  # informational
        return _could_not_run(claim, e)
    return Assumption(claim, verdict, evidence)


def unbiased_verdict(values: np.ndarray, below: float, above: float, exact: float) -> tuple[bool, str]:
    """(whether ``values``, stochastic roundings of ``exact`` to ``below`` or ``above``, are unbiased: every one a
    neighbour, both occurring, the mean within SR_SIGMAS standard errors of ``exact``; the evidence line)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    counts = rounding_counts(values, below, above)
    p = (exact - below) / (above - below)
    sigma = (above - below) * math.sqrt(p * (1 - p) / values.size)
    z = (float(values.mean()) - exact) / sigma
    holds = not counts["other"] and counts["up"] > 0 and counts["down"] > 0 and abs(z) <= SR_SIGMAS
    return holds, (
        f"{values.size} results: {counts['up']} rounded up ({counts['up'] / values.size:.2%}, expected "
        f"{p:.2%}), {counts['down']} down, {counts['other']} neither neighbour; mean - exact = "
        f"{z:+.2f} standard errors (within {SR_SIGMAS:g} required)"
    )


def sr_kernel(where: Where) -> Assumption:
    """Our sr kernel (matmul_sr) is unbiased: SR_SEEDS seeds of SR_SHAPE products equal to CAST_VALUE, rounded to
    bf16. A real check on the model too: it fails the command."""
    claim = f"c2. our sr kernel (matmul_sr) is unbiased ({SR_SEEDS} seeds of products 1 + 2**-10, 1/8 of a bf16 step)"
    m, n = SR_SHAPE
    a = torch.tensor([[1.0, 2.0**-10]]).repeat(m, 1).to(where.device)  # bf16 operands: the fp32 sum is exact
    b = torch.ones(2, n).to(where.device)
    try:
        values = np.stack([run_nki("matmul", a, b, "sr", seed=s).cpu().float().numpy() for s in range(SR_SEEDS)])
        holds, evidence = unbiased_verdict(values, *CAST_NEIGHBOURS, CAST_VALUE)
    except Exception as e:  # our own kernel: a failure
        return _could_not_run(claim, e, failed=True)
    return Assumption(claim, "ok" if holds else "FAIL", evidence, failed=not holds)


def assumptions_section(where: Where, switches: tuple[Assumption, Assumption], seed: int) -> list[Assumption]:
    """Every assumption (``switches``, the subprocess probes of the Vector Engine's and GpSimd's casts, ran before
    the table)."""
    return [
        engine_rounding(where, seed, False),
        engine_rounding(where, seed, True),
        psum_accumulation(where),
        *switches,
        sr_kernel(where),
        tensor_engine_products(where, seed),
    ]


def _assumption_lines(where: Where, found: list[Assumption]) -> list[str]:
    """The section's text: a heading, two lines per assumption, and what the verdicts are evidence of."""
    lines = ["device assumptions (undocumented; informational, except the sr kernel: ours):"]
    for assumption in found:
        lines += assumption.lines()
    if where.measured:
        lines.append(f"  measured on {where.engine}.")
    else:
        model = (
            "the NKI simulator's"
            if toolchain.REAL
            else "the CPU model's own arithmetic by construction (fp32 engine arithmetic rounded to nearest "
            "even, fp32 products rounded to nearest, fp32 adds in K order)"
        )
        lines.append(f"  no Neuron device: this is {model}, not evidence about the hardware.")
    return lines


# --- measurements: the cost model's calibration inputs ---

# The measurement file's records (plain dicts: they go to JSON as they are; kernels/nki/calibrate.py reads them)


class _Lnc(TypedDict):
    value: int | None  # None on the CPU: no runtime applies it
    how: str


class _Launch(TypedDict):
    cold_s: float
    warm_s: float


class _DmaRow(TypedDict):
    run_bytes: int
    bytes: int
    transfers: int
    seconds: float
    kernel_s: float


class _CompileRow(TypedDict):
    kernel: str
    mode: str
    bmkn: list[int]
    instructions: int
    first_s: float
    warm_s: float
    tensor_s: float


class _TensorEfficiency(TypedDict):
    bmkn: list[int]
    seconds: float
    tensor_s: float


class _KernelRow(TypedDict):
    kernel: str
    mode: str
    bmkn: list[int]
    lnc: int
    a_transposed: bool
    seconds: float


@dataclasses.dataclass
class Measured:
    """What check-neuron measured for the cost model's calibration, in the measurement file's terms
    (kernels/nki/calibrate.py): empty or None where nothing was measured (the CPU model, or a probe that failed:
    ``problems`` says which and why)."""

    lnc: _Lnc
    launch: _Launch | None = None
    dma: list[_DmaRow] = dataclasses.field(default_factory=list)
    compile: list[_CompileRow] = dataclasses.field(default_factory=list)
    tensor: _TensorEfficiency | None = None
    kernels: list[_KernelRow] = dataclasses.field(default_factory=list)
    problems: list[str] = dataclasses.field(default_factory=list)


def logical_cores(where: Where, generation: str) -> _Lnc:
    """The runtime's logical NeuronCore configuration (LNC) and where it comes from: NEURON_LOGICAL_NC_CONFIG, else
    the generation's default (2 on trn2: SDK neuron-runtime/explore/device-memory.rst; 1 on trn1, which has no
    LNC=2, assumed). On the CPU there is no runtime to apply it: value None, the setting still said."""
    text = os.environ.get(LNC_VARIABLE)
    if text is not None:
        value, how = (
            (int(text), f"{LNC_VARIABLE}={text}")
            if text.strip().isdigit()
            else (None, f"{LNC_VARIABLE}={text!r} is not a core count")
        )
    else:
        default = LNC_DEFAULT[generation]
        value, how = default, f"{LNC_VARIABLE} not set: the {generation} runtime's default, {default}"
    return {"value": value if where.measured else None, "how": how}


def measure_launch(where: Where) -> _Launch:
    """The smallest kernel's first call (compile and load) and warm median: the launch."""
    x = torch.ones(LAUNCH_SHAPE).to(where.device)
    cold, warm = first_and_median(lambda: run_probe("launch", where.device, x))
    return {"cold_s": cold, "warm_s": warm}


def dma_source(run_bytes: int, partition_bytes: int) -> torch.Tensor:
    """dma_runs' input: DMA_TRANSFERS transfers of DMA_PARTITIONS x ``partition_bytes`` in runs of ``run_bytes``,
    each run followed by a gap as long; element [t, p, 0, 0] holds t * DMA_PARTITIONS + p (the arrival check)."""
    run = run_bytes // 4
    src = torch.zeros(DMA_TRANSFERS, DMA_PARTITIONS, partition_bytes // run_bytes, 2 * run)
    src[:, :, 0, 0] = torch.arange(DMA_TRANSFERS * DMA_PARTITIONS, dtype=torch.float32).reshape(DMA_TRANSFERS, -1)
    return src


def measure_dma(where: Where, launch_s: float, problems: list[str] | None = None) -> list[_DmaRow]:
    """One row per (run length, transfer size): the dma_runs kernel's median time less the warm launch. A time not
    above the launch is left out, said in ``problems``."""
    rows: list[_DmaRow] = []
    for partition_bytes in DMA_PARTITION_BYTES:
        for run_bytes in DMA_RUN_BYTES:
            src = dma_source(run_bytes, partition_bytes)
            on_device = src.to(where.device)
            arrived = run_probe("dma_runs", where.device, on_device).cpu()
            if not torch.equal(arrived, src[:, :, 0, 0].T):
                raise RuntimeError(f"dma_runs with runs of {run_bytes} B returned wrong data")
            seconds = median_seconds(functools.partial(run_probe, "dma_runs", where.device, on_device))
            if seconds <= launch_s:
                if problems is not None:
                    problems.append(
                        f"dma: runs of {_kib(run_bytes)}, {_kib(partition_bytes)} per partition took "
                        f"{cost.format_seconds(seconds)}, not above the launch: left out"
                    )
                continue
            rows.append(
                {
                    "run_bytes": run_bytes,
                    "bytes": DMA_PARTITIONS * partition_bytes,
                    "transfers": DMA_TRANSFERS,
                    "seconds": seconds - launch_s,
                    "kernel_s": seconds,
                }
            )
    return rows


def measure_compile(where: Where, generation: str, launch_s: float) -> tuple[list[_CompileRow], _TensorEfficiency]:
    """Per COMPILE_SHAPES: nki.matmul[fast]'s first call and warm median on fresh bf16 operands, with the kernel's
    instruction count (counted on the CPU model); and from the largest, the Tensor Engine measurement: its warm
    time less the launch against the modelled Tensor Engine time at efficiency 1."""
    rows: list[_CompileRow] = []
    generator = torch.Generator().manual_seed(len(COMPILE_SHAPES))
    for bmkn in COMPILE_SHAPES:
        _, m, k, n = bmkn
        a = torch.randn(m, k, generator=generator).bfloat16().to(where.device)
        b = torch.randn(k, n, generator=generator).bfloat16().to(where.device)
        first, warm = first_and_median(functools.partial(run_nki, "matmul", a, b, "fast"))
        # the Tensor Engine time at efficiency 1 (the fit's unit), whatever calibration is active
        modelled = cost.modelled("matmul", "fast", bmkn, generation, calibration=UNIT_EFFICIENCY)
        rows.append(
            {
                "kernel": "matmul",
                "mode": "fast",
                "bmkn": list(bmkn),
                "instructions": modelled.program_instructions,
                "first_s": first,
                "warm_s": warm,
                "tensor_s": modelled.engine_seconds["tensor"],
            }
        )
    largest = rows[-1]
    return rows, {"bmkn": largest["bmkn"], "seconds": largest["warm_s"] - launch_s, "tensor_s": largest["tensor_s"]}


def _timed_call(
    kernel: str, mode: str, a: torch.Tensor, b: torch.Tensor, device: torch.device
) -> Callable[[], torch.Tensor]:
    """A call of our ``kernel`` in ``mode`` on the device as cost.modelled counts it: fast on bf16 operands, native,
    dd, bf16x6 and sr on fp32 (split or rounded on chip), ozaki on its default slices' bf16 digits (nki.level_sums:
    the kernel, then the int64 sum of its K-block sums)."""
    if mode == "ozaki":
        slices = reference.ozaki_default_slices(torch.float32)
        generator = torch.Generator().manual_seed(slices)

        def digits(x: torch.Tensor) -> list[torch.Tensor]:  # exact bf16 integers: the first of 9 bits, then 8
            return [
                torch.randint(-256 if t == 0 else -128, 257 if t == 0 else 129, x.shape, generator=generator)
                .to(torch.bfloat16)
                .to(device)
                for t in range(slices)
            ]

        a_digits, b_digits = digits(a), digits(b)
        return lambda: nki.level_sums(a_digits, b_digits)[2]
    dtype = torch.bfloat16 if mode == "fast" else torch.float32
    da, db = a.to(dtype).to(device), b.to(dtype).to(device)
    return lambda: run_nki(kernel, da, db, mode)


def measure_kernels(where: Where, launch_s: float, problems: list[str] | None = None) -> list[_KernelRow]:
    """Per KERNEL_SHAPES and KERNEL_MODES (sr: matmul only): our kernel's median time less the warm launch, with
    the LNC it launched at and A's layout (not a transposed view): the rows the cost model's calibration compares
    with cost.modelled. A time not above the launch is left out, said in ``problems``."""
    rows: list[_KernelRow] = []
    generator = torch.Generator().manual_seed(len(KERNEL_SHAPES))
    lnc = nki.lnc()
    for kernel, bmkn in KERNEL_SHAPES:
        b, m, k, n = bmkn
        lead = (b,) if kernel == "bmm" else ()
        a, bb = torch.randn(*lead, m, k, generator=generator), torch.randn(*lead, k, n, generator=generator)
        for mode in KERNEL_MODES:
            if mode == "sr" and kernel != "matmul":
                continue
            seconds = median_seconds(_timed_call(kernel, mode, a, bb, where.device))
            if seconds <= launch_s:
                if problems is not None:
                    problems.append(
                        f"kernels: nki.{kernel}[{mode}] {_gate_shape(kernel, bmkn)} took "
                        f"{cost.format_seconds(seconds)}, not above the launch: left out"
                    )
                continue
            rows.append(
                {
                    "kernel": kernel,
                    "mode": mode,
                    "bmkn": list(bmkn),
                    "lnc": lnc,
                    "a_transposed": False,
                    "seconds": seconds - launch_s,
                }
            )
    return rows


def measure(where: Where, generation: str) -> Measured:
    """Every calibration measurement on a device; on the CPU nothing but the LNC line (there is nothing to time)."""
    measured = Measured(logical_cores(where, generation))
    if not where.measured:
        return measured

    def launch_s() -> float:
        """The warm launch, which the steps after the launch subtract (they run only where it was measured)."""
        assert measured.launch is not None  # the loop below skips them otherwise
        return measured.launch["warm_s"]

    steps: tuple[tuple[str, Callable[[], object]], ...] = (
        ("launch", lambda: measure_launch(where)),
        ("dma", lambda: measure_dma(where, launch_s(), measured.problems)),
        ("compile", lambda: measure_compile(where, generation, launch_s())),
        ("kernels", lambda: measure_kernels(where, launch_s(), measured.problems)),
    )
    for name, step in steps:
        if name != "launch" and measured.launch is None:
            measured.problems.append(f"{name}: not measured (it subtracts the launch, which did not run)")
            continue
        try:
            found = step()
        except Exception as e:  # informational: the rest still runs, the problem is reported
            measured.problems.append(f"{name}: could not run: {type(e).__name__}: {e}")
            continue
        if name == "compile":  # the step's two results: measure_compile's
            measured.compile, tensor = cast(tuple[list[_CompileRow], _TensorEfficiency], found)
            if tensor["seconds"] > 0:
                measured.tensor = tensor
            else:
                measured.problems.append(
                    f"tensor engine: nki.matmul[fast] {'x'.join(map(str, tensor['bmkn'][1:]))} took "
                    f"{cost.format_seconds(tensor['seconds'] + launch_s())}, not above the launch: left out"
                )
        else:
            setattr(measured, name, found)
    return measured


def _kib(size: int) -> str:
    return f"{size // 1024} KiB" if size >= 1024 else f"{size} B"


def measurement_lines(where: Where, measured: Measured) -> list[str]:
    """The section's text: the LNC, then launch, DMA per run length, compile per shape and the Tensor Engine's
    efficiency, each measured or "not measured (...)"; never a number that was not measured."""
    absent = (
        "not measured (" + ("NKI simulator" if toolchain.REAL else "CPU model") + ")"
        if not where.measured
        else "not measured (see below)"
    )
    fmt = cost.format_seconds
    lines = [
        "measurements (the cost model's calibration inputs; --json FILE records them, --calibrate FILE fits them):",
        "  LNC (logical NeuronCore config): "
        + (
            f"{measured.lnc['value']} ({measured.lnc['how']})"
            if measured.lnc["value"] is not None
            else f"{absent}; {measured.lnc['how']}"
        ),
    ]
    launch = measured.launch
    lines.append(
        "  launch of the smallest kernel: "
        + (f"first call {fmt(launch['cold_s'])} (compile + load), warm {fmt(launch['warm_s'])}" if launch else absent)
    )
    by_run = {run: [r for r in measured.dma if r["run_bytes"] == run] for run in DMA_RUN_BYTES}
    for run, rows in by_run.items():
        shown = ", ".join(
            f"{_kib(r['bytes'] // DMA_PARTITIONS)} per partition {fmt(r['seconds'] / r['transfers'])}"
            f" per transfer ({r['bytes'] * r['transfers'] / r['seconds'] / 1e9:.3g} GB/s)"
            for r in rows
        )
        lines.append(f"  DMA HBM -> SBUF, runs of {_kib(run)}: {shown or absent}")
    compiled = {tuple(r["bmkn"]): r for r in measured.compile}
    for bmkn in COMPILE_SHAPES:
        r = compiled.get(tuple(bmkn))
        lines.append(
            f"  compile nki.matmul[fast] {'x'.join(map(str, bmkn[1:]))}: "
            + (
                f"first call {fmt(r['first_s'])}, warm {fmt(r['warm_s'])} ({r['instructions']} instructions)"
                if r
                else absent
            )
        )
    tensor = measured.tensor
    largest = "x".join(map(str, COMPILE_SHAPES[-1][1:]))
    lines.append(
        f"  Tensor Engine efficiency, nki.matmul[fast] {largest}: "
        + (
            f"{fmt(tensor['seconds'])} measured (less the launch) against {fmt(tensor['tensor_s'])} modelled at the "
            f"full rate: {tensor['tensor_s'] / tensor['seconds']:.1%}"
            if tensor
            else absent
        )
    )
    if not measured.kernels:
        lines.append(f"  our kernels in every mode at {len(KERNEL_SHAPES)} shapes (less the launch): {absent}")
    for kernel, bmkn in KERNEL_SHAPES:
        timed = [r for r in measured.kernels if r["kernel"] == kernel and tuple(r["bmkn"]) == tuple(bmkn)]
        if timed:
            lines.append(
                f"  nki.{kernel} {_gate_shape(kernel, bmkn)} at LNC={timed[0]['lnc']} (less the launch): "
                + ", ".join(f"{r['mode']} {fmt(r['seconds'])}" for r in timed)
            )
    lines += [f"  {problem}" for problem in measured.problems]
    return lines


def _finite(value: float | None) -> float | None:
    """JSON has no NaN: a failed row's error is null."""
    return value if value is None or math.isfinite(value) else None


def measurement_file(
    where: Where,
    generation: str,
    rows: list[Row],
    found: list[Assumption],
    measured: Measured,
    gate: Sequence[Gate] = (),
) -> dict[str, object]:
    """Everything check-neuron found, as the measurement file ``--json`` writes and ``--calibrate`` reads.
    ``kernels``: rows {"kernel", "mode", "bmkn", "lnc", "a_transposed", "seconds"}, our kernels' median times less
    the warm launch (empty where nothing was measured: the CPU model)."""
    return {
        "format": calibrate.FORMAT,
        "versions": dict(versions()),
        "device": {"line": where.line, "measured": where.measured, "generation": generation},
        "lnc": measured.lnc,
        "probes": [dataclasses.asdict(a) for a in found],
        "table": [
            {
                "kernel": r.case.kernel,
                "mode": r.mode,
                "inputs": r.case.inputs_label,
                "shape": r.case.shape,
                "error": _finite(r.error),
                "bound": r.bound,
                "ok": r.ok,
                "seconds": r.seconds,
                "seconds_measured": where.measured,
                "problem": r.problem,
            }
            for r in rows
        ],
        "launch": measured.launch,
        "dma": measured.dma,
        "compile": measured.compile,
        "tensor": measured.tensor,
        "kernels": measured.kernels,
        "gate": [
            {
                "mode": g.mode,
                "ok": g.ok,
                "lnc": g.lnc,
                "problem": g.problem,
                "runs": [{"what": what, "error": _finite(error), "bound": bound} for what, error, bound in g.runs],
            }
            for g in gate
        ],
        "problems": measured.problems,
    }


def _constant(value: object) -> str:
    return "the generation's" if value is None else f"{value:.6g}" if isinstance(value, float) else str(value)


def calibrate_file(measurements: str, out: str) -> int:
    """Fit the cost model's constants to the measurement file ``measurements`` and write them to ``out`` (JSON of
    cost.Calibration's fields), printing each constant default -> fitted, or kept and why."""
    path = Path(measurements)
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ValueError(f"check-neuron --calibrate: cannot read {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise ValueError(
            f"check-neuron --calibrate: {path} is not JSON ({e}); give the file check-neuron --json wrote"
        ) from None
    result = calibrate.fit(data, str(path))
    default = cost.Calibration()
    print(f"calibration of the cost model from {path}:")
    for field in dataclasses.fields(cost.Calibration):
        if field.name == "source":
            continue
        before, after = getattr(default, field.name), getattr(result.calibration, field.name)
        why = result.kept.get(field.name)
        print(f"  {field.name}: {_constant(before)} " + (f"kept ({why})" if why else f"-> {_constant(after)}"))
    Path(out).write_text(json.dumps(dataclasses.asdict(result.calibration), indent=2) + "\n")
    print(f"wrote {out}; the cost model reads it where {CALIBRATION_VARIABLE}={out}")
    return 0


# --- the command ---


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The check-neuron subcommand's options."""
    parser.add_argument(
        "--generation",
        default="trn2",
        choices=tuple(cost.GENERATIONS),
        help="without a device: the NeuronCore generation the CPU model simulates and the cost "
        "model times (default trn2)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also write everything measured (versions, device, LNC, "
        "probes, DMA, launch and compile times, the table) as JSON",
    )
    parser.add_argument(
        "--calibrate",
        metavar="FILE",
        help="run nothing: fit the cost model's constants to FILE (written by --json) and write a calibration file",
    )
    parser.add_argument(
        "--calibration-out",
        metavar="FILE",
        default="nki_calibration.json",
        help=f"where --calibrate writes (default nki_calibration.json; the cost model reads the "
        f"file named by {CALIBRATION_VARIABLE})",
    )


def _header(where: Where, generation: str) -> None:
    """The versions and the device."""
    width = max(len(name) for name, _ in versions())
    for name, version in versions():
        print(f"  {name.ljust(width)}  {version}")
    print(f"device: {where.line}")
    if not where.measured:
        calibration = cost.calibration()
        constants = (
            "its defaults, fitted to published NKI measurements"
            if calibration.source == "defaults"
            else calibration.source
        )
        print(
            f"  (modelled times are the kernel's alone, from the cost model with {constants}: dd, bf16x6 and "
            f"ozaki also scale and combine on the host, and a call on a device pays its launch, "
            f"{calibration.launch_s * 1e3:.2g} ms)"
        )
    print()


def _summary(rows: list[Row], found: list[Assumption], where: Where, started: float) -> int:
    """The last line; 1 when a row is outside its bound or a check of our own kernel failed."""
    failed = [r for r in rows if not r.ok]
    broken = [a for a in found if a.failed]
    problems = ([f"{len(failed)} of {len(rows)} cases outside their bounds"] if failed else []) + (
        ["the sr kernel is biased or failed"] if broken else []
    )
    verdict = "ok" if not problems else "FAIL: " + "; ".join(problems)
    verified = sum(a.verdict == "verified" for a in found)  # measured on a device; the model's never count
    print(
        f"\ncheck-neuron: {verdict}; {len(rows) - len(failed)}/{len(rows)} cases within their bounds on "
        f"{where.engine}; {verified} device assumptions verified ({time.perf_counter() - started:.1f} s)"
    )
    return 1 if problems else 0


def run(args: argparse.Namespace) -> int:
    """Print the header, the device, a row per case and mode, the device assumptions and the calibration
    measurements (written as JSON with ``--json``); 0 when every row is within its bound and the sr kernel is
    unbiased, 1 otherwise. With ``--calibrate`` only fit a measurement file and write the calibration."""
    if args.calibrate:
        return calibrate_file(args.calibrate, args.calibration_out)
    started = time.perf_counter()
    where = find_where(args.generation)
    # first, silently: their subprocesses need the NeuronCore unclaimed (the gate claims it)
    switches = (stochastic_switch(where, args.seed, False), stochastic_switch(where, args.seed, True))
    print("trn_backend check-neuron")
    with _simulating(where, args.generation):
        gate = compile_gate(where, args.seed)
    print("\n".join(gate_lines(where, gate)))
    print()
    _header(where, args.generation)
    if not all(g.ok for g in gate):
        return _gate_failed(args, where, gate, started)
    time_label = f"time (measured, median of {REPEATS})" if where.measured else f"time (modelled, {args.generation})"
    with _simulating(where, args.generation):
        rows = [
            check(case, mode, where, args.generation, (args.seed, i)) for i, case in enumerate(CASES) for mode in MODES
        ]
        print(table(rows, time_label))
        for r in rows:
            if r.problem:
                print(f"  {r.case.kernel} {r.mode} {r.case.shape}: {r.problem}")
        print()
        found = assumptions_section(where, switches, args.seed)
        print("\n".join(_assumption_lines(where, found)))
    measured = measure(where, args.generation)
    print()
    print("\n".join(measurement_lines(where, measured)))
    if args.json:
        Path(args.json).write_text(
            json.dumps(measurement_file(where, args.generation, rows, found, measured, gate), indent=2) + "\n"
        )
        print(f"\nwrote {args.json}")
    return _summary(rows, found, where, started)


def _gate_failed(args: argparse.Namespace, where: Where, gate: Sequence[Gate], started: float) -> int:
    """After a failed gate: the measurement file (the gate and the versions; nothing else ran) and the verdict."""
    if args.json:
        empty = Measured(logical_cores(where, args.generation))
        Path(args.json).write_text(
            json.dumps(measurement_file(where, args.generation, [], [], empty, gate), indent=2) + "\n"
        )
        print(f"wrote {args.json}\n")
    failed = [g.mode for g in gate if not g.ok]
    print(
        f"check-neuron: FAIL: the compile-and-run gate failed for {', '.join(failed)} on {where.engine}; nothing "
        f"else ran ({time.perf_counter() - started:.1f} s)"
    )
    return 1
