"""Command line: ``python -m trn_backend <command>``.

``explain "ij,jk,kl->il" 512x512 512x512 512x512`` prints the contraction plan (path, per-step kernel, sizes,
FLOPs, precision mode). Each command is an argparse subcommand with its own ``run`` function; add new ones in
``build_parser``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import torch

__all__ = ["main", "build_parser"]


def _shape(text: str) -> tuple[int, ...]:
    """'512x512' -> (512, 512); 'scalar' or '' -> ()."""
    if text in ("", "scalar"):
        return ()
    try:
        dims = tuple(int(d) for d in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a shape; write sizes joined by 'x', e.g. 64x128") from None
    if any(d < 0 for d in dims):
        raise argparse.ArgumentTypeError(f"{text!r} has a negative size")
    return dims


def _optimize(text: str) -> object:
    """An optimizer name, or an explicit path written like '(0,1),(0,1)'."""
    if text.startswith("("):
        return [
            tuple(int(i) for i in step.strip("() ").split(",") if i.strip())
            for step in text.replace(" ", "").split("),(")
        ]
    return {"false": False, "true": True}.get(text.lower(), text)


def _run_explain(args: argparse.Namespace) -> int:
    from . import explain

    dtype = getattr(torch, args.dtype)
    print(
        explain(
            args.subscripts,
            *args.shapes,
            optimize=args.optimize,
            precision=args.precision,
            target_forward_error=args.target_forward_error,
            dtype=dtype,
        )
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m trn_backend", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="command")
    explain = commands.add_parser(
        "explain",
        help="show how a contraction is planned, without running it",
        description="Show the path and, per binary step, the kernel, (B, M, K, N), "
        "FLOPs, largest intermediate and precision mode.",
    )
    explain.add_argument("subscripts", help="einsum subscripts, e.g. 'ij,jk,kl->il'")
    explain.add_argument("shapes", nargs="+", type=_shape, help="operand shapes, e.g. 512x512 (or 'scalar')")
    explain.add_argument(
        "--dtype", default="float32", choices=("float32", "float64", "complex64", "complex128", "int32", "int64")
    )
    explain.add_argument(
        "--optimize",
        type=_optimize,
        default="auto",
        help="opt_einsum optimizer name (auto, greedy, optimal, dp, ...) or a path '(0,1),(0,1)'",
    )
    precision = explain.add_mutually_exclusive_group()
    precision.add_argument("--precision", default=None, help="precision mode of every step (default: the context's)")
    precision.add_argument(
        "--target-forward-error",
        type=float,
        default=None,
        help="pick each step's mode from this componentwise error target",
    )
    explain.set_defaults(run=_run_explain)
    from . import precision_report

    report = commands.add_parser(
        "precision-report",
        help="measure every precision mode against its bound",
        description=precision_report.__doc__.split("\n\n")[1],
    )
    precision_report.add_arguments(report)
    report.set_defaults(run=precision_report.run)
    from . import check_neuron

    check = commands.add_parser(
        "check-neuron",
        help="check the NKI kernels against float64 on a Neuron device, or on the CPU model without one",
        description=check_neuron.__doc__.split("\n\n")[1],
    )
    check_neuron.add_arguments(check)
    check.set_defaults(run=check_neuron.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except (ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
