"""A step a request implies but does not ask for in its tools' words: where its result must go.

A request that names an output file, folder or format ("... and save a short summary as ai-act.md", "export them
to a CSV", "write it into a PDF") needs a tool that writes, saves or exports, beside the tools that make the
content; its words say little about that tool, so the write tool ranks low for the whole request. The deliverable
is a short query of its own (write, save, file, and the phrase that named it), scored against the catalog; its best
tool competes for the last of the results (see `SearchIndex.find`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..entry import ToolEntry
from .analysis import split_words

__all__ = ["WRITE_VERBS", "deliverable", "writes"]

_EXTENSIONS = (
    "md|markdown|txt|csv|tsv|json|jsonl|yaml|yml|xml|html|htm|pdf|docx?|xlsx?|pptx?|png|jpe?g|svg|gif|bib|tex|log|"
    "ini|toml|cfg|conf|py|js|ts|sql|zip|mp3|wav|mp4"
)
_FILE = rf"[\w./~-]*\w\.(?:{_EXTENSIONS})\b"
_FORMATS = (
    r"csv|tsv|json|ejson|pdf|markdown|excel|spreadsheet|xlsx|sheet|text file|html|png|image|bibtex|file|files|"
    r"note|notes|page|document|doc|report"
)
_OUTPUT_VERBS = (
    r"save|saves|saving|saved|write|writes|writing|export|exports|exporting|dump|store|put|record|download|keep|"
    r"append|add"
)
_EXPORT_VERBS = r"export|exports|exporting|save|saved|download"


def _first_letters(verbs: str) -> str:
    """A lookahead for the first letters of `verbs` (a|b|c): where no verb can begin, the engine moves on at once."""
    return "(?=[" + "".join(sorted({verb[0] for verb in verbs.split("|")})) + "])"


# The phrases are bounded (80 + 60 characters between their parts) and never cross a sentence: a query is at most
# MAX_QUERY_CHARS, and these lazy gaps cannot backtrack far. Each begins with its verb, whose first letter the
# lookahead asks for (half the cost of reading a long request).
_SAVED_TO = re.compile(
    rf"{_first_letters(_OUTPUT_VERBS)}\b(?:{_OUTPUT_VERBS})\b[^.;!?]{{0,80}}?\b(?:as|to|into|in|under|on)\b[^.;!?]{{0,60}}?"
    rf"(?:{_FILE}|\b(?:{_FORMATS})\b|\bfolder\b|\bdirectory\b)",
    re.IGNORECASE,
)
_EXPORTED_AS = re.compile(
    rf"{_first_letters(_EXPORT_VERBS)}\b(?:{_EXPORT_VERBS})\b[^.;!?]{{0,60}}?\b(?:as|to|into)\s+(?:a|an|the)?\s*"
    rf"(?:{_FORMATS})\b",
    re.IGNORECASE,
)
_NOT_OUTPUT = re.compile(r"\b(?:comment|comments|member|members|cart|reaction|label|labels|tag|tags)\b", re.IGNORECASE)
"""What is added "to a page" or "to a card" in these phrases is not a deliverable ("add a comment to the page")."""

WRITE_VERBS = frozenset(
    "write save export append patch post put insert upload push create add update store dump download".split()
)
"""A tool whose name holds one of these writes somewhere."""


def writes(entry: ToolEntry, name: Iterable[str] | None = None) -> bool:
    """Whether the tool's name says it writes, saves, creates or exports something. `name`: its name's words, when
    the caller has split them already."""
    return not WRITE_VERBS.isdisjoint(split_words(entry.upstream_name or entry.name) if name is None else name)


def deliverable(query: str) -> str | None:
    """The text the query's deliverable is searched with, or None when it names no output destination or format."""
    found = _SAVED_TO.search(query) or _EXPORTED_AS.search(query)
    if found is None or _NOT_OUTPUT.search(found.group(0)):
        return None
    return f"write save file {found.group(0)}"
