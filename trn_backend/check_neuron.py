"""``python -m trn_backend check-neuron``: the NKI kernels checked against float64, on a Neuron device or the model.

Prints the toolchain versions and the device, then runs nki.matmul and nki.bmm in the fast and native modes on
a few shapes (standard-normal inputs and a cancellation case) and compares each result with a float64 host
reference: the max componentwise error in units of |A||B| against the mode's published bound, with the time and
TFLOPS (measured on a device; from the cost model without one). Then it probes the fp32 Tensor Engine path: the
rounding of its products and the order of its accumulation. Exit code 0 when every case is within its bound.
Without a Neuron device the kernels run on the CPU model of a NeuronCore (or the NKI simulator where nki is
installed), whose arithmetic is the model's by construction.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.metadata
import math
import platform
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import torch

from . import _device, _precision
from .kernels import nki
from .kernels.nki import cost, toolchain

__all__ = ["CASES", "MODES", "Case", "Row", "Where", "add_arguments", "run", "run_kernel"]

MODES = ("fast", "native")
DISTRIBUTIONS = ("torch", "torch-neuronx", "torch-xla", "neuronx-cc", "nki")
REPEATS = 5  # timed runs per case on a device; the median is shown
# the fp32 path probes: full-significand values (K = 1) and an accumulation whose order shows in its result
PRODUCT_SHAPE = (128, 512)
SMALL_TERM = 2.0 ** -25  # a quarter of fp32's ulp at 1.0: each one vanishes when added to 1.0 alone
ACCUMULATION_K = 128  # one nc_matmul: the order is the Tensor Engine's own

run_kernel = nki.run  # what the checks call: tests swap it for a wrong kernel


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
    problem: str = ""  # why the kernel did not run, if it did not

    @property
    def ok(self) -> bool:
        return not self.problem and self.error <= self.bound  # NaN errors fail too

    @property
    def tflops(self) -> float | None:
        return self.case.flops / self.seconds / 1e12 if self.seconds else None


# --- header and device ---

def versions() -> list[tuple[str, str]]:
    """(name, version) of the NKI toolchain, the Neuron and torch distributions, and Python: what a bug report
    about these kernels needs first."""
    found = [("NKI toolchain", nki.TOOLCHAIN)]
    for name in DISTRIBUTIONS:
        try:
            found.append((name, importlib.metadata.version(name)))
        except importlib.metadata.PackageNotFoundError:
            found.append((name, "not installed"))
    return [*found, ("Python", platform.python_version())]


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
            return Where(device, True, f"Neuron device {device}" + (f" on {instance}" if instance else "")
                         + f", {toolchain.NAME}; the kernels run there, times measured (median of {REPEATS} runs)",
                         f"Neuron device {device}")
    simulator = (f"the NKI simulator ({toolchain.NAME}) on the CPU" if toolchain.REAL
                 else f"the CPU model of a {generation} NeuronCore")
    return Where(torch.device("cpu"), False,
                 f"no Neuron device ({'; '.join(reasons)}): the kernels run on {simulator}, and the times are "
                 f"the cost model's for a {generation} NeuronCore (modelled, not measured)",
                 simulator.removesuffix(" on the CPU"))


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


def median_seconds(call: Callable[[], torch.Tensor], repeats: int | None = None) -> float:
    """The median wall time of ``call`` on the device over ``repeats`` (default REPEATS) runs, each synchronized;
    one untimed run first pays the kernel's compilation and loading."""
    _synchronize(call())
    times = []
    for _ in range(REPEATS if repeats is None else repeats):
        start = time.perf_counter()
        _synchronize(call())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _on(where: Where, a: torch.Tensor, b: torch.Tensor, case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """The operands on the device; an A^T-view case moves A^T (contiguous) and hands the kernel its .mT."""
    if case.a_transposed:
        return a.mT.contiguous().to(where.device).mT, b.to(where.device)
    return a.to(where.device), b.to(where.device)


def check(case: Case, mode: str, where: Where, generation: str, seed: Sequence[int]) -> Row:
    """Run ``case`` in ``mode`` on inputs from ``seed``, compare with float64, and time it (measured on a device,
    modelled on the CPU). A kernel that fails to run is a failed row with the reason; the other cases still run."""
    a, b = operands(case, np.random.default_rng(seed))
    bound = _precision.error_bound(mode, torch.float32, case.K)
    try:
        da, db = _on(where, a, b, case)
        c = run_kernel(case.kernel, da, db, mode)
        error = componentwise_error(c.cpu(), a, b)
        if where.measured:
            seconds = median_seconds(lambda: run_kernel(case.kernel, da, db, mode))
        else:
            seconds = cost.modelled(case.kernel, mode, case.bmkn, generation, case.a_transposed).seconds
    except Exception as e:  # reported in the row; the exit code says it failed
        return Row(case, mode, math.nan, bound, None, f"{type(e).__name__}: {e}")
    return Row(case, mode, error, bound, seconds)


def _format_seconds(seconds: float | None) -> str:
    """3 significant digits in s, ms, us or ns: modelled kernel times run from ns to ms."""
    if seconds is None:
        return "-"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def table(rows: list[Row], time_label: str) -> str:
    """The rows as an aligned text table, one line per (kernel, mode, shape)."""
    head = ("kernel", "mode", "inputs", "shape", "max error", "bound", "result", time_label, "TFLOPS")
    lines = [head]
    for r in rows:
        lines.append((r.case.kernel, r.mode, r.case.inputs_label, r.case.shape, f"{r.error:.2e}",
                      f"{r.bound:.2e}", "ok" if r.ok else "FAIL", _format_seconds(r.seconds),
                      "-" if r.tflops is None else f"{r.tflops:.3g}"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip()
                     for line in lines)


# --- the fp32 Tensor Engine path ---

def product_precision(where: Where, seed: int) -> tuple[float, float]:
    """(max relative error, effective significand bits = -log2 of it) of the native kernel's K = 1 products of
    1 + random 23-bit fractions (24 significant bits each) against their exact float64 products: 24 bits are
    correctly rounded fp32 products; about 16 would point at a bf16x2/bf16x3 decomposition."""
    rng = np.random.default_rng([seed, 1 << 20])
    m, n = PRODUCT_SHAPE
    fractions = (rng.integers(0, 1 << 22, size=m + n) << 1) | 1  # odd: the last significand bit is set
    values = torch.from_numpy(1.0 + fractions / 2.0 ** 23).float()
    a, b = values[:m].reshape(m, 1), values[m:].reshape(1, n)
    c = run_kernel("matmul", a.to(where.device), b.to(where.device), "native").cpu().double()
    exact = a.double() @ b.double()  # 48-bit products: exact in float64
    worst = float(((c - exact).abs() / exact).max())
    return worst, (-math.log2(worst) if worst > 0 else math.inf)


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
    known = {(1.0, exact): "sequential fp32 in K order", (exact, exact): "exact / wider accumulation",
             (exact, 1.0): "sequential fp32 in reverse K order"}
    return known.get((first, last), "other")


def accumulation_order(where: Where) -> tuple[float, float, str]:
    """Row 0 and row 1 of the native kernel on accumulation_operands, and which accumulation they match."""
    a, b = accumulation_operands()
    c = run_kernel("matmul", a.to(where.device), b.to(where.device), "native").cpu()
    first, last = float(c[0, 0]), float(c[1, 0])
    return first, last, accumulation_verdict(first, last)


def precision_section(where: Where, seed: int) -> list[str]:
    """The fp32 Tensor Engine section: what the products and the accumulation order look like, and whether
    that is a measurement of hardware or the simulation's own arithmetic."""
    how = "measured" if where.measured else "simulated"
    lines = ["fp32 Tensor Engine path (native kernel; its precision is not documented):"]
    try:
        worst, bits = product_precision(where, seed)
        lines.append(f"  products ({how}): K = 1, {PRODUCT_SHAPE[0]} x {PRODUCT_SHAPE[1]} full-significand fp32 "
                     f"values: max relative error {worst:.3g}, effective significand bits {bits:.1f} "
                     "(24: correctly rounded fp32 products; ~16: a bf16x2/3 decomposition)")
        first, last, verdict = accumulation_order(where)
        exact = 1.0 + (ACCUMULATION_K - 1) * SMALL_TERM
        lines.append(f"  accumulation ({how}): K = {ACCUMULATION_K}, 1.0 and 127 terms of 2**-25: 1.0 first "
                     f"gives {first!r}, 1.0 last gives {last!r} (exact sum {exact!r}; sequential fp32 gives "
                     f"1.0 and {float(np.float32(exact))!r}): {verdict}")
    except Exception as e:  # informational section: say what failed, keep the exit code
        lines.append(f"  could not run: {type(e).__name__}: {e}")
    if where.measured:
        lines.append(f"  measured on {where.engine}.")
    else:
        model = ("the NKI simulator's" if toolchain.REAL
                 else "the CPU model's own arithmetic by construction (fp32 products rounded to nearest, fp32 "
                      "adds in K order)")
        lines.append(f"  no Neuron device: this is {model}, not evidence about the hardware.")
    return lines


# --- the command ---

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The check-neuron subcommand's options."""
    parser.add_argument("--generation", default="trn2", choices=tuple(cost.GENERATIONS),
                        help="without a device: the NeuronCore generation the CPU model simulates and the cost "
                             "model times (default trn2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (default 0)")


def run(args: argparse.Namespace) -> int:
    """Print the header, the device, a row per case and the fp32 section; 0 when every case is within its
    bound, 1 otherwise."""
    started = time.perf_counter()
    print("trn_backend check-neuron")
    width = max(len(name) for name, _ in versions())
    for name, version in versions():
        print(f"  {name.ljust(width)}  {version}")
    where = find_where(args.generation)
    print(f"device: {where.line}")
    if not where.measured:
        print(f"  (modelled times are the kernel's alone, engines overlapping perfectly; a call on a device also "
              f"pays its launch, about {cost.LAUNCH_OVERHEAD_S * 1e3:.1f} ms)")
    print()
    time_label = f"time (measured, median of {REPEATS})" if where.measured else f"time (modelled, {args.generation})"
    with _simulating(where, args.generation):
        rows = [check(case, mode, where, args.generation, (args.seed, i))
                for i, case in enumerate(CASES) for mode in MODES]
        print(table(rows, time_label))
        for r in rows:
            if r.problem:
                print(f"  {r.case.kernel} {r.mode} {r.case.shape}: {r.problem}")
        print()
        print("\n".join(precision_section(where, args.seed)))
    failed = [r for r in rows if not r.ok]
    verdict = "ok" if not failed else f"FAIL: {len(failed)} of {len(rows)} cases outside their bounds"
    print(f"\ncheck-neuron: {verdict}; {len(rows) - len(failed)}/{len(rows)} cases within their bounds on "
          f"{where.engine} ({time.perf_counter() - started:.1f} s)")
    return 1 if failed else 0
