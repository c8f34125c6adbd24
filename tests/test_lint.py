"""The linter as a test: ruff with the project's rules (pyproject.toml, [tool.ruff.lint]) over every Python file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.process  # ruff runs as a child process


def test_ruff_finds_nothing() -> None:
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "lazytools", "tests", "benchmarks",
                              "examples", "scripts"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_ruff_would_find_an_unused_import(tmp_path: Path) -> None:
    (tmp_path / "bad.py").write_text("import os\n")
    checked = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--config",
                              str(ROOT / "pyproject.toml"), str(tmp_path / "bad.py")],
                             capture_output=True, text=True, timeout=300)
    assert checked.returncode == 1 and "F401" in checked.stdout
