"""The cost model's tables for docs/trainium.md: modelled time, TFLOPS and Tensor Engine utilization of the NKI
matmul kernels at 512^3, 2048^3 and 4096^3, fast and native, on trn2 (trn1 for reference), with A handed over
as A^T (a view) or transposed on chip; then every precision mode's fused kernel at 4096^3 on trn2, relative to
fast, with each engine's share; then the calibration: the published kernel times the model's two constants are
fitted to, against the model's time of our port of each kernel (tests/kernels/nki_calibration_kernels.py), with
each point's error when the fit leaves it out, and further published times of ported kernels that the fit never
saw. Writes benchmarks/results/nki_cost_model.md and prints it.

    python benchmarks/nki_cost_model.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from trn_backend.kernels.nki import cost

SIZES = (512, 2048, 4096)
MODES = ("fast", "native")
FUSED = ("fast", "native", "dd", "bf16x6", "ozaki", "sr")
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "dma")
OUT = Path(__file__).parent / "results" / "nki_cost_model.md"
TESTS = Path(__file__).resolve().parents[1] / "tests" / "kernels"


def table() -> str:
    header = (
        "generation",
        "n (M=K=N)",
        "mode",
        "A layout",
        "modelled time",
        "TFLOPS",
        "utilization",
        "bound by",
        "Tensor",
        "Vector",
        "Scalar",
        "GpSimd",
        "DMA",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for generation in ("trn2", "trn1"):
        for n in SIZES:
            for mode in MODES:
                for transposed in (True, False):
                    e = cost.modelled("matmul", mode, (1, n, n, n), generation, transposed)
                    shares = [f"{e.share(engine):.0%}" for engine in ENGINES]
                    lines.append(
                        "| "
                        + " | ".join(
                            [
                                generation,
                                str(n),
                                mode,
                                "A^T view" if transposed else "on-chip transpose",
                                f"{e.seconds * 1e3:.3g} ms",
                                f"{e.tflops:.3g}",
                                f"{e.utilization:.0%}",
                                e.bound_by,
                                *shares,
                            ]
                        )
                        + " |"
                    )
    return "\n".join(lines) + "\n"


def modes_table(n: int = 4096) -> str:
    """Every mode's kernel at n^3 on trn2 (A as the A^T view), its time relative to fast and engine shares."""
    header = (
        "mode",
        "bf16 passes",
        "modelled time",
        "vs fast",
        "bound by",
        "Tensor",
        "Vector",
        "Scalar",
        "GpSimd",
        "DMA",
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    fast = cost.modelled("matmul", "fast", (1, n, n, n), "trn2", True).seconds
    for mode in FUSED:
        e = cost.modelled("matmul", mode, (1, n, n, n), "trn2", True)
        passes = {"fast": "1", "native": "4 (fp32)", "dd": "3", "bf16x6": "6", "ozaki": "10 (4 slices)", "sr": "1"}[
            mode
        ]
        lines.append(
            "| "
            + " | ".join(
                [
                    mode,
                    passes,
                    f"{e.seconds * 1e3:.3g} ms",
                    f"{e.seconds / fast:.2f}x",
                    e.bound_by,
                    *(f"{e.share(engine):.0%}" for engine in ENGINES),
                ]
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


PROGRAM_CASES = (("matmul", (1, 4096, 4096, 4096)), ("matmul", (1, 4096, 8192, 8192)), ("bmm", (3, 1100, 8320, 2600)))
PROGRAM_MODES = (
    ("fast", False),
    ("native", False),
    ("dd", False),
    ("bf16x6", False),
    ("dd", True),
    ("bf16x6", True),
    ("ozaki", False),
    ("sr", False),
)


def program_table() -> str:
    """Instructions of the program one physical core runs (trn2, LNC=2, A transposed on chip) per mode and shape:
    each dynamic loop's body once, everything else as often as it appears."""
    header = (
        "mode",
        *(f"{kernel} {'x'.join(map(str, bmkn if kernel == 'bmm' else bmkn[1:]))}" for kernel, bmkn in PROGRAM_CASES),
    )
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for mode, float64 in PROGRAM_MODES:
        cells = []
        for kernel, bmkn in PROGRAM_CASES:
            if kernel == "bmm" and mode == "sr":
                cells.append("(no bmm kernel)")
                continue
            cells.append(f"{cost.modelled(kernel, mode, bmkn, 'trn2', False, float64).program_instructions:,}")
        lines.append("| " + " | ".join([mode + (" (float64 data)" if float64 else ""), *cells]) + " |")
    return "\n".join(lines) + "\n"


def _fixtures():
    """tests/kernels/nki_calibration_kernels.py, imported as the tests import it (one module: one cache of the
    ports' counting runs in a test process)."""
    root = str(TESTS.parents[1])
    sys.path.insert(0, root)
    try:
        from tests.kernels import nki_calibration_kernels
    finally:
        sys.path.remove(root)
    return nki_calibration_kernels


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.4g} ms"


def calibration_table() -> str:
    """The fitted constants; each calibration point (its source, how it was measured, the published time, the
    modelled time of our port under the default calibration, the error, and the error when the fit leaves the
    point out); then each out-of-sample published time of a ported kernel, modelled under the defaults."""
    fixtures = _fixtures()
    fit, defaults = fixtures.fit(), cost.Calibration()
    lines = [
        f"Least squares (log errors): tensor_efficiency {fit.tensor_efficiency:.3f}, trn1 DMA "
        f"{fit.trn1_dma_bytes_per_s / 1e9:.1f} GB/s; the defaults: {defaults.tensor_efficiency:.3f}, "
        f"{cost.TRN1.dma_bytes_per_s / 1e9:.1f} GB/s.",
        "",
        "| point | generation | source | measured | published | modelled | error | error left out | bound by |",
        "|" + "---|" * 9,
    ]
    for point in fixtures.POINTS:
        e = fixtures.estimate(point, defaults)
        lines.append(
            f"| {point.name} | {point.generation} | {point.source} | {point.measured} | "
            f"{_ms(point.published_s)} | {_ms(e.seconds)} | {e.seconds / point.published_s - 1:+.1%} | "
            f"{fit.left_out[point.name]:+.1%} | {e.bound_by} |"
        )
    lines += [
        "",
        "Out of sample (never fitted):",
        "",
        "| point | generation | source | measured | published | modelled | error | bound by |",
        "|" + "---|" * 8,
    ]
    for point in fixtures.REPORTED:
        e = fixtures.estimate(point, defaults)
        lines.append(
            f"| {point.name} | {point.generation} | {point.source} | {point.measured} | "
            f"{_ms(point.published_s)} | {_ms(e.seconds)} | {e.seconds / point.published_s - 1:+.1%} | "
            f"{e.bound_by} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    text = table() + "\n" + modes_table() + "\n" + program_table() + "\n" + calibration_table()
    OUT.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
