"""Read-only file tools confined to one root directory, built by `make_file_tools(root)`."""

import hashlib
import re
import stat
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import Field

from . import _regex_runner
from ._sandbox import Sandbox, glob_to_regex

__all__ = ["make_file_tools"]

_MAX_READ_BYTES = 10_000_000
_MAX_LINES_PER_READ = 5000
_MAX_SEARCH_BYTES = 2_000_000
_MAX_SEARCH_TOTAL_BYTES = 50_000_000
_BINARY_SNIFF = 8192
_MAX_CHECKSUM_BYTES = 1_000_000_000

RelPath = Annotated[str, Field(description="Path relative to the files root, e.g. 'src/app.py' or '.' for the root.")]
Hidden = Annotated[bool, Field(description="Include dot-files and dot-directories such as .git.")]


def _is_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\x00" in handle.read(_BINARY_SNIFF)


def _read_text(path: Path, limit: int) -> str:
    if path.stat().st_size > limit:
        raise ValueError(f"file is too large ({path.stat().st_size} bytes; limit is {limit})")
    if _is_binary(path):
        raise ValueError(f"{path.name} looks like a binary file, not text")
    return path.read_text(encoding="utf-8", errors="replace")


def _literal_grep(matcher: re.Pattern[str], files: list[Path], limit: int) -> tuple[list[list[Any]], bool]:
    """Find matching lines of an escaped (linear-time) pattern; returns [file index, line, text] hits."""
    hits: list[list[Any]] = []
    for index, file in enumerate(files):
        for number, line in enumerate(file.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if matcher.search(line):
                hits.append([index, number, line[:500]])
                if len(hits) >= limit:
                    return hits, True
    return hits, False


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def make_file_tools(root: Path) -> list[Callable[..., Any]]:
    """Create the file tools bound to `root`; every path they accept is resolved inside it."""
    box = Sandbox(root)

    def list_directory(path: RelPath = ".", include_hidden: Hidden = False) -> dict[str, Any]:
        """List the files and folders in a directory with their type and size."""
        folder = box.resolve(path)
        if not folder.is_dir():
            raise ValueError(f"{path!r} is not a directory")
        entries = []
        for child in sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower())):
            if not include_hidden and child.name.startswith("."):
                continue
            if not box.safe_entry(child):
                continue
            kind = "directory" if child.is_dir() else "file" if child.is_file() else "other"
            entries.append({"name": child.name, "type": kind, "size": child.stat().st_size if kind == "file" else None})
            if len(entries) >= 1000:
                break
        return {"path": box.relative(folder), "count": len(entries), "entries": entries}

    def read_text_file(
        path: RelPath,
        start_line: Annotated[int, Field(description="First line to return (1-based).", ge=1)] = 1,
        end_line: Annotated[int, Field(description="Last line to return (inclusive); 0 means to the end.", ge=0)] = 0,
    ) -> dict[str, Any]:
        """Read a text file, optionally only a range of lines (at most 5000 lines per call)."""
        file = box.resolve(path)
        if not file.is_file():
            raise ValueError(f"{path!r} is not a file")
        if start_line < 1 or end_line < 0 or (end_line and end_line < start_line):
            raise ValueError("need 1 <= start_line <= end_line (or end_line = 0 for the end of the file)")
        lines = _read_text(file, _MAX_READ_BYTES).splitlines()
        last = min(end_line or len(lines), len(lines), start_line + _MAX_LINES_PER_READ - 1)
        return {
            "path": box.relative(file),
            "total_lines": len(lines),
            "start_line": start_line,
            "end_line": last,
            "content": "\n".join(lines[start_line - 1 : last]),
            "truncated": last < (end_line or len(lines)),
        }

    def get_file_info(path: RelPath) -> dict[str, Any]:
        """Get metadata about a file or folder: size, type, permissions and modification time."""
        target = box.resolve(path)
        info = target.stat()
        return {
            "path": box.relative(target),
            "type": "directory" if target.is_dir() else "file" if target.is_file() else "other",
            "size_bytes": info.st_size,
            "modified_utc": _iso(info.st_mtime),
            "permissions": stat.filemode(info.st_mode),
            "is_symlink": (box.root / path.strip()).is_symlink(),
            "extension": target.suffix if target.is_file() else None,
        }

    def search_in_files(
        query: Annotated[str, Field(description="Text (or regular expression if regex=true) to look for.", min_length=1)],
        path: RelPath = ".",
        file_glob: Annotated[str, Field(description="Only search files whose name matches, e.g. '*.py'.")] = "*",
        regex: Annotated[bool, Field(description="Treat query as a regular expression.")] = False,
        case_sensitive: Annotated[bool, Field(description="Match letter case exactly.")] = False,
        max_results: Annotated[int, Field(description="Maximum matching lines to return.", ge=1, le=1000)] = 100,
        include_hidden: Hidden = False,
    ) -> dict[str, Any]:
        """Search for text inside files (like grep) and return matching lines with file names and line numbers."""
        if not query or len(query) > 500:
            raise ValueError("query must be 1-500 characters")
        try:
            matcher = re.compile(query if regex else re.escape(query), 0 if case_sensitive else re.IGNORECASE)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        name_re = glob_to_regex(file_glob)
        candidates: list[Path] = []
        budget = _MAX_SEARCH_TOTAL_BYTES
        for file in box.walk_files(box.resolve(path), include_hidden):
            size = file.stat().st_size
            if not name_re.match(file.name) or size > _MAX_SEARCH_BYTES or _is_binary(file):
                continue
            budget -= size
            if budget < 0:
                break
            candidates.append(file)
        if regex:
            # User patterns may backtrack catastrophically, so they run in a killable child process.
            request = {"op": "grep", "pattern": matcher.pattern, "flags": matcher.flags,
                       "files": [str(f) for f in candidates], "limit": max_results}
            found = _regex_runner.run_regex(request, timeout=_regex_runner.DEFAULT_TIMEOUT_SECONDS * 4)
            hits, truncated = found["hits"], found["truncated"]
        else:
            hits, truncated = _literal_grep(matcher, candidates, max_results)
        matches = [{"file": box.relative(candidates[i]), "line": n, "text": t} for i, n, t in hits]
        return {"matches": matches, "files_searched": len(candidates), "truncated": truncated or budget < 0}

    def find_files(
        pattern: Annotated[str, Field(description="Glob such as '*.md' (matches names at any depth) or 'src/**/*.py' (matches paths).")],
        path: RelPath = ".",
        include_hidden: Hidden = False,
        max_results: Annotated[int, Field(description="Maximum number of paths to return.", ge=1, le=5000)] = 500,
    ) -> dict[str, Any]:
        """Find files by name or glob pattern (e.g. *.py, **/test_*.py) under a directory."""
        base = box.resolve(path)
        matcher = glob_to_regex(pattern)
        by_name = "/" not in pattern
        found = []
        for file in box.walk_files(base, include_hidden):
            rel = file.relative_to(base).as_posix() if base.is_dir() else file.name
            if matcher.match(file.name if by_name else rel):
                found.append(box.relative(file))
                if len(found) >= max_results:
                    return {"count": len(found), "files": found, "truncated": True}
        return {"count": len(found), "files": found, "truncated": False}

    def count_file_lines(
        path: RelPath = ".",
        file_glob: Annotated[str, Field(description="Only count files whose name matches, e.g. '*.py'.")] = "*",
        include_hidden: Hidden = False,
    ) -> dict[str, Any]:
        """Count lines in a file, or lines of code per file extension in a whole directory."""
        name_re = glob_to_regex(file_glob)
        per_ext: Counter[str] = Counter()
        files_per_ext: Counter[str] = Counter()
        skipped = 0
        for file in box.walk_files(box.resolve(path), include_hidden):
            if not name_re.match(file.name):
                continue
            if file.stat().st_size > _MAX_SEARCH_BYTES or _is_binary(file):
                skipped += 1
                continue
            with file.open("rb") as handle:
                count = sum(1 for _ in handle)
            ext = file.suffix.lower() or "(none)"
            per_ext[ext] += count
            files_per_ext[ext] += 1
        by_ext = {ext: {"files": files_per_ext[ext], "lines": n} for ext, n in per_ext.most_common()}
        return {"total_lines": sum(per_ext.values()), "total_files": sum(files_per_ext.values()), "by_extension": by_ext, "skipped_files": skipped}

    def directory_tree(
        path: RelPath = ".",
        max_depth: Annotated[int, Field(description="How many directory levels to show.", ge=1, le=10)] = 3,
        include_hidden: Hidden = False,
    ) -> str:
        """Show a directory as an indented tree of folders and files (like the `tree` command)."""
        top = box.resolve(path)
        if not top.is_dir():
            raise ValueError(f"{path!r} is not a directory")
        lines = [box.relative(top) + "/"]
        budget = [2000]

        def walk(folder: Path, prefix: str, depth: int) -> None:
            children = [
                c for c in sorted(folder.iterdir(), key=lambda p: (not p.is_dir(), p.name.lower()))
                if (include_hidden or not c.name.startswith(".")) and box.safe_entry(c)
            ]
            for index, child in enumerate(children):
                if budget[0] <= 0:
                    lines.append(prefix + "… (truncated)")
                    return
                budget[0] -= 1
                last = index == len(children) - 1
                is_dir = child.is_dir() and not child.is_symlink()
                lines.append(prefix + ("└── " if last else "├── ") + child.name + ("/" if is_dir else ""))
                if is_dir and depth < max_depth:
                    walk(child, prefix + ("    " if last else "│   "), depth + 1)

        walk(top, "", 1)
        return "\n".join(lines)

    def file_checksum(
        path: RelPath,
        algorithm: Annotated[Literal["md5", "sha1", "sha256", "sha512"], Field(description="Hash function.")] = "sha256",
    ) -> dict[str, Any]:
        """Compute the checksum (MD5, SHA-1, SHA-256, SHA-512) of a file to verify its integrity."""
        file = box.resolve(path)
        if not file.is_file():
            raise ValueError(f"{path!r} is not a file")
        if file.stat().st_size > _MAX_CHECKSUM_BYTES:
            raise ValueError(f"file is too large to hash (limit is {_MAX_CHECKSUM_BYTES} bytes)")
        digest = hashlib.new(algorithm)
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
        return {"path": box.relative(file), "algorithm": algorithm, "hex": digest.hexdigest(), "size_bytes": file.stat().st_size}

    return [
        list_directory, read_text_file, get_file_info, search_in_files,
        find_files, count_file_lines, directory_tree, file_checksum,
    ]
