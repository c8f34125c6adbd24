"""The package type-checks under mypy --strict (configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.process  # mypy runs as a child process (and takes a while)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".mypy_cache"
"""mypy's own incremental cache, where a plain `mypy` in the checkout keeps it (git ignores it). A module whose
source (or whose dependencies' interface) changed since is checked again, so the answer is the one a check from
nothing gives; a checkout's first run takes the whole check (~22 s of CPU), the next ones ~1 s plus what changed."""


def test_mypy_strict_is_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(CACHE)], cwd=ROOT, capture_output=True,
                          text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Success" in proc.stdout
