"""The install's hashing key and the keyed hashes of query terms: the store keeps hashes, never the words; and
the checks a file of the store passes before it is trusted (no symbolic link, owned by this user, written by no
one else)."""

from __future__ import annotations

import hashlib
import os
import secrets
import stat
from functools import lru_cache
from pathlib import Path

from ..search.analysis import tokenize

__all__ = ["KEY_FILE", "TEST_KEY", "check_trusted", "hashed_terms", "install_key"]

TEST_KEY = b"lazytools-usage-1"
"""The key of a prior built without an install's key (tests, `UsagePrior()` alone): never the one a store uses."""
KEY_FILE = "usage.key"
_KEY_BYTES = 32


@lru_cache(maxsize=256)  # a served search asks twice: for the prior's boosts, then for the record of it
def hashed_terms(query: str, key: bytes = TEST_KEY) -> tuple[str, ...]:
    """The query's index terms (stems, stop words dropped), each as a 64-bit hash keyed with `key`: what the store
    keeps. Pseudonymous, not anonymous: whoever holds the key can hash a word list and match the terms."""
    return tuple(_term_hash(term, key) for term in dict.fromkeys(tokenize(query)))


MAX_CACHED_HASHES = 65_536
"""Distinct (key, term) hashes `_term_hash` keeps; past it the cache starts afresh."""
MAX_CACHED_TERM_CHARS = 64
"""Longer terms are hashed each time, so the cache's memory stays bounded."""
_hashes: dict[tuple[bytes, str], str] = {}


def _term_hash(term: str, key: bytes) -> str:
    """One term's keyed hash, kept per distinct term: a request's words recur across requests that differ."""
    found = _hashes.get((key, term))
    if found is None:
        found = hashlib.blake2b(term.encode(), digest_size=8, key=key).hexdigest()
        if len(term) <= MAX_CACHED_TERM_CHARS:
            if len(_hashes) >= MAX_CACHED_HASHES:
                _hashes.clear()
            _hashes[(key, term)] = found
    return found


def check_trusted(path: Path, info: os.stat_result | None = None, *, secret: bool = False) -> None:
    """Refuse (OSError) an existing file of the store that another user could have planted or could change: a
    symbolic link, not a regular file, a hard link (another name for a file elsewhere, which writing would change),
    owned by someone other than this process's user, or writable by its group or by anyone; a `secret` one (the
    hashing key) also when others may read it. In a cache directory others can write, such a file would feed made-up
    history (or a known key)."""
    info = os.lstat(path) if info is None else info
    if stat.S_ISLNK(info.st_mode):
        raise OSError(f"{path} is a symbolic link: not followed")
    if not stat.S_ISREG(info.st_mode):
        raise OSError(f"{path} is not a regular file: not used")
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise OSError(f"{path} is owned by another user (uid {info.st_uid}): not trusted")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise OSError(f"{path} is writable by other users (mode {stat.S_IMODE(info.st_mode):o}): not trusted")
    if info.st_nlink > 1:
        raise OSError(f"{path} is a hard link ({info.st_nlink} names): not trusted")
    if secret and info.st_mode & (stat.S_IRGRP | stat.S_IROTH):
        raise OSError(f"{path} is readable by other users (mode {stat.S_IMODE(info.st_mode):o}): not trusted")


def install_key(path: Path) -> bytes:
    """This install's random hashing key in `path` (created 0600 on first use; a symlink, or a file another user
    owns or may write, is refused: `check_trusted`), so the hashes in one store cannot be matched with a key read
    from elsewhere."""
    if path.is_symlink():
        raise OSError(f"{path} is a symbolic link: not followed")
    try:
        made = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as existing:
            check_trusted(path, os.fstat(existing.fileno()), secret=True)  # the file opened, not one swapped in after a check
            key = existing.read(_KEY_BYTES + 1)
        if len(key) != _KEY_BYTES:
            raise OSError(f"{path} does not hold a {_KEY_BYTES}-byte key") from None
        return key
    key = secrets.token_bytes(_KEY_BYTES)
    with os.fdopen(made, "wb") as out:
        out.write(key)
    return key
