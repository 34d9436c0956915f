"""conformance/run.py: a run without the official suite fails and says how to get it; a run with it passes the
suite's options that keep the verdict independent of the machine (fixed seed, no timing deadline)."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def runner():
    spec = importlib.util.spec_from_file_location("conformance_run", ROOT / "conformance" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_suite(path: Path) -> Path:
    (path / "array_api_tests").mkdir(parents=True)
    (path / "array-api").mkdir()
    (path / "array-api" / "README.md").write_text("spec\n")
    return path


def test_no_suite_fails_and_says_how_to_get_it(runner, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv(runner.ENV_VAR, raising=False)
    monkeypatch.setattr(runner, "DEFAULT_SUITE", tmp_path / "absent")
    assert runner.main([]) == 2
    err = capsys.readouterr().err
    assert "ARRAY_API_TESTS_DIR is not set" in err
    assert "git clone https://github.com/data-apis/array-api-tests" in err
    assert "without access to GitHub" in err  # the offline route


def test_a_named_folder_without_the_suite_fails(runner, monkeypatch, tmp_path, capsys):
    (tmp_path / "array_api_tests").mkdir()  # the spec submodule is empty
    monkeypatch.setenv(runner.ENV_VAR, str(tmp_path))
    assert runner.main([]) == 2
    assert f"ARRAY_API_TESTS_DIR={tmp_path}" in capsys.readouterr().err


def test_the_make_target_fails_without_the_suite(tmp_path):
    """What `make conformance` runs, in a fresh interpreter, exits non-zero when there is no checkout."""
    env = {"PATH": "/usr/bin:/bin", "ARRAY_API_TESTS_DIR": str(tmp_path / "absent")}
    proc = subprocess.run(
        [sys.executable, str(ROOT / "conformance" / "run.py")], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "git clone" in proc.stderr


@pytest.mark.parametrize(("outcome", "exit_code"), [("", 0), ("<failure message='x'/>", 1)])
def test_a_run_has_no_deadline_and_a_fixed_seed(runner, monkeypatch, tmp_path, outcome, exit_code):
    suite = _fake_suite(tmp_path / "suite")
    monkeypatch.setenv(runner.ENV_VAR, str(suite))
    (tmp_path / "conformance").mkdir()
    monkeypatch.setattr(runner, "HERE", tmp_path / "conformance")
    seen = {}

    def fake_run(cmd, cwd, env=None, **kwargs):
        if cmd[0] == "git":  # the summary's suite commit
            return subprocess.CompletedProcess(cmd, 0, stdout="abc\n")
        seen.update(cmd=cmd, cwd=cwd, env=env)
        junit = next(a.split("=", 1)[1] for a in cmd if a.startswith("--junitxml="))
        Path(junit).write_text(f"<testsuite><testcase classname='t' name='a'>{outcome}</testcase></testsuite>")
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    assert runner.main(["--seed", "3", "--workers", "0"]) == exit_code
    assert "--hypothesis-disable-deadline" in seen["cmd"]
    assert "--hypothesis-seed=3" in seen["cmd"]
    assert seen["env"]["ARRAY_API_TESTS_VERSION"] == "2025.12"
    assert seen["cwd"] == suite


def test_the_test_suite_has_no_timing_deadline():
    """The loaded hypothesis profile is deadline-free, and no test sets a deadline of its own."""
    assert settings.default.deadline is None
    offenders = []
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.keyword)
                and node.arg == "deadline"
                and not (isinstance(node.value, ast.Constant) and node.value.value is None)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.value.lineno}")
    assert offenders == []
