"""Tool vectors on disk, keyed by a hash of the embedded text, the embedder's fingerprint and the embedding code.

A restart, or an upstream server listing its tools again, re-embeds only the tools whose text changed. One file
per embedder fingerprint (`<dir>/vectors/<fingerprint>.npz`: 16-byte text digests and float32 rows), read without
pickle and replaced atomically, so a crash or a second process never leaves half a file; an unreadable file, or
one holding non-finite values, is ignored (and rewritten), and a directory that cannot be written only costs the
saving. The arrays' declared sizes (the zip members' and the .npy headers') are checked before any data is read: a
small file that declares a huge array (a zip bomb of zeros) is damage too, not gigabytes decompressed at start-up.
So are rows that no embedder gives (not of unit length, or every one zero) and a text's key stored twice.

The file's name holds a digest of this package's source (`code_digest`): the fingerprint names the weights, but
how texts become vectors (batching, pooling, the window) is code, and vectors made by other code are not reused.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import math
import os
import re
import tempfile
import threading
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .base import Embedder, EmbeddingStopped, Vectors, embed_batches

__all__ = ["MAX_ENTRIES", "VectorCache", "text_key"]

logger = logging.getLogger("lazytools.search")

MAX_ENTRIES = 20_000
"""Rows kept per embedder (30 MB at 384 dimensions); past it the rows not asked for last go first."""

_locks: dict[Path, threading.Lock] = {}
_locks_guard = threading.Lock()


KEY_BYTES = 16


def text_key(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:KEY_BYTES]


@functools.cache
def code_digest() -> str:
    """A digest of the embedders' source files, read once per process."""
    digest = hashlib.sha256()
    for source in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _file_name(fingerprint: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9._+-]", "_", fingerprint)[:80]
    return f"{readable}-{hashlib.sha256(f'{fingerprint}|{code_digest()}'.encode()).hexdigest()[:12]}.npz"


class VectorCache:
    """Vectors of texts for one directory; `vectors(embedder, texts)` embeds only what is not stored yet."""

    def __init__(self, directory: Path, *, max_entries: int = MAX_ENTRIES) -> None:
        self.directory = directory
        self.max_entries = max_entries
        self.hits = 0
        self.misses = 0

    def path_for(self, embedder: Embedder) -> Path:
        return self.directory / "vectors" / _file_name(embedder.fingerprint)

    def vectors(self, embedder: Embedder, texts: Sequence[str], stop: threading.Event | None = None,
                progress: Callable[[int, int], None] | None = None) -> Vectors:
        """The vectors of `texts`, the missing ones embedded and stored (`progress` as for `embed_batches`, over the
        missing ones). Once `stop` is set, those embedded so far are stored and EmbeddingStopped is raised: a
        restart embeds only the rest."""
        path = self.path_for(embedder)
        with _lock_for(path):
            keys, rows = self._read(path, embedder.dimensions, len(texts))
            known = {key: i for i, key in enumerate(keys)}
            wanted = [text_key(text) for text in texts]
            missing = sorted({key: i for i, key in reversed(list(enumerate(wanted))) if key not in known}.values())
            fresh = embed_batches(embedder, [texts[i] for i in missing], stop, progress) if missing else rows[:0]
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
            asked, missing = len(missing), missing[:len(fresh)]
            if missing:
                added = {wanted[i]: row for i, row in zip(missing, fresh, strict=True)}
                keys, rows = self._merged(keys, rows, wanted, added)
                self._write(path, keys, rows)
                known = {key: i for i, key in enumerate(keys)}
            if len(missing) < asked:
                raise EmbeddingStopped(f"stopped with {len(missing)} of {asked} new texts embedded (kept in {path})")
            out: Vectors = rows[[known[key] for key in wanted]] if wanted else rows[:0]
            return out.astype(np.float32, copy=False)

    def _merged(
        self, keys: list[bytes], rows: Vectors, wanted: list[bytes], added: dict[bytes, Vectors]
    ) -> tuple[list[bytes], Vectors]:
        """Old rows, then the new ones; over the cap, old rows not wanted now leave first."""
        all_keys = keys + list(added)
        all_rows = np.vstack([rows, np.array(list(added.values()), dtype=np.float32).reshape(len(added), -1)])
        if len(all_keys) > self.max_entries:
            wanted_set = set(wanted)
            spare = [i for i, key in enumerate(all_keys) if key not in wanted_set]
            drop = set(spare[: len(all_keys) - self.max_entries])
            kept = [i for i in range(len(all_keys)) if i not in drop]
            all_keys, all_rows = [all_keys[i] for i in kept], all_rows[kept]
        return all_keys, all_rows

    def _read(self, path: Path, dimensions: int, wanted: int = 0) -> tuple[list[bytes], Vectors]:
        """The stored keys and rows; at most `max_entries` rows (or `wanted`, when more are asked for at once) are
        accepted, so reading costs no more than the catalog it serves."""
        empty = (list[bytes](), np.zeros((0, dimensions), dtype=np.float32))
        if not path.is_file():
            return empty
        most = max(self.max_entries, wanted)
        try:
            # Opened here, not by np.load: a damaged zip there leaves its file handle open.
            with path.open("rb") as handle, zipfile.ZipFile(handle) as archive:
                keys = _member(archive, "keys.npy", np.dtype(f"S{KEY_BYTES}"), (None,), most)
                rows = _member(archive, "vectors.npy", np.dtype("<f4"), (len(keys), dimensions), most)
            _check_rows(keys, rows)
            # numpy drops a bytes element's trailing zero bytes, and one digest in 256 ends with one: padded back,
            # its key is the one `text_key` gives, not a shorter one that never matches.
            return [bytes(key).ljust(KEY_BYTES, b"\0") for key in keys], rows.astype(np.float32, copy=False)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            logger.warning("vector cache %s unreadable, rebuilding it: %s", path, exc)
            return empty

    def _write(self, path: Path, keys: list[bytes], rows: Vectors) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(prefix=".vectors-", suffix=".npz", dir=path.parent)
            try:
                with os.fdopen(handle, "wb") as file:
                    np.savez(file, keys=np.array(keys, dtype=f"S{KEY_BYTES}"), vectors=rows.astype(np.float32))
                os.replace(temporary, path)
            finally:
                if os.path.exists(temporary):
                    os.unlink(temporary)
        except OSError as exc:
            if path not in _UNWRITTEN:  # once per file and process: every later write would say the same
                _UNWRITTEN.add(path)
                logger.warning("vector cache %s not written (%s): vectors are embedded again at each start; "
                               "LAZYTOOLS_CACHE_DIR names a directory this user may write", path, exc)


_UNWRITTEN: set[Path] = set()
"""The cache files a write failed for in this process (warned once)."""


_UNIT = 1e-3
"""How far from 1 a stored row's length may be (float32 rounding of a unit vector is far smaller)."""


def _check_rows(keys: npt.NDArray[Any], rows: npt.NDArray[Any]) -> None:
    """Refuse what no embedder writes: NaN (every cosine NaN: no tool would ever match again), rows neither of unit
    length nor zero, only zero rows (a text with nothing to embed is rare, a catalog of them is damage), and a key
    twice (which row would be served is an accident)."""
    if not np.isfinite(rows).all():
        raise ValueError("non-finite values in the vectors")
    norms = np.linalg.norm(rows.astype(np.float64), axis=1)
    zero = norms == 0
    if (np.abs(norms[~zero] - 1) > _UNIT).any():
        raise ValueError("rows that are not unit vectors")
    if len(rows) and zero.all():
        raise ValueError("every row is zero")
    if len(np.unique(keys)) != len(keys):
        raise ValueError("a text's key stored twice")


_MAX_HEADER = 4096
"""Longest .npy header accepted (numpy writes 128 bytes for these arrays)."""


def _member(archive: zipfile.ZipFile, name: str, dtype: np.dtype[Any], shape: tuple[int | None, ...],
            most: int) -> npt.NDArray[Any]:
    """The array stored as `name`, read only after its zip entry and its .npy header declare what is expected:
    `dtype`, `shape` (None: any length up to `most` rows), C order, and exactly that many bytes of data."""
    info = archive.getinfo(name)
    row_bytes = dtype.itemsize * math.prod(d for d in shape[1:] if d is not None)
    if info.file_size > _MAX_HEADER + most * row_bytes:
        raise ValueError(f"{name} declares {info.file_size} bytes, more than {most} rows")
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version == (1, 0):
            declared, fortran, found = np.lib.format.read_array_header_1_0(member, max_header_size=_MAX_HEADER)
        elif version == (2, 0):
            declared, fortran, found = np.lib.format.read_array_header_2_0(member, max_header_size=_MAX_HEADER)
        else:
            raise ValueError(f"{name}: .npy version {version} not written here")
        expected = tuple(declared[0] if d is None and declared else d for d in shape)
        if found != dtype or fortran or declared != expected or declared[0] > most:
            raise ValueError(f"{name}: unexpected array {found} {declared}")
        header = member.tell()
        if info.file_size != header + declared[0] * row_bytes:
            raise ValueError(f"{name}: {info.file_size} bytes stored for {declared[0]} rows")
        data = member.read(declared[0] * row_bytes)
    if len(data) != declared[0] * row_bytes:
        raise ValueError(f"{name}: cut short")
    array: npt.NDArray[Any] = np.frombuffer(data, dtype=dtype).reshape(declared).copy()
    return array


def _lock_for(path: Path) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(path, threading.Lock())
