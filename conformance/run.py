"""Run the official array API test suite (data-apis/array-api-tests) against trn_backend and summarize it.

The suite is not on PyPI and its code is never committed here. Point ARRAY_API_TESTS_DIR at a local checkout whose
``array-api`` spec submodule is populated (or put the checkout at .suite/array-api-tests), then:

    ARRAY_API_TESTS_DIR=/path/to/array-api-tests python conformance/run.py [--max-examples 100] [--seed 0]

The summary (passed, failed, xfailed, skipped, settings, wall time, failing tests) is written to
conformance/results/summary.json and printed as Markdown. Without a checkout the run fails (exit 2) and says how to
get one: a conformance check that finds no suite has checked nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENV_VAR = "ARRAY_API_TESTS_DIR"
# where conformance/README.md suggests the checkout goes (git-ignored), used when ARRAY_API_TESTS_DIR is not set
DEFAULT_SUITE = HERE.parent / ".suite" / "array-api-tests"
HOW_TO_GET_THE_SUITE = f"""\
The official array API suite (data-apis/array-api-tests) is not on PyPI; get a checkout with its spec submodule:

    git clone https://github.com/data-apis/array-api-tests {DEFAULT_SUITE}
    git -C {DEFAULT_SUITE} submodule update --init

or, on a machine without access to GitHub, copy such a checkout (a tarball or `git bundle` made elsewhere, with
the array-api submodule populated) to that folder, or anywhere and set {ENV_VAR} to its path."""
API_VERSION = "2025.12"


def _parse_junit(path: Path) -> dict[str, object]:
    """Counts and failing test ids from pytest's JUnit XML."""
    counts = {"passed": 0, "failed": 0, "xfailed": 0, "xpassed": 0, "skipped": 0, "errors": 0}
    failures: list[str] = []
    for case in ET.parse(path).getroot().iter("testcase"):
        test_id = f"{case.get('classname', '').replace('.', '/')}.py::{case.get('name')}"
        children = {child.tag for child in case}
        skipped = case.find("skipped")
        if "failure" in children:
            counts["failed"] += 1
            failures.append(test_id)
        elif "error" in children:
            counts["errors"] += 1
            failures.append(test_id)
        elif skipped is not None:
            kind = "xfailed" if (skipped.get("type") or "").endswith("xfail") else "skipped"
            counts[kind] += 1
        else:
            counts["passed"] += 1
    return {**counts, "failures": failures}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (-n); 0 runs in one process")
    parser.add_argument("pytest_args", nargs="*", help="extra arguments for pytest (e.g. a test file)")
    args = parser.parse_args(argv)

    suite = os.environ.get(ENV_VAR)
    suite_dir = Path(suite).expanduser().resolve() if suite else DEFAULT_SUITE
    if not (suite_dir / "array_api_tests").is_dir() or not any((suite_dir / "array-api").glob("*")):
        named = f"{ENV_VAR}={suite}" if suite else f"{ENV_VAR} is not set and {suite_dir}"
        print(
            f"conformance: {named} is not an array-api-tests checkout with its array-api submodule populated.\n"
            f"{HOW_TO_GET_THE_SUITE}",
            file=sys.stderr,
        )
        return 2

    results = HERE / "results"
    results.mkdir(exist_ok=True)
    junit = results / "junit.xml"
    env = {**os.environ, "ARRAY_API_TESTS_MODULE": "trn_backend", "ARRAY_API_TESTS_VERSION": API_VERSION}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "array_api_tests",
        "-q",
        "-p",
        "no:cacheprovider",
        # a fixed seed and no timing deadline: the verdict must not depend on the machine's speed or load
        f"--max-examples={args.max_examples}",
        f"--hypothesis-seed={args.seed}",
        "--hypothesis-disable-deadline",
        f"--skips-file={HERE / 'skips.txt'}",
        f"--xfails-file={HERE / 'xfails.txt'}",
        f"--junitxml={junit}",
        "-o",
        "junit_family=xunit1",
    ]
    if args.workers != "0":
        cmd += ["-n", args.workers]
    cmd += args.pytest_args
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=suite_dir, env=env)
    wall = time.perf_counter() - start

    summary = {
        **_parse_junit(junit),
        "api_version": API_VERSION,
        "max_examples": args.max_examples,
        "seed": args.seed,
        "wall_time_s": round(wall, 1),
        "suite_commit": _git_head(suite_dir),
        "pytest_exit_code": proc.returncode,
    }
    (results / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(_markdown(summary))
    return 0 if summary["failed"] == 0 and summary["errors"] == 0 else 1


def _git_head(path: Path) -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _markdown(s: dict[str, object]) -> str:
    lines = [
        "| passed | failed | errors | xfailed | skipped | max-examples | seed | wall time |",
        "|---|---|---|---|---|---|---|---|",
        f"| {s['passed']} | {s['failed']} | {s['errors']} | {s['xfailed']} | {s['skipped']} | {s['max_examples']} "
        f"| {s['seed']} | {s['wall_time_s']} s |",
    ]
    if s["failures"]:
        lines += ["", "Failing tests:"] + [f"- `{f}`" for f in s["failures"]]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
