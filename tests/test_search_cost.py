"""What keeps a served search cheap changes no answer: the per-word caches stay bounded and give what the uncached
code gives, the server choice's own `np.unique` gives numpy's, and the usage prior's merge and kept companions
answer as a prior built from the same records one by one."""

from __future__ import annotations

import hashlib
import math
import random
import threading
import time

import pytest

from lazytools import textwords
from lazytools.learning import keys as usage
from lazytools.learning.keys import hashed_terms
from lazytools.learning.prior import UsagePrior
from lazytools.learning.records import CallRecord, SearchRecord
from lazytools.search import analysis
from lazytools.search.analysis import split_words, tokenize
from lazytools.search.prior import LEARN_WEIGHT, reorder

_WORDS = ("deploy", "Deployments", "getUserPRs", "snake_case_name", "kube-ctl", "天气预报", "ｃｏｎｖｅｒｔ", "URLs",
          "the", "v2", "HTTPServer", "calendar", "notes", "x" * 100)


def _uncached_words(text: str) -> list[str]:
    """`split_words` as it reads a text with no cache at all."""
    import unicodedata
    words: list[str] = []
    for chunk in textwords._WORDS.findall(unicodedata.normalize("NFKC", text)):
        if textwords._CJK_RUN.match(chunk):
            words.extend([chunk] if len(chunk) == 1 else [chunk[i: i + 2] for i in range(len(chunk) - 1)])
        else:
            words.extend(textwords._singular(part).lower() for part in textwords._IDENTIFIER_PARTS.findall(chunk))
    return words


def test_the_per_word_cache_stays_bounded_and_splits_as_the_uncached_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textwords, "MAX_CACHED_CHUNKS", 8)
    monkeypatch.setattr(textwords, "_chunks", {})
    rng = random.Random(3)
    for number in range(300):
        text = " ".join(rng.sample(_WORDS, 4)) + f" word{number} {number}"
        assert split_words(text) == _uncached_words(text)
        assert tokenize(text) == analysis.terms_of(_uncached_words(text))
        assert len(textwords._chunks) <= 8
    assert all(len(chunk) <= textwords.MAX_CACHED_CHUNK_CHARS for chunk in textwords._chunks)


def test_a_long_word_is_split_but_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(textwords, "_chunks", {})
    long = "GetIssue" * 50
    assert split_words(long) == ["get", "issue"] * 50
    assert textwords._chunks == {}


def test_tokenize_hands_out_a_list_the_caller_may_change() -> None:
    first = tokenize("restart the payments deployment")
    first.append("changed")
    assert tokenize("restart the payments deployment") == ["restart", "payment", "deploy"]


def test_the_term_hash_cache_stays_bounded_and_hashes_as_blake2b(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(usage, "MAX_CACHED_HASHES", 5)
    monkeypatch.setattr(usage, "_hashes", {})
    hashed_terms.cache_clear()
    for key in (b"k" * 32, b"j" * 32):
        for number in range(40):
            query = f"create invoice number{number} {'y' * 80}"
            expected = tuple(hashlib.blake2b(term.encode(), digest_size=8, key=key).hexdigest()
                             for term in dict.fromkeys(tokenize(query)))
            assert hashed_terms(query, key) == expected
            assert len(usage._hashes) <= 5
    assert all(len(term) <= usage.MAX_CACHED_TERM_CHARS for _, term in usage._hashes)


_TOOLS = [f"srv{n % 4}__tool{n}" for n in range(12)]


def _records(count: int, seed: int, at: float) -> list[SearchRecord | CallRecord]:
    """Searches, each followed by a call of a tool and of the tool usually called next, over several sessions; all
    at `at` (a prior whose origin is `at` counts each as exactly 1.0, so sums in any order are equal)."""
    rng = random.Random(seed)
    records: list[SearchRecord | CallRecord] = []
    for number in range(count):
        session = f"s{seed}-{rng.randrange(6)}"  # a history and live records are of different sessions
        query = " ".join(rng.sample(["create", "invoice", "deploy", "restart", "read", "file", "issue"], 3))
        terms = hashed_terms(query)
        tool = rng.choice(_TOOLS)
        records.append(SearchRecord(f"{seed}-{number}", at, session, terms, (tool,), ()))
        records.append(CallRecord(at, session, tool, True, f"{seed}-{number}", terms))
        records.append(CallRecord(at, session, rng.choice(_TOOLS[:3]), rng.random() > 0.1, after=tool))
    return records


def _answers(prior: UsagePrior, at: float) -> tuple[object, ...]:
    queries = ["create invoice", "deploy restart", "read file issue", "nothing known here"]
    return (tuple(sorted(prior.boosts(prior.terms(query), at=at).items()) for query in queries),
            sorted(prior.companions(_TOOLS, at=at)), [sorted(prior.companions([tool], at=at)) for tool in _TOOLS],
            prior.ranked_calls(at=at), prior.search_count)


def _distinct(prior: UsagePrior) -> dict[tuple[str, str, str], int]:
    return {pattern: len(seen) for pattern, seen in prior.sources.by_pattern.items()}


@pytest.mark.parametrize(("mine", "theirs"), [(5, 400), (400, 5), (0, 300), (200, 200)])
def test_a_merged_prior_answers_as_one_that_counted_every_record(mine: int, theirs: int) -> None:
    start = time.time() - 3_600
    origin = start
    history, live = _records(theirs, 1, start), _records(mine, 2, start)
    alone = UsagePrior(origin=origin)
    for record in [*history, *live]:
        alone.add(record)
    merged, loaded = UsagePrior(origin=origin), UsagePrior(origin=origin)
    for record in live:
        merged.add(record)
    merged.companions(_TOOLS)  # kept answers from before the merge must not survive it
    for record in history:
        loaded.add(record)
    merged.merge(loaded)
    at = time.time()
    assert _answers(merged, at) == _answers(alone, at)
    assert merged.searches_with == alone.searches_with and merged.called_after == alone.called_after
    assert merged.followed_by == alone.followed_by
    assert _distinct(merged) == _distinct(alone)


def test_merging_a_history_holds_the_lock_only_for_the_few_live_records() -> None:
    """The history's tables become the prior's: what is added under the lock is the live side, not the history."""
    start = time.time() - 3_600
    prior, history = UsagePrior(), UsagePrior()
    history.origin = prior.origin
    for record in _records(3, 1, start):
        prior.add(record)
    for record in _records(300, 2, start):
        history.add(record)
    tables = history.called_after, history.sources.by_pattern, history.counted._by_source
    prior.merge(history)
    assert prior.called_after is tables[0] and prior.sources.by_pattern is tables[1]
    assert prior.counted._by_source is tables[2]
    assert len(prior.counted) == sum(len(keys) for keys in tables[2].values())


def test_kept_companions_follow_new_calls() -> None:
    start = time.time() - 60
    prior = UsagePrior()
    for number in range(3):
        prior.add(CallRecord(start + number, f"s{number}", "a", True))
        prior.add(CallRecord(start + number, f"s{number}", "b", True, after="a"))
        prior.add(CallRecord(start + number, f"s{number}", "b", True, after="a"))
    assert prior.companions(["a"]) == [("b", "a")]
    for number in range(3, 30):
        prior.add(CallRecord(start + number, f"s{number}", "c", True, after="a"))
    fresh = UsagePrior(origin=prior.origin)
    for number in range(3):
        fresh.add(CallRecord(start + number, f"s{number}", "a", True))
        fresh.add(CallRecord(start + number, f"s{number}", "b", True, after="a"))
    for number in range(3, 30):
        fresh.add(CallRecord(start + number, f"s{number}", "c", True, after="a"))
    assert prior.companions(["a"]) == fresh.companions(["a"]) == [("c", "a")]


def test_readers_never_see_a_half_merged_prior() -> None:
    """Searches reading the prior while a history is merged see it before or after, never an error."""
    start = time.time() - 3_600
    prior = UsagePrior()
    for record in _records(20, 3, start):
        prior.add(record)
    stop = threading.Event()
    failures: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                prior.boosts(prior.terms("create invoice deploy"))
                prior.companions(_TOOLS)
            except BaseException as exc:  # noqa: BLE001 - the test reports whatever a reader met
                failures.append(exc)
                return

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for seed in range(10, 20):
            history = UsagePrior(origin=prior.origin)
            for record in _records(200, seed, start):
                history.add(record)
            prior.merge(history)
            for record in _records(5, seed + 100, start):
                prior.add(record)
    finally:
        stop.set()
        reader.join()
    assert failures == []
    assert prior.search_count > 0


def _reorder_every_hit(hits: list[tuple[str, float]], boosts: dict[str, float], floor: float) -> list[int]:
    """`reorder` computed for every hit, boosted or not."""
    if not boosts:
        return list(range(len(hits)))
    best = max(score for _, score in hits)
    line = floor * best
    adjusted: list[tuple[float, int]] = []
    for position, (name, score) in enumerate(hits):
        lifted = score * (1.0 + LEARN_WEIGHT * boosts.get(name, 0.0)) if score > 0 else score
        if best > 0 and score < line:
            lifted = min(lifted, math.nextafter(line, -math.inf))
        adjusted.append((-lifted, position))
    return [position for _, position in sorted(adjusted)]


def test_reorder_computing_only_boosted_tools_orders_as_computing_every_one() -> None:
    rng = random.Random(9)
    for _ in range(2_000):
        size = rng.randrange(1, 25)
        # Ties, zeros and scores on both sides of the floor are the cases where a shortcut could differ.
        scores = sorted((rng.choice([0.0, 1.0, 2.0, rng.random(), rng.random() * 3]) for _ in range(size)),
                        reverse=rng.random() < 0.8)
        hits = [(f"t{n}", score) for n, score in enumerate(scores)]
        boosts = {f"t{n}": rng.choice([0.0, 1.0, rng.random()]) for n in rng.sample(range(size), rng.randrange(size + 1))}
        floor = rng.choice([0.0, 0.3, 0.5, 1.0])
        assert reorder(hits, boosts, floor=floor) == _reorder_every_hit(hits, boosts, floor)
