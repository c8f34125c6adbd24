"""Files a user points lazytools at (a config, an env file), read within bounds: a file named by mistake or malice
(`/dev/zero`, a FIFO nobody writes, 50 MB of one line, a few lines of `${...}` that double at each line) must be a
one-line error, not a hang or a MemoryError."""

from __future__ import annotations

import io
import os
import stat
from collections import ChainMap
from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values
from dotenv.variables import parse_variables

from .errors import ConfigError

__all__ = ["MAX_ENV_FILE_BYTES", "MAX_ENV_FILE_CHARS", "read_env_file", "read_small_file"]

MAX_ENV_FILE_BYTES = 1 << 20
"""An env file larger than this is refused (one holds a few dozen lines)."""
MAX_ENV_FILE_CHARS = 4 << 20
"""The most characters an env file's values may hold once their `${...}` are expanded, all values together."""


def read_small_file(path: Path, limit: int, *, fifo: bool = False) -> bytes:
    """The bytes of a regular file (or a FIFO, when `fifo`: `--env-file <(pass show x)`) of at most `limit` bytes.
    Raises OSError when it cannot be read, ValueError (saying why, without the path) when it is not such a file."""
    info = path.stat()
    if not (stat.S_ISREG(info.st_mode) or (fifo and stat.S_ISFIFO(info.st_mode))):
        raise ValueError("not a regular file")
    if info.st_size > limit:
        raise ValueError(f"over {limit:,} bytes ({info.st_size:,})")
    # A file swapped for a FIFO after the check must not block the start: the open does not wait for a writer.
    flags = os.O_RDONLY | (0 if fifo else getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(os.open(path, flags), "rb") as file:
        data = file.read(limit + 1)  # a file that grew since the check, or a FIFO, is cut here
    if len(data) > limit:
        raise ValueError(f"over {limit:,} bytes")
    return data


def read_env_file(path: Path, environ: Mapping[str, str], *, fifo: bool = False) -> dict[str, str | None]:
    """A dotenv file's variables, as python-dotenv's `dotenv_values` gives them (`${NAME}` and `${NAME:-default}`
    from the lines above, then `environ`; unset is empty), but bounded: at most MAX_ENV_FILE_BYTES read, at most
    MAX_ENV_FILE_CHARS characters in all once expanded. Anything wrong is a ConfigError naming the file."""
    try:
        text = read_small_file(path, MAX_ENV_FILE_BYTES, fifo=fifo).decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"Cannot read env file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start:exc.start + 1]!r}); "
                          "save the file as UTF-8") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    values: dict[str, str | None] = {}
    # The file's own variables win over the environment, as in python-dotenv.
    scope: ChainMap[str, str | None] = ChainMap(values, dict(environ))
    left = MAX_ENV_FILE_CHARS
    for name, raw in dotenv_values(stream=io.StringIO(text), interpolate=False).items():
        values[name] = None if raw is None else _expanded(raw, scope, left, f"{path}: {name}")
        left -= len(values[name] or "")
    return values


def _expanded(raw: str, scope: Mapping[str, str | None], left: int, what: str) -> str:
    # Counted before the pieces are joined: `${A}${A}` doubling at each line reaches gigabytes in thirty lines.
    pieces: list[str] = []
    for atom in parse_variables(raw):
        pieces.append(atom.resolve(scope))
        left -= len(pieces[-1])
        if left < 0:
            raise ConfigError(f"{what} expands past {MAX_ENV_FILE_CHARS:,} characters with the lines above it "
                              "(each ${...} is replaced by that variable's value)")
    return "".join(pieces)
