"""Choosing the server: which server a request, or one need of it, is about, and its best tool for it.

A server is read as one document of three fields: its name, what is said of it (`Group.about`: the config's
`description`, else what the server says of itself when its config lets that be read) and the words most of its
tools share. A need's server is the one with the best sum of two shares: its best tool's score (a share of the
need's best tool) and SERVER_TEXT_WEIGHT times its document's score (a share of the best server's). When that
server is not the one of the need's best tool, the server's best tool for the need scores SERVER_LIFT more: "export
the meeting minutes as a PDF" is about the server whose description says "file editing", not about the database
whose `export` tool scored first.

Only the best tool of the chosen server moves, and only in the need that chose it. Lifting all of a server's
tools, or lifting by a whole request's best server, pulled a task of several needs towards one server and its
siblings (docs/search-log.md, "Round 3, server choice").

(With the semantic extra a server was also the mean of its tools' vectors, lifting the tools of the servers closest
to a request of one need; round 4 removed it: neutral on three sets, a loss on RestBench. docs/search-log.md.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from .analysis import STOP_WORDS, split_words, stem
from .bm25 import BM25FPostings
from .config import DEFAULT, RankingConfig
from .fusion import ScoreArray
from .tables import words

__all__ = [
    "ABOUT_CHARS",
    "MAX_RIVALS",
    "SHARED_SHARE",
    "ServerIndex",
]

ABOUT_CHARS = 2000
"""What a server says of itself is read up to this many characters: instructions can run to pages."""

SHARED_SHARE = 0.5
"""A word is one a server's tools share when at least this share of them (and two) use it."""

MAX_RIVALS = 64
"""Only the servers of a need's this many best tools are weighed: a need that half a large catalog answers about as
well costs no more than one that few tools answer."""

_FIELD_WEIGHTS: Mapping[str, float] = {"name": 3.0, "about": 1.0, "shared": 1.0}

_GENERIC = words("server_words", "generic")
"""Words almost every server's self-description has ("An MCP server providing tools for ..."): they say nothing
about which server a request is for."""


def _terms(text: str) -> list[str]:
    return [stem(word) for word in split_words(text) if word not in STOP_WORDS and word not in _GENERIC
            and len(word) > 1]


class ServerIndex:
    """The servers of a catalog as BM25F documents, and each tool's server."""

    def __init__(self, servers_of_tools: Sequence[str], about: Mapping[str, str],
                 tool_terms: Sequence[Sequence[str]]) -> None:
        """`servers_of_tools`: each tool's server, in catalog order; `about`: server → what it says of itself;
        `tool_terms`: each tool's terms (its name's and description's), in catalog order."""
        self.names = sorted(set(servers_of_tools))
        number = {name: i for i, name in enumerate(self.names)}
        self._server_of = np.array([number[name] for name in servers_of_tools], dtype=np.intp)
        tools_of: dict[str, list[Sequence[str]]] = {}
        for server, terms in zip(servers_of_tools, tool_terms, strict=True):
            tools_of.setdefault(server, []).append(terms)
        documents = []
        for name in self.names:
            tools = tools_of[name]
            counts = Counter(term for terms in tools for term in set(terms))
            needed = max(2.0, SHARED_SHARE * len(tools))
            shared = [term for term, count in counts.items() if count >= needed and term not in _GENERIC]
            documents.append({"name": _terms(name), "about": _terms(about.get(name, "")[:ABOUT_CHARS]),
                              "shared": shared})
        self._bm25 = BM25FPostings(documents, _FIELD_WEIGHTS, k1=1.2)

    def __len__(self) -> int:
        return len(self.names)


    def scores(self, terms: Mapping[str, float]) -> ScoreArray:
        """Each server's document score for weighted query terms, in `names` order."""
        return self._bm25.scores(terms)

    def lift(self, scores: ScoreArray, terms: Callable[[], Mapping[str, float]],
             config: RankingConfig = DEFAULT) -> ScoreArray:
        """`scores` (one need's, every tool's) with the best tool of the server this need is about lifted by
        `server_lift`, when that server is not the one of the best-scored tool; else `scores` itself. `terms` gives
        the need's weighted terms, asked for only when another server could win."""
        if len(self.names) < 2:
            return scores
        top = int(np.argmax(scores))
        if scores[top] <= 0:
            return scores
        # Another server wins only with a tool above 1 - server_text_weight of the best score (its document's share
        # is at most 1), so only the servers of such tools are weighed: most needs end here, and a need costs
        # what its few strong tools cost, whatever the catalog's size.
        strong = np.flatnonzero(scores > (1.0 - config.server_text_weight) * scores[top])
        if strong.size > MAX_RIVALS:
            strong = strong[np.argpartition(-scores[strong], MAX_RIVALS - 1)[:MAX_RIVALS]]
        strong = strong[np.argsort(-scores[strong], kind="stable")]
        servers, first = _firsts(self._server_of[strong])
        if servers.size < 2:
            return scores
        own = self.scores(terms())
        if own.max() <= 0:
            return scores
        best = strong[first]  # each of these servers' best tool
        chosen = int(np.argmax(scores[best] / scores[top] + config.server_text_weight * own[servers] / own.max()))
        pick = int(best[chosen])
        if self._server_of[pick] == self._server_of[top]:
            return scores
        lifted = scores.copy()
        lifted[pick] *= 1.0 + config.server_lift
        return lifted


def _firsts(values: npt.NDArray[np.intp]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """`np.unique(values, return_index=True)`: the distinct values, sorted, and where each first occurs; the same
    stable sort without its wrappers, which cost more than the sort on the few dozen values `lift` gives it."""
    order = values.argsort(kind="stable")
    ordered = values[order]
    starts = np.empty(ordered.size, dtype=bool)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    return ordered[starts], order[starts]
