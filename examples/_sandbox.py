"""Root-confined file access: every path is opened one component at a time under a descriptor of the root.

Checking a path and then opening it again by name is a race: between the two, a file inside the root can be swapped
for a symbolic link to `/etc/passwd`, a FIFO or `/dev/zero`. So nothing here opens by full path. A path is walked
component by component with `openat`-style calls (`os.open(name, dir_fd=...)`) and `O_NOFOLLOW`; a symbolic link is
never followed by the kernel, only read with `readlink` and its target walked the same way, and only while it stays
under the root. The object finally opened is checked on its descriptor (`fstat`), and reads stop at a stated cap.
`O_NONBLOCK` makes opening a FIFO return at once, so a FIFO swapped in is refused instead of blocking a thread.

A hard link inside the root is an ordinary entry of the root, so a hard link to a file outside stays readable: the
file system cannot tell it from any other file (see examples/README.md).
"""

from __future__ import annotations

import errno
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MAX_GLOB_BACKTRACKING",
    "MAX_LINK_HOPS",
    "MAX_SYMLINKS",
    "MAX_WALK_DEPTH",
    "MAX_WALK_ENTRIES",
    "FileRef",
    "Opened",
    "Sandbox",
    "display_name",
    "glob_to_regex",
    "line_name",
    "link_budget",
    "parse_name",
    "read_at_most",
]

# Walks stop after this many entries (files and folders) so a huge tree cannot stall a request.
MAX_WALK_ENTRIES = 20_000
# Walks go at most this many folders deep; each level holds one open descriptor while it is walked.
MAX_WALK_DEPTH = 32
# Symbolic links followed while resolving one path (Linux's own limit is 40).
MAX_SYMLINKS = 40
# Symbolic links followed in all by one listing or walk (`link_budget`); past it, links are left out as broken ones
# are. Each link's chain is walked anew, so a folder of 20,000 links through chains of 39 more took 4.5 s to list
# (28 times as long as 20,000 files); links of one or two steps each still fit by the tens of thousands.
MAX_LINK_HOPS = 4 * MAX_WALK_ENTRIES

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOCTTY = getattr(os, "O_NOCTTY", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
# The last component may be anything; O_NONBLOCK keeps a FIFO (or a device) from blocking the open.
_ANY_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | _NOCTTY | _CLOEXEC
# What open(O_NOFOLLOW) reports for a symbolic link: ELOOP on Linux and macOS, EMLINK on FreeBSD.
_LINK_ERRNOS = {errno.ELOOP, errno.EMLINK}


# Wildcards that may still backtrack after the rewrite below; each one multiplies the worst case by the path length.
MAX_GLOB_BACKTRACKING = 3

_STAR, _GLOBSTAR, _DIRSTAR = "[^/]*", ".*", "(?:.*/)?"  # *, ** and **/
_LAZY = {_STAR: "[^/]*?", _GLOBSTAR: ".*?", _DIRSTAR: "(?:.*?/)??"}


def _glob_tokens(pattern: str) -> list[str]:
    """Split a glob into wildcard tokens (*, **, **/) and regex pieces for fixed-width parts, merging runs of stars."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            token, i = _DIRSTAR, i + 3
        elif pattern.startswith("**", i):
            token, i = _GLOBSTAR, i + 2
        elif pattern[i] == "*":
            token, i = _STAR, i + 1
        elif pattern[i] == "?":
            token, i = "[^/]", i + 1
        elif pattern[i] == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            token, i = "[" + body.replace("\\", "\\\\") + "]", end + 1
        else:
            token, i = re.escape(pattern[i]), i + 1
        previous = out[-1] if out else None
        if token in _LAZY and previous in _LAZY:
            # Two wildcards in a row match what the wider one matches ("**/" then "*" is any text).
            if token == previous:
                continue
            if token == _DIRSTAR and previous == _STAR:
                out.append(token)
                continue
            out[-1] = _GLOBSTAR
            continue
        out.append(token)
    return out


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob (*, ?, [abc], ** for any depth) into a regex over '/'-separated paths.

    A wildcard followed by fixed text and then by a wildcard that absorbs at least as much is matched atomically
    (the earliest place the fixed text fits, never revisited), as `fnmatch` does since Python 3.11: that keeps
    `*a*a*a*a*b` linear instead of polynomial. The wildcards that must still backtrack are limited to
    MAX_GLOB_BACKTRACKING per pattern.
    """
    if len(pattern) > 1000:
        raise ValueError("glob pattern is too long (limit is 1000 characters)")
    tokens = _glob_tokens(pattern)
    wild = [i for i, t in enumerate(tokens) if t in _LAZY]
    parts: list[str] = []
    backtracking = 0
    position = 0
    for n, index in enumerate(wild):
        parts.extend(tokens[position:index])
        following = wild[n + 1] if n + 1 < len(wild) else None
        token = tokens[index]
        fixed = tokens[index + 1 : following] if following is not None else None
        absorbing = following is not None and (tokens[following] == _GLOBSTAR or token == tokens[following] == _STAR)
        if fixed and absorbing:
            parts.append("(?>" + _LAZY[token] + "".join(fixed) + ")")
            position = following if following is not None else len(tokens)
        else:
            backtracking += 1
            parts.append(token)
            position = index + 1
    parts.extend(tokens[position:])
    if backtracking > MAX_GLOB_BACKTRACKING + 1:  # the last wildcard before the end is one plain loop
        raise ValueError(
            f"glob pattern {pattern!r} has too many wildcards that can backtrack; use at most "
            f"{MAX_GLOB_BACKTRACKING} of '**/' or '*' before '**/'"
        )
    try:
        return re.compile("".join(parts) + r"\Z", re.DOTALL)
    except re.error as exc:
        raise ValueError(f"invalid glob pattern {pattern!r}: {exc}") from None


# A name is shown as text that is valid UTF-8 and can be passed back: each byte that is not UTF-8 becomes `\xNN`
# (80-ff), and in one-line text (directory_tree) each control character becomes `\xNN` (01-1f, 7f). A backslash of
# the name itself is doubled only where it comes before `\` or such an `xNN`, where it would otherwise read as one
# of these escapes; anywhere else it is shown as it is, so a name such as `a\b` looks the same. `parse_name` reads
# the escapes back; no other escape exists, so `\x2f` ("/"), `\x2e` (".") and `\x00` stay literal text.
_BYTE = r"x(?:[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F]|1[0-9a-fA-F]|7[fF])"
_AFTER_BACKSLASH = re.compile(_BYTE)
_NAME_ESCAPE = re.compile(r"\\(?:\\|" + _BYTE + ")")


def _shown(name: str, controls: bool) -> str:
    text = os.fsencode(name).decode("utf-8", "surrogateescape")  # an undecodable byte NN is the character U+DCNN
    pieces: list[str] = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            pieces.append(f"\\x{code - 0xDC00:02x}")
        elif controls and (code < 32 or code == 127):
            pieces.append(f"\\x{code:02x}")
        else:
            pieces.append(ch)
    for index, piece in enumerate(pieces):
        if piece == "\\":
            following = "".join(pieces[index + 1 : index + 4])
            if following.startswith("\\") or _AFTER_BACKSLASH.match(following):
                pieces[index] = "\\\\"
    return "".join(pieces)


def display_name(name: str) -> str:
    """A file name as valid text that `parse_name` turns back into the name: bytes that are not UTF-8 (lone
    surrogates after `os.fsdecode`) become `\\xNN`, and a backslash that would read as an escape is doubled."""
    if "\\" not in name:
        try:
            name.encode("utf-8")
            return name
        except UnicodeEncodeError:
            pass
    return _shown(name, controls=False)


def line_name(name: str) -> str:
    """A file name for one line of plain text: also control characters (newline, ESC) as `\\xNN`, so a name can
    neither start a fake line nor colour a terminal; `parse_name` reads it back as well."""
    return _shown(name, controls=True)


def _unescape(match: re.Match[str]) -> str:
    escape = match.group()
    if escape == "\\\\":
        return "\\"
    code = int(escape[2:], 16)
    return chr(0xDC00 + code) if code >= 0x80 else chr(code)


def parse_name(shown: str) -> str:
    """The file name that `display_name` or `line_name` showed as `shown` (one path component). Text without those
    escapes is the name itself; a backslash that starts no escape stays a backslash."""
    if "\\" not in shown:
        return shown
    # fsencode then fsdecode turns the bytes spelled by escapes (`\xc3\xa9` is "é") into the name os gives.
    return os.fsdecode(os.fsencode(_NAME_ESCAPE.sub(_unescape, shown)))


@dataclass
class Opened:
    """An open descriptor, the path under the root it was reached by (links inside the root followed), its stat."""

    fd: int
    parts: tuple[str, ...]
    st: os.stat_result
    link: bool  # the last component the caller named was a symbolic link

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.st.st_mode)

    @property
    def is_file(self) -> bool:
        return stat.S_ISREG(self.st.st_mode)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Opened:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class FileRef:
    """A file met by a walk: `dir_fd` is its folder's descriptor, valid only until the walk moves on."""

    parts: tuple[str, ...]
    dir_fd: int | None
    link: bool

    @property
    def name(self) -> str:
        return self.parts[-1] if self.parts else ""


class _Refused(Exception):
    """Internal: resolution stopped; `kind` is 'outside', 'missing', 'denied' or 'loop'."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = detail


class Sandbox:
    """Opens user-supplied paths under the root, refusing anything that would leave it."""

    @classmethod
    def ungranted(cls, why: str) -> Sandbox:
        """A sandbox with no folder at all: every path is refused with `why` (the tools stay listed, so that a model
        calling one learns how a folder is granted)."""
        return _Ungranted(why)

    def __init__(self, root: Path) -> None:
        try:
            self.root = Path(root).resolve(strict=True)
        except (OSError, RuntimeError):
            raise ValueError(f"files root {root} does not exist") from None
        if not self.root.is_dir():
            raise ValueError(f"files root {root} is not a directory")
        if os.open not in os.supports_dir_fd:
            raise ValueError("the file tools need openat() (dir_fd) support, which this platform lacks")

    # -- paths -------------------------------------------------------------------------------------------

    def split(self, user_path: str) -> list[str]:
        """The components of a user path relative to the root ('..' kept, resolved while walking)."""
        if "\x00" in user_path:
            raise ValueError("path contains a NUL character")
        text = user_path.strip()
        if text.startswith("/"):
            normal = posixpath.normpath(text)
            root = str(self.root)
            if normal != root and not normal.startswith(root.rstrip("/") + "/"):
                raise ValueError(f"path {user_path!r} is outside the allowed root directory")
            text = normal[len(root) :]
        return [parse_name(part) for part in text.split("/") if part not in ("", ".")]

    def relative(self, parts: tuple[str, ...] | list[str]) -> str:
        """A path under the root as text for results ('.' for the root; undecodable bytes escaped)."""
        return "/".join(display_name(p) for p in parts) or "."

    # -- opening -----------------------------------------------------------------------------------------

    def open(self, user_path: str) -> Opened:
        """Open what `user_path` names under the root, or raise ValueError saying why not."""
        try:
            return self._open(self.split(user_path))
        except _Refused as refused:
            raise self._error(refused, user_path) from None

    def open_ref(self, ref: FileRef) -> Opened | None:
        """Open a file met by a walk; None if it vanished, left the root or is no longer openable."""
        try:
            if ref.dir_fd is not None and not ref.link:
                try:
                    fd = os.open(ref.name, _ANY_FLAGS, dir_fd=ref.dir_fd)
                except OSError as exc:
                    if exc.errno not in _LINK_ERRNOS:
                        return None
                    # Swapped for a link since the walk saw it: resolve it like any path (it may point outside).
                else:
                    try:
                        return Opened(fd, ref.parts, os.fstat(fd), False)
                    except OSError:
                        os.close(fd)
                        return None
            return self._open(list(ref.parts))
        except (_Refused, OSError):
            return None

    def _open(self, parts: list[str], hops: list[int] | None = None) -> Opened:
        root_fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        stack = [root_fd]  # descriptors of the folders walked so far, the root first
        names: list[str] = []
        pending = list(reversed(parts))
        links = 0
        named_link = False
        final: int | None = None
        try:
            while pending:
                name = pending.pop()
                if name in ("", "."):
                    continue
                if name == "..":
                    if len(stack) == 1:
                        raise _Refused("outside")
                    os.close(stack.pop())
                    names.pop()
                    continue
                is_last = not pending
                try:
                    fd = os.open(name, _ANY_FLAGS if is_last else _DIR_FLAGS, dir_fd=stack[-1])
                except OSError as exc:
                    # A link named with O_NOFOLLOW fails with ELOOP, or ENOTDIR when O_DIRECTORY is set too.
                    if exc.errno not in _LINK_ERRNOS and exc.errno != errno.ENOTDIR:
                        raise self._refusal(exc) from None
                    try:
                        target = os.readlink(name, dir_fd=stack[-1])
                    except OSError:
                        raise (self._refusal(exc) if exc.errno == errno.ENOTDIR else _Refused("loop")) from None
                    links += 1
                    if hops is not None:
                        hops[0] -= 1
                    if links > MAX_SYMLINKS or (hops is not None and hops[0] < 0):
                        raise _Refused("loop") from None
                    named_link = named_link or (is_last and len(parts) > 0)
                    if target.startswith("/"):
                        # Absolute target: allowed only if it lies under the root, walked again from the root.
                        inside = self.split_inside(target)
                        for fd_open in stack[1:]:
                            os.close(fd_open)
                        del stack[1:]
                        names.clear()
                        pending.extend(reversed(inside))
                    else:
                        pending.extend(reversed([p for p in target.split("/") if p not in ("", ".")]))
                    continue
                names.append(name)
                if is_last:
                    final = fd
                else:
                    stack.append(fd)
            if final is None:
                final = stack.pop()  # the path named a folder already open: the root or one reached by '..'
            try:
                st = os.fstat(final)
            except OSError:
                os.close(final)
                raise
            return Opened(final, tuple(names), st, named_link)
        finally:
            for fd_open in stack:
                os.close(fd_open)

    def split_inside(self, absolute: str) -> list[str]:
        normal = posixpath.normpath(absolute)
        root = str(self.root)
        if normal == root:
            return []
        if not normal.startswith(root.rstrip("/") + "/"):
            raise _Refused("outside")
        return [p for p in normal[len(root) :].split("/") if p]

    @staticmethod
    def _refusal(exc: OSError) -> _Refused:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return _Refused("missing")
        if exc.errno in (errno.EACCES, errno.EPERM):
            return _Refused("denied")
        return _Refused("other", exc.strerror or str(exc))

    @staticmethod
    def _error(refused: _Refused, user_path: str) -> ValueError:
        if refused.kind == "outside":
            return ValueError(f"path {user_path!r} is outside the allowed root directory")
        if refused.kind == "missing":
            return ValueError(f"path {user_path!r} does not exist")
        if refused.kind == "denied":
            return ValueError(f"permission denied for {user_path!r}")
        if refused.kind == "loop":
            return ValueError(f"path {user_path!r} has too many levels of symbolic links")
        return ValueError(f"cannot open {user_path!r}: {refused.detail}")

    # -- reading -----------------------------------------------------------------------------------------

    @staticmethod
    def read(opened: Opened, limit: int, what: str) -> bytes:
        """All bytes of an opened regular file, refusing other kinds and files over `limit` bytes."""
        if not opened.is_file:
            raise ValueError(f"{what!r} is not a regular file")
        if opened.st.st_size > limit:
            raise ValueError(f"file is too large ({opened.st.st_size} bytes; limit is {limit})")
        data = read_at_most(opened.fd, limit + 1)
        if len(data) > limit:  # it grew after fstat
            raise ValueError(f"file is too large (over {limit} bytes)")
        return data

    # -- listing and walking -----------------------------------------------------------------------------

    def entries(self, folder: Opened, limit: int = MAX_WALK_ENTRIES) -> tuple[list[os.DirEntry[str]], bool]:
        """The entries of an opened folder, sorted by name, at most `limit` (and whether some were left out)."""
        found: list[os.DirEntry[str]] = []
        with os.scandir(folder.fd) as listing:
            for entry in listing:
                if len(found) >= limit:
                    found.sort(key=lambda e: e.name)
                    return found, True
                found.append(entry)
        found.sort(key=lambda e: e.name)
        return found, False

    def follow(self, parts: tuple[str, ...], hops: list[int] | None = None) -> os.stat_result | None:
        """The stat of what a symbolic link at `parts` leads to, or None if it leaves the root, is broken or would
        take more links than `hops` (a `link_budget`) has left."""
        try:
            with self._open(list(parts), hops) as target:
                return target.st
        except (_Refused, OSError):
            return None

    def walk_files(self, top: Opened, include_hidden: bool) -> Iterator[FileRef]:
        """Yield files under an opened folder (or the file itself), never following folder links.

        File links are yielded only if they lead to a regular file under the root. At most MAX_WALK_ENTRIES
        entries and MAX_WALK_DEPTH levels are visited.
        """
        if not top.is_dir:
            if top.is_file:
                yield FileRef(top.parts, None, top.link)
            return
        budget = [MAX_WALK_ENTRIES]
        yield from self._walk(top.fd, top.parts, include_hidden, budget, 0, link_budget())

    def _walk(self, fd: int, parts: tuple[str, ...], hidden: bool, budget: list[int], depth: int,
              hops: list[int]) -> Iterator[FileRef]:
        folders: list[str] = []
        files: list[tuple[str, bool]] = []
        with os.scandir(fd) as listing:
            for entry in listing:
                budget[0] -= 1
                if budget[0] < 0:
                    break
                if not hidden and entry.name.startswith("."):
                    continue
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.name)
                    elif entry.is_file(follow_symlinks=False):
                        files.append((entry.name, False))
                    elif entry.is_symlink():
                        target = self.follow(parts + (entry.name,), hops)
                        if target is not None and stat.S_ISREG(target.st_mode):
                            files.append((entry.name, True))
                except OSError:
                    continue
        for name, link in sorted(files):
            yield FileRef(parts + (name,), fd, link)
        if depth + 1 >= MAX_WALK_DEPTH:
            return
        for name in sorted(folders):
            if budget[0] < 0:
                return
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError:
                continue  # vanished, or swapped for a link since it was listed
            try:
                yield from self._walk(child, parts + (name,), hidden, budget, depth + 1, hops)
            finally:
                os.close(child)

    def open_folder(self, parent: int, name: str) -> int | None:
        """Open a sub-folder by name without following a link; None if it is not (or no longer) a folder."""
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=parent)
        except OSError:
            return None


def link_budget() -> list[int]:
    """The links one listing or walk may follow in all (MAX_LINK_HOPS), counted down by `Sandbox.follow`."""
    return [MAX_LINK_HOPS]


def read_at_most(fd: int, limit: int) -> bytes:
    """Read from a descriptor until end of file or `limit` bytes, whichever comes first."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


class _Ungranted(Sandbox):
    """`Sandbox.ungranted`: its root is never opened, as every way in refuses first."""

    def __init__(self, why: str) -> None:  # no root to resolve: `Sandbox.__init__` is not called
        self.root = Path(os.devnull)
        self.why = why

    def open(self, user_path: str) -> Opened:  # every tool's way in: it says why
        raise ValueError(self.why)

    def _open(self, parts: list[str], hops: list[int] | None = None) -> Opened:  # and every other way, in case
        raise ValueError(self.why)
