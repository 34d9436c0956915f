"""The cost model's table for docs/trainium.md: modelled time, TFLOPS and Tensor Engine utilization of the NKI
matmul kernels at 512^3, 2048^3 and 4096^3, fast and native, on trn2 (trn1 for reference), with A handed over
as A^T (a view) or transposed on chip. Writes benchmarks/results/nki_cost_model.md and prints it.

    python benchmarks/nki_cost_model.py
"""

from __future__ import annotations

from pathlib import Path

from trn_backend.kernels.nki import cost

SIZES = (512, 2048, 4096)
MODES = ("fast", "native")
OUT = Path(__file__).parent / "results" / "nki_cost_model.md"


def table() -> str:
    header = ("generation", "n (M=K=N)", "mode", "A layout", "modelled time", "TFLOPS", "utilization", "bound by",
              "Tensor", "Vector", "Scalar", "GpSimd", "DMA")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for generation in ("trn2", "trn1"):
        for n in SIZES:
            for mode in MODES:
                for transposed in (True, False):
                    e = cost.modelled("matmul", mode, (1, n, n, n), generation, transposed)
                    shares = [f"{e.share(engine):.0%}" for engine in ("tensor", "vector", "scalar", "gpsimd", "dma")]
                    lines.append("| " + " | ".join([
                        generation, str(n), mode, "A^T view" if transposed else "on-chip transpose",
                        f"{e.seconds * 1e3:.3g} ms", f"{e.tflops:.3g}", f"{e.utilization:.0%}", e.bound_by,
                        *shares]) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    text = table()
    OUT.write_text(text)
    print(text, end="")


if __name__ == "__main__":
    main()
