"""Root-confined path resolution and bounded directory walking for the file tools."""

import os
import re
from pathlib import Path
from typing import Iterator

__all__ = ["Sandbox", "glob_to_regex", "MAX_WALK_ENTRIES"]

# Walks stop after this many entries so a huge tree cannot stall a request.
MAX_WALK_ENTRIES = 20_000


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (*, ?, [abc], ** for any depth) into a regex over '/'-separated paths."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ValueError(f"invalid glob pattern {pattern!r}: {exc}") from None


class Sandbox:
    """Resolves user-supplied relative paths and refuses anything outside the root."""

    def __init__(self, root: Path) -> None:
        try:
            self.root = Path(root).resolve(strict=True)
        except (OSError, RuntimeError):
            raise ValueError(f"files root {root} does not exist") from None
        if not self.root.is_dir():
            raise ValueError(f"files root {root} is not a directory")

    def inside(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    def resolve(self, user_path: str, must_exist: bool = True) -> Path:
        if "\x00" in user_path:
            raise ValueError("path contains a NUL character")
        # resolve() follows symlinks, so a link pointing outside the root is caught here too.
        candidate = (self.root / user_path.strip()).resolve()
        if not self.inside(candidate):
            raise ValueError(f"path {user_path!r} is outside the allowed root directory")
        if must_exist and not candidate.exists():
            raise ValueError(f"path {user_path!r} does not exist")
        return candidate

    def relative(self, path: Path) -> str:
        rel = path.relative_to(self.root).as_posix()
        return rel if rel else "."

    def safe_entry(self, path: Path) -> bool:
        """True if path (possibly a symlink) ends up inside the root."""
        if not path.is_symlink():
            return True
        try:
            return self.inside(path.resolve())
        except (OSError, RuntimeError):
            return False

    def walk_files(self, top: Path, include_hidden: bool) -> Iterator[Path]:
        """Yield files under top (never following directory symlinks), at most MAX_WALK_ENTRIES entries."""
        if top.is_file():
            yield top
            return
        seen = 0
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if include_hidden or not d.startswith("."))
            for name in sorted(filenames):
                seen += 1
                if seen > MAX_WALK_ENTRIES:
                    return
                if not include_hidden and name.startswith("."):
                    continue
                path = Path(dirpath, name)
                if self.safe_entry(path) and path.is_file():
                    yield path
