"""The documentation runs: every ```python block of README.md and docs/*.md is a self-contained program (its own
imports and data), and one test case per block (id ``file:line`` of its opening fence) runs it as written.

The fence's info string after ``python`` says how:

- nothing: executed in this process, in a fresh namespace;
- ``subprocess``: in a fresh interpreter (for blocks that set up process state first, e.g. SciPy's environment
  variable, which counts only before SciPy's first import);
- ``torchrun``: as 2 ranks on gloo on the CPU (the distributed examples); ``torchrun-4`` as 4 (a 2x2 mesh).
  Each rank is started as torchrun starts its workers, a process with RANK, WORLD_SIZE, MASTER_ADDR and
  MASTER_PORT set, without torchrun's own launcher process, which would add seconds per block
  (tests/distributed/test_distributed.py runs the example under real torchrun);
- ``no-run``: only compiled, for a block that needs hardware this machine lacks (the text next to it says why).

Other languages (sh, text) are not run. A block that raises, or a program that exits non-zero, fails its case.
"""

from __future__ import annotations

import dataclasses
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))
RUN_MODES = ("in-process", "subprocess", "torchrun", "torchrun-4", "no-run")
TORCHRUN_RANKS = {"torchrun": 2, "torchrun-4": 4}
SUBPROCESS_TIMEOUT_S = 120
FENCE = re.compile(r"^```(?P<lang>[^\s`]*)[ \t]*(?P<info>[^`]*?)\s*$")


@dataclasses.dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    info: str  # what follows the language on the opening fence
    code: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"

    @property
    def mode(self) -> str:
        return self.info or "in-process"


def fenced_blocks(text: str, path: str) -> list[Block]:
    """Every fenced block of a Markdown text; an unclosed fence is an error rather than a silently lost block."""
    blocks, opened, body = [], None, []
    for number, line in enumerate(text.splitlines(), start=1):
        if opened is None:
            fence = FENCE.match(line)
            if fence:
                opened, body = (number, fence["lang"], fence["info"]), []
        elif line.rstrip() == "```":
            start, lang, info = opened
            blocks.append(Block(path, start, lang, info, "\n".join(body) + "\n"))
            opened = None
        else:
            body.append(line)
    if opened is not None:
        raise ValueError(f"{path}:{opened[0]}: a fenced block is never closed")
    return blocks


def python_blocks() -> list[Block]:
    return [
        block
        for doc in DOCUMENTS
        for block in fenced_blocks(doc.read_text(), str(doc.relative_to(ROOT)))
        if block.lang == "python"
    ]


def run_block(block: Block, workdir: Path) -> None:
    """Run one block as its fence says; raises (AssertionError for a failed program) when it fails."""
    code = compile(block.code, block.id, "exec")  # a syntax error fails every mode, no-run included
    if block.mode == "no-run":
        return
    if block.mode == "in-process":
        exec(code, {"__name__": "__main__"})
        return
    if block.mode not in ("subprocess", *TORCHRUN_RANKS):
        raise ValueError(f"{block.id}: unknown run mode {block.info!r} on the fence; known: {', '.join(RUN_MODES)}")
    script = workdir / "snippet.py"
    script.write_text(f"# {block.id}\n{block.code}")
    ranks = TORCHRUN_RANKS.get(block.mode, 1)
    for rank, (code, out) in enumerate(_run_ranks(script, ranks)):
        who = f"{block.id} (rank {rank} of {ranks})" if ranks > 1 else block.id
        assert code == 0, f"{who} exited with {code}:\n{out[-6000:]}"


def _run_ranks(script: Path, ranks: int) -> list[tuple[int, str]]:
    """Run ``script`` as ``ranks`` processes with torchrun's worker environment (one plain process for 1); when
    one fails the others are stopped, since they would wait for it in a collective. (exit code, output) each."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}  # as torchrun sets it; quiet and alike in every mode
    if ranks > 1:
        env |= {
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(_free_port()),
            "WORLD_SIZE": str(ranks),
            "LOCAL_WORLD_SIZE": str(ranks),
        }
    logs = [script.with_name(f"rank{r}.log") for r in range(ranks)]  # files, not pipes: no pipe fills and blocks
    processes = []
    try:
        for rank, log in enumerate(logs):
            with log.open("w") as out:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, str(script)],
                        cwd=ROOT,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env | ({"RANK": str(rank), "LOCAL_RANK": str(rank)} if ranks > 1 else {}),
                    )
                )
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT_S
        while any(p.poll() is None for p in processes):
            if any(p.returncode not in (None, 0) for p in processes) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        for p in processes:
            if p.poll() is None:
                p.kill()
    return [(p.wait(), log.read_text()) for p, log in zip(processes, logs, strict=True)]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


BLOCKS = python_blocks()


@pytest.mark.heavy
@pytest.mark.timeout(SUBPROCESS_TIMEOUT_S + 30)
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_python_runs(block, tmp_path):
    run_block(block, tmp_path)


def test_every_python_block_is_collected_with_a_known_mode():
    """Fences spelled another way (```py, ```python3, a misspelled mode) would escape the runner."""
    assert len(BLOCKS) >= 10
    assert all(b.mode in RUN_MODES for b in BLOCKS), [(b.id, b.info) for b in BLOCKS if b.mode not in RUN_MODES]
    for doc in DOCUMENTS:
        for block in fenced_blocks(doc.read_text(), str(doc.relative_to(ROOT))):
            assert block.lang, f"{block.id}: a fence without a language"
            assert not block.lang.startswith("py") or block.lang == "python", f"{block.id}: write ```python"
    not_run = [b.id for b in BLOCKS if b.mode == "no-run"]
    assert len(not_run) <= 2, f"only blocks that need Trainium may skip running: {not_run}"


def test_the_published_bounds_table_is_what_error_bound_returns():
    """docs/precision.md prints error_bound's values: a bound changed in code must change there too."""
    import trn_backend as xp

    text = (ROOT / "docs" / "precision.md").read_text()
    table = re.search(r"The published bounds, from `error_bound`[^\n]*\n\n((?:\|[^\n]*\n)+)", text)
    assert table, "docs/precision.md: the table of published bounds is gone"
    header, _, *rows = table.group(1).splitlines()
    assert header.replace(" ", "") == "|mode|float32K=16|512|4096|float64K=16|512|4096|"
    columns = [(dtype, K) for dtype in (xp.float32, xp.float64) for K in (16, 512, 4096)]
    stale = []
    for row in rows:
        mode, *cells = (cell.strip() for cell in row.strip("|").split("|"))
        mode = mode.split()[0]
        expected = [f"{xp.error_bound(mode, dtype, K):.2e}" for dtype, K in columns]
        if cells != expected:
            stale.append(f"{mode}: documented {cells}, error_bound gives {expected}")
    assert len(rows) == 7 and not stale, "\n".join(stale)


MARKDOWN = textwrap.dedent("""\
    Text.

    ```python
    value = 1 + 1
    assert value == 2
    ```

    ```sh
    this is not python
    ```

    ```python no-run
    import module_that_is_not_installed_here
    ```

    ```python
    raise RuntimeError("the snippet fails")
    ```

    ```python no-run
    def broken(:
    ```
    """)


def test_the_runner_fails_a_failing_block_and_only_compiles_no_run_blocks(tmp_path):
    passing, shell, not_run, raising, broken = fenced_blocks(MARKDOWN, "example.md")
    assert (passing.line, passing.lang, passing.mode) == (3, "python", "in-process")
    assert (shell.lang, not_run.mode, raising.id) == ("sh", "no-run", "example.md:16")
    run_block(passing, tmp_path)
    run_block(not_run, tmp_path)  # the import is never executed
    with pytest.raises(RuntimeError, match="the snippet fails"):
        run_block(raising, tmp_path)
    with pytest.raises(SyntaxError):
        run_block(broken, tmp_path)


def test_a_failing_program_fails_its_case(tmp_path):
    block = Block("example.md", 1, "python", "subprocess", "import sys\nsys.exit(3)\n")
    with pytest.raises(AssertionError, match="example.md:1 exited with 3"):
        run_block(block, tmp_path)
    with pytest.raises(ValueError, match="unknown run mode 'norun'"):
        run_block(dataclasses.replace(block, info="norun"), tmp_path)


def test_an_unclosed_fence_is_an_error():
    with pytest.raises(ValueError, match="example.md:2: a fenced block is never closed"):
        fenced_blocks("text\n```python\nx = 1\n", "example.md")
