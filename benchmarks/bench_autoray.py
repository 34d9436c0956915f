"""Benchmark: the route autoray-based libraries take: cotengra and quimb on NeuronArrays against torch tensors.

Libraries built on autoray (cotengra, quimb) never call opt_einsum's backend: they look up ``tensordot``,
``einsum``, ``transpose`` and friends in the arrays' own namespace (autoray dispatches a NeuronArray to
trn_backend). This measures what that route costs against the same library on the bare torch tensors, with the
same contraction path, on complex128 quimb networks:

- cotengra, ``ctg_expr``: ``cotengra.einsum_expression(eq, *shapes, optimize=path)`` built once, called on the
  arrays;
- cotengra, ``ctg_einsum``: ``cotengra.einsum(eq, *arrays, optimize=path)`` (``cotengra.contract`` is the same
  function) per call, its expression cached by cotengra;
- quimb, ``quimb``: ``tn.contract(all, optimize=path, output_inds=...)`` on the network whose arrays are the torch
  tensors (``tn.apply_to_arrays(torch.asarray)``) or NeuronArrays wrapping those tensors (then
  ``tn.apply_to_arrays(trn_backend.asarray)``, no copy).

The path is computed once per instance (opt_einsum's random-greedy, 64 trials, trial r seeded with r: the same
path on every run: the script re-runs itself with PYTHONHASHSEED=0, as the paths otherwise depend on the
iteration order of sets of strings) and given to every form; each row records a digest of its equation and path.
Instances (all complex128):

- circuit amplitudes <0...0|C|0> of random circuits (U3 layers, CZ on random pairs, seed 3): 16 qubits x 10 layers
  after quimb's default simplifications, and 12 qubits x 8 layers unsimplified;
- QAOA: the amplitude network of ``quimb.tensor.circ_qaoa`` for MaxCut on a random 3-regular graph of 16 nodes
  (networkx seed 5), depth 2, angles from numpy seed 5, unsimplified;
- PEPS: the norm network of ``PEPS.rand(4, 4, bond_dim=3, seed=2, dtype='complex128')``;
- MPS: the norm network of ``MPS_rand_state(32, bond_dim=64, seed=2, dtype='complex128')``.

Before timing every form's result is compared with a NumPy complex128 contraction of the same network on the same
path (norm-wise relative difference; limit max(1000 eps, 10 x the torch form's error)); a form that raises is
recorded with its error and left out of the timing. All forms of an instance run in one process, interleaved:
each repetition runs every form once (rotating their order, after a warm-up), idle BLAS/OpenMP threads set to
sleep. Times are medians; ratios trn/torch per library are medians of per-repetition ratios (robust to load
changes on a shared machine). Summary per library: geometric mean and largest ratio. The JSON in
benchmarks/results/ keeps every sample. A measurement, not a test.

    python benchmarks/bench_autoray.py [--reps 11] [--only circuit,peps]
                                       [--out benchmarks/results/bench_autoray.json]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import hashlib  # noqa: E402
import math  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import autoray  # noqa: E402
import cotengra as ctg  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import opt_einsum as oe  # noqa: E402
import quimb  # noqa: E402
import quimb.tensor as qtn  # noqa: E402
import torch  # noqa: E402
from _results import fixed_hash_seed, interleaved_ms, run_metadata, save  # noqa: E402

import trn_backend as xp  # noqa: E402

RESULTS = Path(__file__).parent / "results"
LIBRARIES = ("ctg_expr", "ctg_einsum", "quimb")
FORMS = tuple(f"{lib}:{arr}" for lib in LIBRARIES for arr in ("torch", "trn"))
FAMILIES = ("circuit", "qaoa", "peps", "mps")
PATH_SOURCE = "opt_einsum random-greedy, 64 trials (trial r seeded with r)"
SAMPLE_S = 0.02  # calls shorter than this are repeated within a sample


# ---------------------------------------------------------------------------------------------------- instances


def _circuit(qubits: int, layers: int, simplify: str, seed: int) -> qtn.TensorNetwork:
    circ = qtn.Circuit(qubits)
    rng = np.random.default_rng(seed)
    for _ in range(layers):
        for q in range(qubits):
            circ.apply_gate("U3", *rng.uniform(0, 2 * np.pi, 3), q)
        pairs = rng.permutation(qubits)
        for i in range(0, qubits - 1, 2):
            circ.apply_gate("CZ", int(pairs[i]), int(pairs[i + 1]))
    return circ.amplitude_tn("0" * qubits, simplify_sequence=simplify, dtype="complex128")


def _qaoa(nodes: int, depth: int, seed: int) -> qtn.TensorNetwork:
    graph = nx.random_regular_graph(3, nodes, seed=seed)
    rng = np.random.default_rng(seed)
    terms = {(int(i), int(j)): 1.0 for i, j in graph.edges}
    circ = qtn.circ_qaoa(terms, depth, rng.uniform(0, np.pi, depth), rng.uniform(0, np.pi, depth))
    return circ.amplitude_tn("0" * nodes, simplify_sequence="", dtype="complex128")


def instances(families: tuple[str, ...]) -> list[dict]:
    out = []
    if "circuit" in families:
        out += [
            dict(
                family="circuit",
                name="circuit 16 qubits x 10 layers, simplified",
                tn=_circuit(16, 10, "ADCRS", 3),
                source="quimb Circuit(16), 10 random layers (seed 3), amplitude_tn('0' * 16, dtype='complex128')",
            ),
            dict(
                family="circuit",
                name="circuit 12 qubits x 8 layers, raw",
                tn=_circuit(12, 8, "", 3),
                source="quimb Circuit(12), 8 random layers (seed 3), amplitude_tn('0' * 12, "
                "simplify_sequence='', dtype='complex128')",
            ),
        ]
    if "qaoa" in families:
        out.append(
            dict(
                family="qaoa",
                name="QAOA MaxCut, 16 nodes, depth 2, raw",
                tn=_qaoa(16, 2, 5),
                source="quimb circ_qaoa on networkx random_regular_graph(3, 16, seed=5), depth 2, angles "
                "numpy seed 5; amplitude_tn(simplify_sequence='', dtype='complex128')",
            )
        )
    if "peps" in families:
        out.append(
            dict(
                family="peps",
                name="PEPS norm 4x4, bond 3",
                tn=qtn.PEPS.rand(4, 4, bond_dim=3, seed=2, dtype="complex128").make_norm(),
                source="quimb PEPS.rand(4, 4, bond_dim=3, seed=2, dtype='complex128').make_norm()",
            )
        )
    if "mps" in families:
        out.append(
            dict(
                family="mps",
                name="MPS norm, 32 sites, bond 64",
                tn=qtn.MPS_rand_state(32, bond_dim=64, seed=2, dtype="complex128").make_norm(),
                source="quimb MPS_rand_state(32, bond_dim=64, seed=2, dtype='complex128').make_norm()",
            )
        )
    return out


def _equation(tn: qtn.TensorNetwork) -> tuple[str, tuple]:
    """The network as an einsum equation over single-character indices (in order of appearance), and quimb's
    output indices (its open ones, in quimb's order)."""
    inputs, output, _ = tn.get_inputs_output_size_dict()
    symbols: dict[str, str] = {}
    for ix in (ix for term in (*inputs, output) for ix in term):
        symbols.setdefault(ix, oe.get_symbol(len(symbols)))
    eq = ",".join("".join(symbols[ix] for ix in term) for term in inputs) + "->" + "".join(map(symbols.get, output))
    return eq, tuple(tn.outer_inds())


# ---------------------------------------------------------------------------------------------------- measuring


def _networks(tn: qtn.TensorNetwork) -> tuple[qtn.TensorNetwork, qtn.TensorNetwork]:
    """The network on torch tensors, and on NeuronArrays wrapping those same tensors."""
    on_torch = tn.copy()
    on_torch.apply_to_arrays(lambda a: torch.asarray(np.ascontiguousarray(a)))
    on_trn = on_torch.copy()
    on_trn.apply_to_arrays(xp.asarray)
    return on_torch, on_trn


def _callables(
    eq: str, output_inds: tuple, path: tuple, tn_torch: qtn.TensorNetwork, tn_trn: qtn.TensorNetwork
) -> dict[str, Callable]:
    tensors, neuron = list(tn_torch.arrays), list(tn_trn.arrays)
    expr = ctg.einsum_expression(eq, *[t.shape for t in tensors], optimize=path)
    return {
        "ctg_expr:torch": lambda: expr(*tensors),
        "ctg_expr:trn": lambda: expr(*neuron),
        "ctg_einsum:torch": lambda: ctg.einsum(eq, *tensors, optimize=path),
        "ctg_einsum:trn": lambda: ctg.einsum(eq, *neuron, optimize=path),
        "quimb:torch": lambda: tn_torch.contract(all, optimize=path, output_inds=output_inds),
        "quimb:trn": lambda: tn_trn.contract(all, optimize=path, output_inds=output_inds),
    }


def _value(r: object) -> np.ndarray:
    """A result as a complex128 NumPy array (quimb gives a Tensor where indices stay open, else the array)."""
    if isinstance(r, qtn.Tensor):
        r = r.data
    return np.asarray(r).astype(np.complex128)


def _rel(x: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm((x - ref).ravel()) / max(np.linalg.norm(ref.ravel()), 1e-300))


def _check(ref: np.ndarray, calls: dict[str, Callable]) -> tuple[dict, dict]:
    """Every form once against the NumPy reference: (errors, check); a form that raises is dropped."""
    results, errors = {}, {}
    for f in list(calls):
        try:
            results[f] = calls[f]()
        except Exception as e:  # a failing form is a finding to record
            errors[f] = f"{type(e).__name__}: {e}"
            del calls[f]
    eps = float(np.finfo(np.complex128).eps)
    errs = {f: _rel(_value(r), ref) for f, r in results.items()}
    base = [e for f, e in errs.items() if f.endswith(":torch")]
    limit = max(1000 * eps, 10 * max(base, default=0.0))
    check = {
        "reference": "numpy complex128 on the same path",
        "limit_vs_reference": limit,
        "reference_abs_max": float(np.abs(ref).max(initial=0.0)),
        "rel_err_vs_reference": errs,
        "result_type": {f: type(r).__name__ for f, r in results.items()},
        "disagree": [],
    }
    for f, r in results.items():
        value = _value(r)
        if value.shape != ref.shape or not np.all(np.isfinite(value)) or not errs[f] <= limit:
            check["disagree"].append(f)
        inner = r.data if isinstance(r, qtn.Tensor) else r
        if f.endswith(":trn") and type(inner) is not xp.NeuronArray:
            check["disagree"].append(f"{f} (result is {type(inner).__name__}, not NeuronArray)")
    return errors, check


def measure(inst: dict, reps: int) -> dict:
    tn = inst["tn"]
    eq, output_inds = _equation(tn)
    arrays = [np.ascontiguousarray(a, dtype=np.complex128) for a in tn.arrays]
    path, info = oe.contract_path(eq, *arrays, optimize=oe.path_random.RandomGreedy(max_repeats=64))
    path = tuple(map(tuple, path))
    ref = np.asarray(oe.contract(eq, *arrays, optimize=path, backend="numpy"))
    tn_torch, tn_trn = _networks(tn)
    calls = _callables(eq, output_inds, path, tn_torch, tn_trn)
    errors, check = _check(ref, calls)
    row = {
        "family": inst["family"],
        "name": inst["name"],
        "dtype": "complex128",
        "tensors": len(arrays),
        "steps": len(path),
        "path_source": PATH_SOURCE,
        "flops": float(info.opt_cost),
        "largest_intermediate": float(info.largest_intermediate),
        "source": inst["source"],
        "output_inds": list(output_inds),
        "errors": errors,
        "check": check,
        "path_digest": hashlib.sha1(repr((eq, path)).encode()).hexdigest()[:12],
    }
    if not calls:
        return row
    first = next(iter(calls.values()))
    t0 = time.perf_counter()
    first()
    inner = max(1, min(20, round(SAMPLE_S / max(time.perf_counter() - t0, 1e-6))))
    for c in calls.values():  # warm-up
        c()
    samples = interleaved_ms(calls, reps, inner)
    ratios = {
        lib: statistics.median(a / b for a, b in zip(samples[f"{lib}:trn"], samples[f"{lib}:torch"], strict=True))
        for lib in LIBRARIES
        if f"{lib}:trn" in samples and f"{lib}:torch" in samples
    }
    row.update(
        reps=reps,
        calls_per_sample=inner,
        median_ms={f: statistics.median(s) for f, s in samples.items()},
        min_ms={f: min(s) for f, s in samples.items()},
        trn_over_torch=ratios,
        samples_ms=samples,
    )
    return row


# ---------------------------------------------------------------------------------------------------- reporting


def _geomean(xs: list[float]) -> float | None:
    return math.exp(statistics.fmean(map(math.log, xs))) if xs else None


def summary(rows: list[dict]) -> dict:
    out = {}
    for lib in LIBRARIES:
        have = [r for r in rows if lib in r.get("trn_over_torch", {})]
        if not have:
            continue
        worst = max(have, key=lambda r: r["trn_over_torch"][lib])
        out[lib] = {
            "geomean": _geomean([r["trn_over_torch"][lib] for r in have]),
            "max": worst["trn_over_torch"][lib],
            "max_instance": worst["name"],
            "instances": len(have),
        }
    return out


def _fmt(x: float | None, spec: str = ".2f") -> str:
    return "-" if x is None else format(x, spec)


def table(rows: list[dict], summ: dict) -> str:
    head = (
        ["family", "instance", "tensors", "flops"]
        + [f"{f} (ms)" for f in FORMS]
        + [f"{lib} trn/torch" for lib in LIBRARIES]
        + ["check"]
    )
    lines = ["| " + " | ".join(head) + " |", "|---|---|" + "---:|" * (len(head) - 3) + "---|"]
    for r in rows:
        med, ratio = r.get("median_ms", {}), r.get("trn_over_torch", {})
        note = "; ".join([f"{f} error" for f in r["errors"]] + [f"{f} disagrees" for f in r["check"]["disagree"]])
        lines.append(
            "| "
            + " | ".join(
                [r["family"], r["name"], str(r["tensors"]), f"{r['flops']:.1e}"]
                + [_fmt(med.get(f)) for f in FORMS]
                + [_fmt(ratio.get(lib), ".3f") for lib in LIBRARIES]
                + [note or "ok"]
            )
            + " |"
        )
    lines += ["", "| library | trn/torch geomean | max | at |", "|---|---:|---:|---|"]
    for lib, s in summ.items():
        lines.append(f"| {lib} | {_fmt(s['geomean'], '.3f')} | {_fmt(s['max'], '.3f')} | {s['max_instance']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=11)
    parser.add_argument("--only", default="", help="comma-separated families: " + ",".join(FAMILIES))
    parser.add_argument("--out", type=Path, default=RESULTS / "bench_autoray.json")
    args = parser.parse_args()
    fixed_hash_seed()  # random-greedy's paths otherwise change between runs
    families = tuple(f.strip() for f in args.only.split(",") if f.strip()) or FAMILIES
    unknown = set(families) - set(FAMILIES)
    if unknown:
        parser.error(f"unknown families {sorted(unknown)}; choose from {', '.join(FAMILIES)}")
    load_start = os.getloadavg()
    rows = []
    for inst in instances(families):
        rows.append(r := measure(inst, args.reps))
        trouble = [*r["errors"], *r["check"]["disagree"]]
        ratios = ", ".join(f"{lib} {x:.2f}" for lib, x in r.get("trn_over_torch", {}).items())
        print(
            f"{r['family']} / {r['name']}: trn/torch: {ratios}" + (f"; PROBLEMS: {trouble}" if trouble else ""),
            flush=True,
        )
    summ = summary(rows)
    meta = run_metadata(
        cotengra=ctg.__version__,
        quimb=quimb.__version__,
        autoray=autoray.__version__,
        opt_einsum=oe.__version__,
        trn_backend=str(Path(xp.__file__).parent),
        path_source=PATH_SOURCE,
        pythonhashseed=os.environ.get("PYTHONHASHSEED"),
        load_average_start=load_start,
        load_average_end=os.getloadavg(),
        note="times: medians over interleaved repetitions (each runs every form once, rotating the order); "
        "trn/torch: medians of per-repetition ratios, per library, same path and same tensors",
    )
    save(args.out, meta, rows, table(rows, summ), summary=summ)


if __name__ == "__main__":
    main()
