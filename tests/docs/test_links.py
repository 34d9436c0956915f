"""The user-facing text points only at what exists: every relative link of README.md, CHANGELOG.md and the guides
resolves to a file of the repository (and a link's #section to a heading of it), every repository path the text
names in backticks exists, and no text refers to the project's issue tracker by number."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TEXTS = (
    ROOT / "README.md",
    ROOT / "CHANGELOG.md",
    ROOT / "conformance" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# a path in backticks that starts at a top-level folder of the repository
TOP_LEVEL = ("trn_backend/", "kernels/", "tests/", "benchmarks/", "docs/", "examples/", "conformance/", ".ci/")
CODE_PATH = re.compile(r"`((?:" + "|".join(re.escape(t) for t in TOP_LEVEL) + r")[\w./-]*)`")
ISSUE_REFERENCE = re.compile(r"\b(?:issue|issues|ticket|PR)\s*#?\d+|(?<![\w&])#\d+\b", re.IGNORECASE)


def _slug(heading: str) -> str:
    """GitHub's (and MyST's) anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`|\*", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    headings, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            headings.append(line.lstrip("#"))
    return {_slug(h) for h in headings}


def _generated(path: str) -> bool:
    """A path git ignores: an output the tools write (conformance/results/summary.json), named as where it goes."""
    return subprocess.run(["git", "check-ignore", "-q", path], cwd=ROOT).returncode == 0


def _prose(path: Path) -> str:
    """The text outside fenced code blocks (code blocks run in tests/docs/test_docs.py)."""
    out, fenced = [], False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    broken = []
    for target in LINK.findall(re.sub(r"`[^`]*`", "", _prose(path))):  # code spans are not links
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        file = (path.parent / file_part).resolve() if file_part else path
        if not file.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no heading with that anchor)")
    assert broken == [], f"{path.relative_to(ROOT)}: {broken}"


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_repository_paths_exist(path):
    missing = [
        p
        for p in CODE_PATH.findall(_prose(path))
        if "<" not in p and "*" not in p and not (ROOT / p.rstrip("/")).exists() and not _generated(p)
    ]
    assert missing == [], f"{path.relative_to(ROOT)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_issue_numbers(path):
    assert ISSUE_REFERENCE.findall(_prose(path)) == []


def test_the_checks_catch_what_they_look_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# Title\n\nSee [a](missing.md), [b](#title), [c](#nowhere) and issue 12.\n")
    assert [t for t in LINK.findall(_prose(page))] == ["missing.md", "#title", "#nowhere"]
    assert "title" in _anchors(page) and "nowhere" not in _anchors(page)
    assert ISSUE_REFERENCE.findall(_prose(page)) == ["issue 12"]
    assert CODE_PATH.findall("`kernels/nope.py` and `trn_backend/_array.py`") == [
        "kernels/nope.py",
        "trn_backend/_array.py",
    ]
    assert _generated("conformance/results/summary.json") and not _generated("kernels/nope.py")
    assert _slug("Selection, resolution, contexts") == "selection-resolution-contexts"
