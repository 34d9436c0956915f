"""``make demo``: trn_backend doing its real jobs on the CPU default, in about a minute.

1. The DF-MP2 correlation energy of benzene (cc-pVDZ, RI basis cc-pVDZ-RI) from PySCF's integrals: the
   contractions on trn_backend under every precision mode and two ``target_forward_error=`` targets, each energy
   against PySCF's own float64 DF-MP2 energy, with its wall time and the modelled trn2 time of its contractions.
2. The same energy written in plain NumPy (``np.einsum``), run unchanged on NeuronArrays.
3. One amplitude of a random quantum circuit, a network of a few hundred tensors: a cotengra HyperOptimizer tree
   sliced to a memory limit, contracted by backends "trn", "torch" and "numpy", with explain()'s FLOPs.
4. A PNG of 1 and 3, and the printed report as text, both in ``build/`` by default.

    python examples/demo.py [--molecule water] [--circuit 4x4x10] [--png build/demo.png] [--no-progress]

Needs the chem, plot and cotengra extras: pip install -e ".[chem,plot,cotengra]". The stages live in
``examples/demo_stages/`` (tests/docs/test_demo.py runs them on water and a small circuit).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import sys
import time
from pathlib import Path

NEEDED = {"pyscf": "chem", "cotengra": "cotengra", "matplotlib": "plot"}


def _check_extras() -> None:
    missing = [name for name in NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        extras = ",".join(sorted({NEEDED[m] for m in missing}))
        raise SystemExit(
            f'the demo needs {", ".join(missing)}: pip install -e ".[{extras}]" '
            f"(or run `make demo`, which installs them)"
        )


if __name__ == "__main__":
    _check_extras()
    # PySCF's and torch's OpenMP threads and NumPy's OpenBLAS threads take turns on the same cores here; a pool
    # that spins while it waits steals them from the next library's call (on a busy 2-core machine: the RHF 5x
    # slower, small torch calls 100x). Idle threads go to sleep at once instead: in this process only, and only
    # where the environment does not say otherwise (as benchmarks/bench_sliced.py does).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from demo_stages import chemistry, figure, network  # noqa: E402
from tqdm import tqdm  # noqa: E402

import trn_backend as xp  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


@dataclasses.dataclass
class Results:
    rows: list[chemistry.Row]
    numpy_energy: float  # mp2_energy_numpy on NumPy arrays
    dispatched_energy: float  # the same function on NeuronArrays
    dispatched_type: type
    timings: list[network.Timing]
    png: Path
    text: Path
    seconds: float


class Stage:
    """A tqdm bar on stderr for one stage (``advance(label)`` before each unit of work) and its wall time."""

    def __init__(self, title: str, total: int, enabled: bool) -> None:
        self.bar = tqdm(
            total=total, desc=title, unit="step", leave=False, disable=not enabled, file=sys.stderr, dynamic_ncols=True
        )
        self.started = False
        self.start = time.perf_counter()

    def advance(self, label: str) -> None:
        if self.started:
            self.bar.update(1)
        self.started = True
        self.bar.set_postfix_str(label)

    def close(self) -> float:
        self.bar.update(self.bar.total - self.bar.n)
        self.bar.close()
        return time.perf_counter() - self.start


class Report:
    """Prints to stdout and keeps the lines for the text file written next to the PNG."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str = "") -> None:
        print(line, flush=True)
        self.lines.append(line)


def main(argv: list[str] | None = None) -> Results:
    args = _arguments(argv)
    start = time.perf_counter()
    say = Report()
    say(
        f"trn-backend demo on {xp.asarray(np.zeros(1)).device}: torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), NumPy {np.__version__}"
    )
    rows, problem = chemistry_stage(args, say)
    numpy_energy, dispatched, dispatched_type = dispatch_stage(problem, args, say)
    timings, per_step = network_stage(args, say)
    png = figure.write_png(
        args.png,
        rows,
        timings,
        f"trn-backend demo: DF-MP2 of {problem.molecule.name}, circuit amplitude ({args.circuit})",
        per_step,
    )
    text = args.png.with_suffix(".txt")
    say()
    say(f"[4/4] figure: {png}")
    say(f"      this report: {text}")
    seconds = time.perf_counter() - start
    say(f"total {seconds:.1f} s")
    text.write_text("\n".join(say.lines) + "\n")
    return Results(rows, numpy_energy, dispatched, dispatched_type, timings, png, text, seconds)


def _circuit(text: str) -> network.Circuit:
    try:
        rows, cols, cycles = (int(n) for n in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"--circuit takes ROWSxCOLSxCYCLES such as 4x5x14, got {text!r}") from None
    return network.Circuit(rows, cols, cycles)


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--molecule", choices=sorted(chemistry.MOLECULES), default="benzene")
    parser.add_argument(
        "--circuit",
        type=_circuit,
        default=network.Circuit(4, 5, 14),
        help="qubit grid and cycles, ROWSxCOLSxCYCLES (default 4x5x14)",
    )
    parser.add_argument("--memory-limit", type=int, default=2**18, help="elements per intermediate (default 2**18)")
    parser.add_argument("--trials", type=int, default=16, help="cotengra HyperOptimizer trials (default 16)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per network backend (default 3)")
    parser.add_argument(
        "--png",
        type=Path,
        default=ROOT / "build" / "demo.png",
        help="where the figure goes; the report goes next to it as .txt (default build/demo.png)",
    )
    parser.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bars")
    return parser.parse_args(argv)


# --- stage 1 ---


def chemistry_stage(args: argparse.Namespace, say: Report) -> tuple[list[chemistry.Row], chemistry.Problem]:
    import pyscf

    molecule = chemistry.MOLECULES[args.molecule]
    chosen = chemistry.settings()
    stage = Stage("[1/4] DF-MP2", 3 + len(chosen), args.progress)
    problem = chemistry.pyscf_problem(molecule, stage.advance)
    stage.advance("error-bound magnitudes")
    calculation = chemistry.Calculation(problem)
    rows = list(chemistry.sweep(calculation, chosen, progress=stage.advance))
    seconds = stage.close()

    say()
    say(
        f"[1/4] DF-MP2 correlation energy of {molecule.name}, {molecule.basis} with the {molecule.auxbasis} fit "
        f"({seconds:.1f} s)"
    )
    say(f"      {problem.sizes}")
    say(
        f"      PySCF {pyscf.__version__}: RHF {problem.e_hf:.9f} Eh ({problem.seconds['scf']:.1f} s), DF-MP2 "
        f"{problem.e_reference:.12f} Eh ({problem.seconds['mp2']:.1f} s): the reference, float64"
    )
    say(
        "      trn_backend: (Q|ia) = sum_mn L_Qmn C_mi C_na and (ia|jb) = sum_Q (Q|ia)(Q|jb) by "
        'opt_einsum.contract(backend="trn")'
    )
    say("      under each setting; E = sum_ijab (ia|jb)[2(ia|jb) - (ib|ja)] / (e_i + e_j - e_a - e_b) in float64")
    say()
    for line in _energy_table(rows):
        say(line)
    return rows, problem


def _energy_table(rows: list[chemistry.Row]) -> list[str]:
    notes: dict[str, str] = {}

    def model(row: chemistry.Row) -> str:
        if row.trn2_seconds is not None:
            return f"{row.trn2_seconds * 1e3:.3g}"
        mark = notes.setdefault(row.trn2_note, "abcdefgh"[len(notes)])
        return f"- ({mark})"

    def accuracy(row: chemistry.Row) -> str:
        return (
            "1 uEh"
            if row.meets(chemistry.MICROHARTREE)
            else ("chemical" if row.meets(chemistry.CHEMICAL_ACCURACY) else "no")
        )

    header = (
        "setting",
        "data",
        "mode per step",
        "E_corr (Eh)",
        "error (uEh)",
        "time (s)",
        "trn2 model (ms)",
        "accuracy",
    )
    table = [
        (
            r.setting.label,
            str(r.setting.dtype),
            _modes(r.modes),
            f"{r.energy:.12f}",
            f"{r.error * 1e6:.4g}",
            f"{r.seconds:.3f}",
            model(r),
            accuracy(r),
        )
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *table]) for i in range(len(header))]
    right = {3, 4, 5}  # numbers

    def line(cells) -> str:
        return (
            "  "
            + "  ".join(
                c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()
        )

    lines = [line(header), *map(line, table)]
    if notes:
        lines.append("  " + "; ".join(f"({mark}) {note}" for note, mark in notes.items()))
    lines.append("")
    lines += _verdicts(rows)
    return lines


def _modes(modes: tuple[str, ...]) -> str:
    """The steps' modes: one name when they agree."""
    return modes[0] if len(set(modes)) == 1 else ", ".join(modes)


def _verdicts(rows: list[chemistry.Row]) -> list[str]:
    def names(chosen) -> str:
        return (
            ", ".join(f"{r.setting.label}{' (float64)' if str(r.setting.dtype) == 'float64' else ''}" for r in chosen)
            or "none"
        )

    chem, micro = chemistry.CHEMICAL_ACCURACY, chemistry.MICROHARTREE
    return [
        f"  measured, within 1 uEh: {names(r for r in rows if r.meets(micro))}",
        f"  measured, within chemical accuracy (1.6 mEh) only: "
        f"{names(r for r in rows if r.meets(chem) and not r.meets(micro))}",
        f"  measured, outside chemical accuracy: {names(r for r in rows if not r.meets(chem))}",
        "  guaranteed a priori by the published bounds (each step's error_bound carried to the energy):",
        f"    within 1 uEh: {names(r for r in rows if r.bound <= micro)}; within 1.6 mEh: "
        f"{names(r for r in rows if micro < r.bound <= chem)}",
    ]


# --- stage 2 ---


def dispatch_stage(problem: chemistry.Problem, args: argparse.Namespace, say: Report) -> tuple[float, float, type]:
    stage = Stage("[2/4] NumPy dispatch", 2, args.progress)
    arrays = (problem.factors, problem.c_occ, problem.c_vir, problem.e_occ, problem.e_vir)
    stage.advance("NumPy arrays")
    start = time.perf_counter()
    expected = chemistry.mp2_energy_numpy(*arrays)
    numpy_seconds = time.perf_counter() - start
    stage.advance("NeuronArrays")
    neuron_arrays = [xp.asarray(a) for a in arrays]
    start = time.perf_counter()
    dispatched = chemistry.mp2_energy_numpy(*neuron_arrays)  # the one line: NumPy code, trn_backend arrays
    dispatched_seconds = time.perf_counter() - start
    stage.close()

    say()
    say("[2/4] NumPy dispatch: chemistry.mp2_energy_numpy, written with np.einsum, np.transpose and np.sum")
    say(
        f"      on NumPy float64 arrays   {float(expected):.12f} Eh  {type(expected).__name__:<11}  "
        f"{numpy_seconds:.2f} s"
    )
    say(
        f"      on NeuronArrays (float64) {float(dispatched):.12f} Eh  {type(dispatched).__name__:<11}  "
        f"{dispatched_seconds:.2f} s   difference {abs(float(dispatched) - float(expected)):.1e} Eh, "
        f"from PySCF {abs(float(dispatched) - problem.e_reference):.1e} Eh"
    )
    return float(expected), float(dispatched), type(dispatched)


# --- stage 3 ---


def network_stage(args: argparse.Namespace, say: Report) -> tuple[list[network.Timing], str]:
    """The stage's timings, and a line for the figure's caption: trn's time over torch's per contraction step."""
    stage = Stage("[3/4] tensor network", 3 + 3 * (1 + args.repeats), args.progress)
    stage.advance("circuit")
    net = network.circuit_network(args.circuit)
    stage.advance(f"cotengra search ({args.trials} trials)")
    start = time.perf_counter()
    tree = network.sliced_tree(net, args.memory_limit, args.trials)
    search_seconds = time.perf_counter() - start
    stage.advance("explain")
    dtype = net.arrays[0].dtype
    found = xp.explain(net.subscripts, *net.shapes, dtype=dtype, optimize=[tuple(s) for s in tree.get_path()])
    greedy = xp.explain(net.subscripts, *net.shapes, dtype=dtype, optimize="greedy")
    timings = network.time_backends(net, tree, args.memory_limit, args.repeats, stage.advance)
    seconds = stage.close()

    unsliced_flops = _unsliced_flops(tree)
    indices = len(set(net.subscripts) - {",", "-", ">"})
    say()
    say(
        f"[3/4] Tensor network: amplitude <x|C|0> of a random circuit, {args.circuit}: {len(net.arrays)} tensors, "
        f"{indices} indices, {dtype} ({seconds:.1f} s)"
    )
    say(f"      {'path':<44}  {'FLOPs (explain)':>15}  {'largest intermediate':>20}")
    say(f"      {'opt_einsum greedy':<44}  {greedy.flops:>15.3g}  {greedy.largest_intermediate:>20,}")
    say(
        f"      {f'cotengra HyperOptimizer, {args.trials} trials ({search_seconds:.1f} s)':<44}  "
        f"{found.flops:>15.3g}  {found.largest_intermediate:>20,}"
    )
    say(
        f"      sliced to memory_limit={args.memory_limit:,} elements: {tree.multiplicity} slices over "
        f"{len(tree.sliced_inds)} indices, largest intermediate {tree.max_size():,}, "
        f"{tree.total_flops() / unsliced_flops - 1:+.0%} FLOPs"
    )
    say(f"      {'backend':<8}  {f'median of {args.repeats} (s)':>16}  {'vs trn':>7}  amplitude")
    trn = timings[0].median
    for t in timings:
        say(f"      {t.backend:<8}  {t.median:>16.3f}  {t.median / trn:>6.2f}x  {t.value:.9g}")
    say(
        f"      the three agree: max |difference| / |amplitude| = {network.disagreement(timings):.1e} "
        f"({dtype} rounding)"
    )
    steps = (len(net.arrays) - 1) * tree.multiplicity  # binary steps of the tree, in every slice
    torch_seconds = next(t.median for t in timings if t.backend == "torch")
    per_step = (
        f"Here trn - torch = {(trn - torch_seconds) * 1e3:+.0f} ms over {steps:,} steps\n"
        f"({tree.multiplicity} slices): {(trn - torch_seconds) / steps * 1e6:+.1f} us per step."
    )
    say(f"      {per_step.replace(chr(10), ' ')}")
    return timings, per_step


def _unsliced_flops(tree) -> float:
    """cotengra's FLOP count of the same path without slicing (its own units, for the overhead ratio)."""
    import cotengra as ctg

    return ctg.ContractionTree.from_path(tree.inputs, tree.output, tree.size_dict, path=tree.get_path()).total_flops()


if __name__ == "__main__":
    main()
