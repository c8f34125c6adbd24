"""Everyday phrasing: phrasal verbs and idioms read as the action they mean ("spin up" create, "tear down" delete,
"dig up" find, "drop a message" send), so their words stop matching tools of another sense ("pull up the logs"
is no pull request, "drop a message" no `drop-database`).

A phrase's verb is read through its stem ("kicked off", "spinning up") and its particle as written; the verb's
own word is then left out of the query's terms (the particle is usually a stop word anyway), and the words the
phrase means are added at the weight query.py gives them. Only general English lives here;
a verb whose plain sense is common in tool requests ("ping" a host, "fire" an event) keeps its word and only adds
the phrase's sense.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from .analysis import STOP_WORDS, stem
from .tables import table

_TABLE = table("phrases")
"""data/phrases.json: each of the tables below."""

__all__ = [
    "ASKED_SENSES",
    "NUMBER_SENSES",
    "PHRASAL_VERBS",
    "QUESTIONS",
    "VERB_OBJECTS",
    "VERB_SENSES",
    "meant_words",
    "read_phrases",
]

PHRASAL_VERBS: Mapping[str, str] = _TABLE["phrasal_verbs"]
"""A verb and its particle -> the words of the action they mean."""

QUESTIONS: Mapping[str, str] = _TABLE["questions"]
"""A question's words -> what it asks for ("how far" a distance, "where" a place); the adjective leaves the query
("many" would match `insert-many`, "far" and "long" nothing useful). Read only where the request or one of its
clauses opens with them (after filler such as "hi, can you tell me"): inside a story ("someone asked how many
users signed up", "compare how long it takes to walk to each") they are not what the request asks for, and on the
dev set's long tasks reading them there cost two needs."""

VERB_OBJECTS: Mapping[str, tuple[str, str]] = {
    verb: (objects, meaning) for verb, (objects, meaning) in _TABLE["verb_objects"].items()
}
"""A verb whose sense depends on the word after it: (objects, meaning). "drop a message" is sent, "drop a table" is
not."""

VERB_SENSES: Mapping[str, str] = _TABLE["verb_senses"]
"""Informal verbs that mean one action wherever they stand; they keep their own word too ("ping" a person is a
message, "ping" a host is the tool named ping)."""

NUMBER_SENSES: Mapping[str, str] = _TABLE["number_senses"]
"""Words of arithmetic when a number follows ("add 17 and 25", "17 plus 25"); they keep their own word ("add" a
card, "add" two numbers with a tool named add)."""

ASKED_SENSES: Mapping[str, str] = _TABLE["asked_senses"]
"""What a verb of VERB_SENSES means in a question ("what do you remember about ...", "do you recall ..."): what is
remembered is read, not stored."""

_ASKING = frozenset("what which who whom when where why how do does did".split())
"""Words that open a question."""



def _stems(words: str) -> tuple[str, ...]:
    return tuple(stem(word) for word in words.split())


_PHRASAL = {(stem(verb), particle): _stems(meaning) for verb, particle, meaning in
            ((*phrase.split(), meaning) for phrase, meaning in PHRASAL_VERBS.items())}
_OBJECTS = {stem(verb): (frozenset(_stems(objects)), _stems(meaning))
            for verb, (objects, meaning) in VERB_OBJECTS.items()}
_SENSES = {stem(verb): _stems(meaning) for verb, meaning in VERB_SENSES.items()}
_ASKED = {stem(verb): _stems(meaning) for verb, meaning in ASKED_SENSES.items()}
_NUMBERS = {stem(word): _stems(meaning) for word, meaning in NUMBER_SENSES.items()}
_QUESTIONS = {tuple(words.split()): _stems(meaning) for words, meaning in QUESTIONS.items()}
_TRIGGERS = frozenset(verb for verb, _ in _PHRASAL) | _OBJECTS.keys() | _SENSES.keys() | _ASKED.keys() | _NUMBERS.keys()
"""The stems a phrase of the tables below `_QUESTIONS` can begin with."""
_LOOKAHEAD = 3
"""An object is looked for among the next few words ("drop a quick message")."""


def _question(words: Sequence[str], position: int) -> tuple[str, ...]:
    """The question that opens at `position`: "where", "how" and the next word, "what" and up to two more."""
    if words[position] == "where":
        return ("where",)
    for size in (3, 2):
        asked = tuple(words[position : position + size])
        if asked in _QUESTIONS:
            return asked
    return tuple(words[position : position + 2])


def read_phrases(words: Sequence[str], *, questions: bool = True,
                 off: Collection[str] = ()) -> tuple[list[str], frozenset[str]]:
    """The stems the phrases of `words` (a request as `split_words` gives it) mean, and the verbs' stems they replace
    (to leave out of its terms); an opening question is read only with `questions`. `off`: the tables not read
    (phrasal_verbs, verb_objects, verb_senses, number_senses, asked_senses, questions; see `config.RULES`)."""
    questions = questions and "questions" not in off
    phrasal = _PHRASAL if "phrasal_verbs" not in off else {}
    objects_of = _OBJECTS if "verb_objects" not in off else {}
    senses = _SENSES if "verb_senses" not in off else {}
    numbers = _NUMBERS if "number_senses" not in off else {}
    asked_of = _ASKED if "asked_senses" not in off else {}
    meant: list[str] = []
    replaced: set[str] = set()
    opening = True  # no word that says anything yet: a question word here asks the question
    asking = bool(words) and words[0] in _ASKING
    for position, (word, verb) in enumerate(zip(words, map(stem, words))):
        if questions and opening and word in ("how", "where", "what"):
            asked = _question(words, position)
            if asked in _QUESTIONS:
                meant.extend(_QUESTIONS[asked])
                replaced.update(stem(other) for other in asked[1:])
            if word != "what":
                continue
        in_question = asking and opening  # the first word that says something, in a question
        opening = opening and word in STOP_WORDS
        if verb not in _TRIGGERS:  # most words of a request begin no phrase: the checks below would all fail
            continue
        following = words[position + 1] if position + 1 < len(words) else ""
        if (verb, following) in phrasal:
            meaning = phrasal[verb, following]
            meant.extend(meaning)
            if verb not in meaning:
                replaced.add(verb)
            continue
        if verb in objects_of:
            objects, meaning = objects_of[verb]
            ahead = [stem(other) for other in words[position + 1 : position + 1 + _LOOKAHEAD]
                     if other not in STOP_WORDS]
            if any(other in objects for other in ahead):
                meant.extend(meaning)
                replaced.add(verb)
        if verb in numbers and following.isdigit():
            meant.extend(numbers[verb])
        if in_question and verb in asked_of:
            meant.extend(asked_of[verb])
        elif verb in senses:
            meant.extend(senses[verb])
    return meant, frozenset(replaced)


_PLAIN = {stem(word): word for meanings in (PHRASAL_VERBS.values(), QUESTIONS.values(), VERB_SENSES.values(),
                                            ASKED_SENSES.values(), NUMBER_SENSES.values(),
                                            (meaning for _, meaning in VERB_OBJECTS.values()))
          for meaning in meanings for word in meaning.split()}
"""A meaning's stem -> the word it was written as (an encoder reads words, not stems)."""


def meant_words(words: Sequence[str], *, questions: bool = True) -> list[str]:
    """The words the phrases of `words` mean, as written in the tables above ("remember" -> memory, knowledge...);
    what an opening question asks for only with `questions`."""
    meant = read_phrases(words, questions=questions)[0]
    return list(dict.fromkeys(_PLAIN[stemmed] for stemmed in meant if stemmed in _PLAIN))
