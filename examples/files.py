"""Read-only file tools confined to one root directory, built by `make_file_tools(root)`."""

import hashlib
import os
import re
import stat
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import Field

from . import _regex_runner
from ._common import MAX_RESULT_BYTES
from ._sandbox import FileRef, Opened, Sandbox, display_name, glob_to_regex, line_name, link_budget, read_at_most

__all__ = ["make_file_tools", "MAX_READ_BYTES", "MAX_SEARCH_BYTES", "MAX_SEARCH_TOTAL_BYTES", "MAX_CHECKSUM_BYTES"]

# Every read stops at a stated size, checked on the open descriptor (a file may grow or be swapped meanwhile).
MAX_READ_BYTES = 10_000_000  # read_text_file: the whole file is read to count its lines
_MAX_LINES_PER_READ = 5000
MAX_SEARCH_BYTES = 2_000_000  # per file searched or counted
MAX_SEARCH_TOTAL_BYTES = 50_000_000  # per search_in_files / count_file_lines call
_BINARY_SNIFF = 8192
MAX_CHECKSUM_BYTES = 1_000_000_000
_MAX_LISTED = 1000
_MAX_TREE_LINES = 2000

RelPath = Annotated[str, Field(description="Path relative to the files root, e.g. 'src/app.py' or '.' for the root.")]
Hidden = Annotated[bool, Field(description="Include dot-files and dot-directories such as .git.")]


def _looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:_BINARY_SNIFF]


def _literal_grep(matcher: re.Pattern[str], texts: list[str], limit: int) -> tuple[list[list[Any]], bool]:
    """Find matching lines of an escaped (linear-time) pattern; returns [file index, line, text] hits."""
    hits: list[list[Any]] = []
    for index, text in enumerate(texts):
        for number, line in enumerate(text.splitlines(), 1):
            if matcher.search(line):
                hits.append([index, number, line[:500]])
                if len(hits) >= limit:
                    return hits, True
    return hits, False


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat()


def _kind(st: os.stat_result | None) -> str:
    if st is None:
        return "other"
    return "directory" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"


def make_file_tools(root: Path | None, *, why: str = "no folder was granted to the file tools") \
        -> list[Callable[..., Any]]:
    """Create the file tools bound to `root`; every path they accept is opened inside it (see _sandbox). With no
    root, every call is refused with `why`."""
    box = Sandbox(root) if root is not None else Sandbox.ungranted(why)

    def listing(folder: Opened, include_hidden: bool, limit: int,
                hops: list[int]) -> tuple[list[tuple[str, str, os.stat_result | None, bool]], bool]:
        """(name, kind, stat, is_link) of a folder's entries; links are shown only if they stay under the root and
        fit in `hops` (a `link_budget`)."""
        entries, cut = box.entries(folder)
        rows = []
        for entry in entries:
            if not include_hidden and entry.name.startswith("."):
                continue
            try:
                if entry.is_symlink():
                    st = box.follow(folder.parts + (entry.name,), hops)
                    if st is None:
                        continue  # leads outside the root, or nowhere
                    rows.append((entry.name, _kind(st), st, True))
                else:
                    st = entry.stat(follow_symlinks=False)
                    rows.append((entry.name, _kind(st), st, False))
            except OSError:
                continue  # vanished since it was listed
        rows.sort(key=lambda r: (r[1] != "directory", r[0].lower()))
        return rows[:limit], cut or len(rows) > limit

    def list_directory(path: RelPath = ".", include_hidden: Hidden = False) -> dict[str, Any]:
        """List the files and folders in a directory with their type and size.

        Every name shown can be passed back in a path. A name's bytes that are not UTF-8 are shown as \\xNN
        (80-ff) and a backslash of the name is doubled where it comes before \\ or such an \\xNN; paths read
        these escapes back, so 'bad\\xffname' is the name with byte ff and 'bad\\\\xffname' the one with the
        four characters \\xff.
        """
        with box.open(path) as folder:
            if not folder.is_dir:
                raise ValueError(f"{path!r} is not a directory")
            rows, _cut = listing(folder, include_hidden, _MAX_LISTED, link_budget())
            entries = [
                {"name": display_name(name), "type": kind, "size": st.st_size if kind == "file" and st else None}
                for name, kind, st, _link in rows
            ]
            return {"path": box.relative(folder.parts), "count": len(entries), "entries": entries}

    def read_text_file(
        path: RelPath,
        start_line: Annotated[int, Field(description="First line to return (1-based).", ge=1)] = 1,
        end_line: Annotated[int, Field(description="Last line to return (inclusive); 0 means to the end.", ge=0)] = 0,
    ) -> dict[str, Any]:
        """Read a text file, optionally only a range of lines (at most 5000 lines per call)."""
        if start_line < 1 or end_line < 0 or (end_line and end_line < start_line):
            raise ValueError("need 1 <= start_line <= end_line (or end_line = 0 for the end of the file)")
        with box.open(path) as file:
            if file.is_dir:
                raise ValueError(f"{path!r} is not a file")
            data = box.read(file, MAX_READ_BYTES, path)
            rel = box.relative(file.parts)
        if _looks_binary(data):
            raise ValueError(f"{PurePosixPath(rel).name} looks like a binary file, not text")
        lines = data.decode("utf-8", errors="replace").splitlines()
        last = min(end_line or len(lines), len(lines), start_line + _MAX_LINES_PER_READ - 1)
        # Long lines could still make a result far over the size limit: stop before it, at a line boundary.
        wanted = lines[start_line - 1 : last]
        chosen: list[str] = []
        budget = MAX_RESULT_BYTES - 1024
        for line in wanted:
            budget -= len(line.encode("utf-8", "surrogatepass")) + 1
            if budget < 0:
                break
            chosen.append(line)
        if wanted and not chosen:
            raise ValueError(f"line {start_line} alone is longer than the {MAX_RESULT_BYTES}-byte result limit")
        if len(chosen) < len(wanted):
            last = start_line + len(chosen) - 1
        return {
            "path": rel,
            "total_lines": len(lines),
            "start_line": start_line,
            "end_line": last,
            "content": "\n".join(chosen),
            "truncated": last < (end_line or len(lines)),
        }

    def get_file_info(path: RelPath) -> dict[str, Any]:
        """Get metadata about a file or folder: size, type, permissions and modification time."""
        with box.open(path) as target:
            info = target.st
            kind = _kind(info)
            name = target.parts[-1] if target.parts else ""
            return {
                "path": box.relative(target.parts),
                "type": kind,
                "size_bytes": info.st_size,
                "modified_utc": _iso(info.st_mtime),
                "permissions": stat.filemode(info.st_mode),
                "is_symlink": target.link,
                "extension": display_name(PurePosixPath(name).suffix) if kind == "file" else None,
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
        names: list[str] = []
        blobs: list[bytes] = []
        hits: list[list[Any]] = []
        truncated = False
        budget = MAX_SEARCH_TOTAL_BYTES
        # A regex search holds every file it reads until its child has searched them: it takes the child's place
        # before reading, so at most MAX_CHILDREN calls hold files at once (eight calls of one session held 1.1 GB).
        with _regex_runner.child_place() if regex else nullcontext(), box.open(path) as top:
            for ref, data in _texts(box, top, name_re, include_hidden):
                if data is None:
                    continue
                budget -= len(data)
                if budget < 0:
                    break
                names.append(box.relative(ref.parts))
                if regex:
                    blobs.append(data)
                elif not truncated:
                    # Searched as it is read, then let go: holding every file and its text until the end cost
                    # 100 MB a call (one session's eight calls at once took 1 GB).
                    text = data.decode("utf-8", errors="replace")
                    found, truncated = _literal_grep(matcher, [text], max_results - len(hits))
                    hits += [[len(names) - 1, number, line] for _, number, line in found]
            if regex:
                # User patterns may backtrack catastrophically, so they run in a killable child process. The child
                # gets the bytes already read here, never a path it would open again.
                request = {"op": "grep", "pattern": matcher.pattern, "flags": matcher.flags, "limit": max_results}
                result = _regex_runner.run_regex(request, timeout=_regex_runner.DEFAULT_TIMEOUT_SECONDS * 4,
                                                 blobs=blobs, place_held=True)
                hits, truncated = result["hits"], result["truncated"]
        matches = [{"file": names[i], "line": n, "text": t} for i, n, t in hits]
        return {"matches": matches, "files_searched": len(names), "truncated": truncated or budget < 0}

    def find_files(
        pattern: Annotated[str, Field(description="Glob such as '*.md' (matches names at any depth) or 'src/**/*.py' (matches paths).")],
        path: RelPath = ".",
        include_hidden: Hidden = False,
        max_results: Annotated[int, Field(description="Maximum number of paths to return.", ge=1, le=5000)] = 500,
    ) -> dict[str, Any]:
        """Find files by name or glob pattern (e.g. *.py, **/test_*.py) under a directory."""
        matcher = glob_to_regex(pattern)
        by_name = "/" not in pattern
        found: list[str] = []
        size = 0
        with box.open(path) as base:
            for ref in box.walk_files(base, include_hidden):
                rel = "/".join(ref.parts[len(base.parts) :]) if base.is_dir else ref.name
                if matcher.match(ref.name if by_name else rel):
                    shown = box.relative(ref.parts)
                    size += len(shown) + 4
                    if len(found) >= max_results or size > MAX_RESULT_BYTES // 2:
                        return {"count": len(found), "files": found, "truncated": True}
                    found.append(shown)
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
        budget = MAX_SEARCH_TOTAL_BYTES
        with box.open(path) as top:
            for ref in box.walk_files(top, include_hidden):
                if not name_re.match(ref.name):
                    continue
                # Read up to what the budget has left: a larger file is skipped unread (each one once it is spent),
                # not read whole only to be skipped, as all 20,000 of a walk were.
                data = _read_small(box, ref, min(MAX_SEARCH_BYTES, budget))
                if data is None or _looks_binary(data):
                    skipped += 1
                    continue
                budget -= len(data)
                ext = display_name(PurePosixPath(ref.name).suffix.lower()) or "(none)"
                per_ext[ext] += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
                files_per_ext[ext] += 1
        by_ext = {ext: {"files": files_per_ext[ext], "lines": n} for ext, n in per_ext.most_common()}
        return {"total_lines": sum(per_ext.values()), "total_files": sum(files_per_ext.values()), "by_extension": by_ext, "skipped_files": skipped}

    def directory_tree(
        path: RelPath = ".",
        max_depth: Annotated[int, Field(description="How many directory levels to show.", ge=1, le=10)] = 3,
        include_hidden: Hidden = False,
    ) -> str:
        """Show a directory as an indented tree of folders and files (like the `tree` command)."""
        budget = [_MAX_TREE_LINES]
        hops = link_budget()  # one for the whole tree: each folder's links would otherwise have a budget of their own

        def walk(folder: Opened, prefix: str, depth: int, lines: list[str]) -> None:
            rows, _cut = listing(folder, include_hidden, _MAX_TREE_LINES, hops)
            for index, (name, kind, _st, link) in enumerate(rows):
                if budget[0] <= 0:
                    lines.append(prefix + "… (truncated)")
                    return
                budget[0] -= 1
                last = index == len(rows) - 1
                is_dir = kind == "directory" and not link
                lines.append(prefix + ("└── " if last else "├── ") + line_name(name) + ("/" if is_dir else ""))
                if is_dir and depth < max_depth:
                    child = box.open_folder(folder.fd, name)
                    if child is None:
                        continue  # gone, or swapped for a link, since it was listed
                    try:
                        sub = Opened(child, folder.parts + (name,), os.fstat(child), False)
                        walk(sub, prefix + ("    " if last else "│   "), depth + 1, lines)
                    finally:
                        os.close(child)

        with box.open(path) as top:
            if not top.is_dir:
                raise ValueError(f"{path!r} is not a directory")
            lines = [box.relative(top.parts) + "/"]
            walk(top, "", 1, lines)
        return "\n".join(lines)

    def file_checksum(
        path: RelPath,
        algorithm: Annotated[Literal["md5", "sha1", "sha256", "sha512"], Field(description="Hash function.")] = "sha256",
    ) -> dict[str, Any]:
        """Compute the checksum (MD5, SHA-1, SHA-256, SHA-512) of a file to verify its integrity."""
        with box.open(path) as file:
            if not file.is_file:
                raise ValueError(f"{path!r} is not a file (only regular files can be hashed)")
            if file.st.st_size > MAX_CHECKSUM_BYTES:
                raise ValueError(f"file is too large to hash (limit is {MAX_CHECKSUM_BYTES} bytes)")
            digest = hashlib.new(algorithm)
            size = 0
            while size <= MAX_CHECKSUM_BYTES:
                chunk = read_at_most(file.fd, 1 << 20)
                if not chunk:
                    break
                size += len(chunk)
                digest.update(chunk)
            if size > MAX_CHECKSUM_BYTES:
                raise ValueError(f"file is too large to hash (limit is {MAX_CHECKSUM_BYTES} bytes)")
            return {"path": box.relative(file.parts), "algorithm": algorithm, "hex": digest.hexdigest(), "size_bytes": size}

    return [
        list_directory, read_text_file, get_file_info, search_in_files,
        find_files, count_file_lines, directory_tree, file_checksum,
    ]


def _texts(box: Sandbox, top: Opened, name_re: re.Pattern[str], include_hidden: bool
           ) -> Iterator[tuple[FileRef, bytes | None]]:
    """The files under `top` whose name matches, each with its text: None when it is gone, over
    MAX_SEARCH_BYTES or binary (search_in_files and count_file_lines read files the same way)."""
    for ref in box.walk_files(top, include_hidden):
        if name_re.match(ref.name):
            data = _read_small(box, ref, MAX_SEARCH_BYTES)
            yield ref, None if data is None or _looks_binary(data) else data


def _read_small(box: Sandbox, ref: FileRef, limit: int) -> bytes | None:
    """The bytes of a walked file if it is still a regular file under the root and at most `limit` bytes."""
    opened = box.open_ref(ref)
    if opened is None:
        return None
    with opened:
        if not opened.is_file or opened.st.st_size > limit:
            return None
        data = read_at_most(opened.fd, limit + 1)
    return None if len(data) > limit else data
