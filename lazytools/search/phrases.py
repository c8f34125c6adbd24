"""Everyday phrasing: phrasal verbs and idioms read as the action they mean ("spin up" create, "tear down" delete,
"dig up" find, "drop a message" send), so their words stop matching tools of another sense ("pull up the logs"
is no pull request, "drop a message" no `drop-database`).

A phrase's verb is read through its stem ("kicked off", "spinning up") and its particle as written; the verb's
own word is then left out of the query's terms (the particle is usually a stop word anyway), and the words the
phrase means are added at the weight query.py gives them. Only general English lives here, as in `synonyms`;
a verb whose plain sense is common in tool requests ("ping" a host, "fire" an event) keeps its word and only adds
the phrase's sense.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .analysis import STOP_WORDS, stem

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

PHRASAL_VERBS: Mapping[str, str] = {
    # Making and starting.
    "spin up": "create start",
    "set up": "create configure",
    "fire up": "start run",
    "boot up": "start",
    "start up": "start",
    "kick off": "start run trigger",
    "turn on": "start enable",
    "switch on": "start enable",
    "sign up": "register create account",
    "log in": "login",
    "sign in": "login",
    # Stopping and removing.
    "shut down": "stop",
    "power down": "stop",
    "turn off": "stop disable",
    "switch off": "stop disable",
    "log out": "logout",
    "sign out": "logout",
    "tear down": "delete remove uninstall",
    "take down": "delete remove uninstall",
    "clean up": "cleanup delete",
    "wipe out": "delete",
    "roll back": "rollback revert",
    # Finding and reading ("look up", "find out", "read out" need nothing: their verb already says it).
    "pull up": "get show",
    "bring up": "get show",
    "dig up": "find search",
    "dig out": "find search",
    "hunt down": "find search",
    "track down": "find search",
    # Writing and sending.
    "write down": "write note add",
    "jot down": "write note add",
    "note down": "write note add",
    "fire off": "send",
    "send off": "send",
    "send out": "send",
    "shoot off": "send",
    "react to": "reaction emoji",
    "back up": "backup export copy",
    "check out": "checkout",
    "wrap up": "complete finish",
    "finish up": "complete finish",
    "bump up": "increase update",
    "scale up": "scale increase",
    "scale down": "scale decrease",
    # Letter case said as a phrase: "all caps" is upper case ("caps" alone is a limit: "rate caps").
    "all caps": "uppercase case convert upper",
}
"""A verb and its particle -> the words of the action they mean."""

QUESTIONS: Mapping[str, str] = {
    "how far": "distance",
    "how long": "duration time",
    "how many": "count number",
    "how much": "price cost amount",
    "how big": "size",
    "how large": "size",
    "how high": "elevation height altitude",
    "how tall": "height elevation",
    "how old": "age date",
    "where": "location place address",
    "how far along": "status progress",  # a job's progress ("how far along is my crawl"), not a distance
    "what changed": "diff status log",
    "what has changed": "diff status log",
    "what s changed": "diff status log",
    # What a named file or document holds is read ("show me what's inside config.yaml").
    "what s inside": "read content",
    "what is inside": "read content",
}
"""A question's words -> what it asks for ("how far" a distance, "where" a place); the adjective leaves the query
("many" would match `insert-many`, "far" and "long" nothing useful). Read only where the request or one of its
clauses opens with them (after filler such as "hi, can you tell me"): inside a story ("someone asked how many
users signed up", "compare how long it takes to walk to each") they are not what the request asks for, and on the
dev set's long tasks reading them there cost two needs."""

VERB_OBJECTS: Mapping[str, tuple[str, str]] = {
    "drop": ("message note line email comment", "send post"),
    "shoot": ("message note line email", "send"),
}
"""A verb whose sense depends on the word after it: (objects, meaning). "drop a message" is sent, "drop a table" is
not."""

VERB_SENSES: Mapping[str, str] = {
    "grab": "get fetch",
    "crunch": "calculate compute",
    "stash": "save store",
    "jot": "write note",
    "snap": "screenshot capture",
    "bump": "increase update",
    "ping": "message notify",
    "remember": "memory knowledge fact store add",
    "memorize": "memory knowledge fact store add",
    "memorise": "memory knowledge fact store add",
    "forget": "delete remove memory knowledge",
    "summarize": "read",
    "summarise": "read",
    # Letter case: "uppercase this", "make it lowercase" (and 大写 / 小写, whose glosses say these) ask for a
    # case conversion, where a tool's parameter named `uppercase` (a password's letters) only shares the word.
    # Not "capitalize": its stem is capitalization's and capital's ("market capitalization" is no case).
    "uppercase": "case convert upper",
    "lowercase": "case convert lower",
    # "15%" is read as "15 percent" (query.py): a percentage, a word tools write in full.
    "percent": "percentage calculate",
}
"""Informal verbs that mean one action wherever they stand; they keep their own word too ("ping" a person is a
message, "ping" a host is the tool named ping)."""

NUMBER_SENSES: Mapping[str, str] = {
    "add": "sum calculate",
    "plus": "sum calculate",
    "subtract": "calculate",
    "minus": "calculate",
    "multiply": "calculate product",
    "times": "calculate product",
    "divide": "calculate",
}
"""Words of arithmetic when a number follows ("add 17 and 25", "17 plus 25"); they keep their own word ("add" a
card, "add" two numbers with a tool named add)."""

ASKED_SENSES: Mapping[str, str] = {
    "remember": "memory knowledge read search",
    "recall": "memory knowledge read search",
}
"""What a verb of VERB_SENSES means in a question ("what do you remember about ...", "do you recall ..."): what is
remembered is read, not stored."""

_ASKING = frozenset("what which who whom when where why how do does did".split())
"""Words that open a question."""
_LEADS = frozenset(("show",))
"""A verb that leads into a question without saying anything itself: "show me what's inside". Not "tell": reading
the question after "can you tell me" moved a MetaTool request's second tool out of its top 5."""


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


def read_phrases(words: Sequence[str], *, questions: bool = True) -> tuple[list[str], frozenset[str]]:
    """The stems the phrases of `words` (a request as `split_words` gives it) mean, and the verbs' stems they replace
    (to leave out of its terms); an opening question is read only with `questions`."""
    meant: list[str] = []
    replaced: set[str] = set()
    opening = True  # no word that says anything yet: a question word here asks the question
    asking = bool(words) and words[0] in _ASKING
    for position, word in enumerate(words):
        if questions and opening and word in ("how", "where", "what"):
            asked = _question(words, position)
            if asked in _QUESTIONS:
                meant.extend(_QUESTIONS[asked])
                replaced.update(stem(other) for other in asked[1:])
                replaced.update(stem(lead) for lead in words[:position] if lead in _LEADS)
            if word != "what":
                continue
        in_question = asking and opening  # the first word that says something, in a question
        verb = stem(word)
        following = words[position + 1] if position + 1 < len(words) else ""
        opening = opening and (word in STOP_WORDS or (word in _LEADS and following == "me"))
        if (verb, following) in _PHRASAL:
            meaning = _PHRASAL[verb, following]
            meant.extend(meaning)
            if verb not in meaning:
                replaced.add(verb)
            continue
        if verb in _OBJECTS:
            objects, meaning = _OBJECTS[verb]
            ahead = [stem(other) for other in words[position + 1 : position + 1 + _LOOKAHEAD]
                     if other not in STOP_WORDS]
            if any(other in objects for other in ahead):
                meant.extend(meaning)
                replaced.add(verb)
        if verb in _NUMBERS and following.isdigit():
            meant.extend(_NUMBERS[verb])
        if in_question and verb in _ASKED:
            meant.extend(_ASKED[verb])
        elif verb in _SENSES:
            meant.extend(_SENSES[verb])
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
