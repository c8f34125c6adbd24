"""Which language a request is written in, as far as its function words tell: English, or one of the languages written
in Latin letters of `data/languages.json`.

Every rule and encoder of search reads English, and the evidence of "nothing fits" (`fit`) was calibrated on English
requests: a request in French or German shares few words with an English catalog and sits far from its tools for an
English encoder, so it looked like a request no tool answers ("Lies die Datei notizen.txt" was refused while
`read_file` was its answer). A request is read as written in another language when it holds more of that language's
function words (articles, pronouns, prepositions, auxiliaries) than of English's, and at least MIN_WORDS of them, or
one with a letter of that language outside ASCII: function words are what every sentence of a language has,
whatever it asks for, while a single one is often an English word or a name too ("Die Hard", "Los Angeles"). Words
that are English function words are not counted for another language, and what a request quotes, and its addresses
and emails, are not read, so an English request quoting French stays English. A request mostly in another script
than Latin or Chinese is OTHER_SCRIPT.
"""

from __future__ import annotations

import re
from functools import cache

from .tables import table, words

__all__ = ["ENGLISH", "MIN_WORDS", "OTHER_SCRIPT", "language_name", "language_of"]

ENGLISH = "en"
OTHER_SCRIPT = "other"
"""A request written mostly in letters of another script than Latin or Chinese (Cyrillic, Greek, Arabic, Hebrew,
Devanagari, Thai, Hangul, kana...): no English rule nor word reads it. Chinese is read through its English glosses
(`crosslang`), and its requests were measured with the rest, so it is not counted here."""

_WORD = re.compile(r"[^\W\d_]+")
_NOT_PROSE = re.compile(r"""\b(?:https?://|www\.)\S+|\S+@\S+|(?:^|(?<=\s))(['"‘“«])[^'"’”»]+['"’”»](?=\s|$|[.,;:!?])""")
"""What a request quotes or names rather than says: addresses, emails, quoted text ("count the words in 'le chat
est sur la table'" is an English request)."""
_KANA = re.compile(r"[\u3040-\u30ff]")
MIN_WORDS = 2
"""Function words of one other language a request must hold (and more than of English's): one is not enough, as
many are English words or names too ("Die Hard", "Los Angeles", "sin 30 degrees", "Van Gogh"), unless the request
also holds a letter of that language outside ASCII ("Crée un nouveau dossier": é)."""
_MARKED = frozenset({"vi"})
"""Languages a request is read as only when it holds one of their letters outside ASCII. Vietnamese is written with
its marks, and its function words without any (anh, bao, cho, khi, sao, trong) are Vietnamese names as much: "email
Anh Trong" was read as Vietnamese and told to search again in English."""
_LATIN = re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


@cache
def _letters() -> tuple[frozenset[str], ...]:
    """Each language's letters outside ASCII (in the order of `_function_words`' languages)."""
    letters = table("languages").get("letters", {})
    return tuple(frozenset(letters.get(language, "")) for language in table("languages")["function_words"])


@cache
def _function_words() -> tuple[frozenset[str], dict[str, tuple[int, ...]], tuple[str, ...]]:
    """English's function words; each other language's, as word -> the languages (their places) it is one of;
    those languages in the table's order."""
    english = words("stop_words", "function_words")
    lines = table("languages")["function_words"]
    languages = tuple(lines)
    by_word: dict[str, list[int]] = {}
    for place, language in enumerate(languages):
        for word in {word for line in lines[language] for word in line.split()} - english:
            by_word.setdefault(word, []).append(place)
    return english, {word: tuple(places) for word, places in by_word.items()}, languages


def language_of(text: str) -> str:
    """`text`'s language by its function words: ENGLISH, the code of another language of the table ("fr"), or
    OTHER_SCRIPT for a text whose letters are mostly of another script."""
    english, by_word, languages = _function_words()
    if text.isascii() and not any(map(by_word.__contains__, _WORD.findall(text.lower()))):
        return ENGLISH  # most requests: no function word of another language at all (read in C)
    prose = _NOT_PROSE.sub(" ", text)
    if not prose.isascii():
        letters, latin = sum(map(len, _WORD.findall(prose))), len(_LATIN.findall(prose))
        # Japanese kana too: the Chinese dictionary reads a Japanese request's kanji, not its grammar.
        if len(_KANA.findall(prose)) > latin or letters > 2 * (latin + len(_HAN.findall(prose))):
            return OTHER_SCRIPT
    tokens = _WORD.findall(prose.lower())
    if not tokens:
        return ENGLISH
    # Each word once: a word said twice ("cho cho train") is no more of a language than said once.
    distinct = set(tokens)
    found = [by_word[token] for token in distinct if token in by_word]
    if not found:
        return ENGLISH
    counts = [0] * len(languages)
    for places in found:
        for place in places:
            counts[place] += 1
    most = max(counts)
    # More than English's, and the first such language of the table on a tie between two others.
    if most <= sum(map(english.__contains__, distinct)):
        return ENGLISH
    best = counts.index(most)
    marked = not prose.isascii() and bool(_letters()[best].intersection(prose.lower()))
    if (most < MIN_WORDS or languages[best] in _MARKED) and not marked:
        return ENGLISH
    return languages[best]


def language_name(code: str) -> str | None:
    """The English name of a language `language_of` gives ("German" for "de"), or None for OTHER_SCRIPT (or a code
    the table does not name)."""
    if code == ENGLISH:
        return "English"
    name = table("languages").get("names", {}).get(code)
    return str(name) if name is not None else None
