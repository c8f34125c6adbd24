"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # mypy runs as a child process (and takes a while)

ROOT = Path(__file__).resolve().parent.parent


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental"], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout
