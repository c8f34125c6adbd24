"""A request's language by its function words (`search.language`), and what search does with one that is not
English: "nothing fits" does not judge it, and the result says that search reads English best."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lazytools import Catalog, FunctionGroup, Group, build_server
from lazytools.app import open_server
from lazytools.search import build_index, language_of
from lazytools.search.fit import DEFAULT_FIT, Evidence, FitConfig

from .conftest import client, embedded, make_settings, text_of

DATA = Path(__file__).parents[1] / "benchmarks" / "data"


@pytest.mark.parametrize(("text", "language"), [
    ("Montre-moi la liste des fichiers de ce dossier", "fr"),
    ("Kannst du mir bitte die Wettervorhersage für morgen zeigen?", "de"),
    ("Zähle die Wörter in diesem Text", "de"),
    ("¿Cuál es el tipo de cambio del euro hoy?", "es"),
    ("Mostrami gli ultimi messaggi del canale", "it"),
    ("Qual é a previsão do tempo para amanhã em Lisboa?", "pt"),
    ("Laat mij de laatste berichten van het kanaal zien", "nl"),
    ("show me the files in this folder", "en"),
    ("translate 'bonjour le monde' to English", "en"),  # a quoted foreign phrase in an English request
    ("what time is it in EST", "en"),
    ("", "en"),
    ("Покажи последние коммиты в этом репозитории", "other"),  # another script than Latin or Chinese
    ("Δείξε μου τον καιρό", "other"),
    ("最近的提交", "en"),  # Chinese is read through its English glosses (crosslang)
    ("résumé of the café menu", "en"),
    ("Crée un nouveau dossier appelé rapports", "fr"),  # one function word, and a letter of French's own
    ("東京の天気", "other"),  # Japanese: kana, though most of it is kanji
    ("count the words in 'le chat est sur la table'", "en"),  # what is quoted is not what the request says
    ("fetch https://de.wikipedia.org/wiki/Berlin", "en"),
    ("email jean.de.la@example.com", "en"),
    ("Pokaż mi wszystkie pliki, które są w folderze", "pl"),  # named in docs/reliability.md as not read until these
    ("Jaké soubory jsou ve složce dokumenty?", "cs"),
    ("Bu klasördeki tüm dosyaları listele lütfen", "tr"),
    ("Liệt kê tất cả các tệp trong thư mục này", "vi"),
    ("Đọc tệp ghi_chu.txt và cho tôi xem nội dung", "vi"),
])
def test_a_requests_language_is_the_one_whose_function_words_it_holds_most(text: str, language: str) -> None:
    assert language_of(text) == language


@pytest.mark.parametrize("text", [
    # Found by a README-only review: one word that is a function word elsewhere (and an English word or a name
    # here) decided, and such requests skipped "nothing fits" and were told to search again in English.
    "car rental prices", "De Niro movies", "La Jolla weather", "du disk usage", "Die Hard streaming",
    "MIT license text", "roll die", "Los Angeles pizza delivery", "El Paso weather", "sin 30 degrees",
    "plot y vs x", "son birthday gift", "su root", "del key", "check os version", "check ci status",
    "chi square test", "vi editor", "uno card rules", "Van Gogh paintings", "Dan Brown books", "get_la_time",
    # Words of the Polish, Czech, Turkish and Vietnamese lists that English requests hold too.
    "ten co workers", "Ben and Jerry stores", "var x in javascript", "pro tips for git", "ya think so",
    "Da Vinci code summary", "hay bales price", "em dash in markdown", "bu stock price", "ale brewing recipes",
    "nie sensor data", "jak and daxter", "Ile de France map", "Anh Do interview", "cho cho train", "daha bath",
    # Vietnamese names are Vietnamese function words without their marks: two of them were read as Vietnamese.
    "email Anh Trong", "Anh Trong's phone number", "call Bao Cho", "Bao Anh contact info", "steamed bao cho recipe",
])
def test_an_english_request_of_a_few_words_with_a_name_or_an_abbreviation_stays_english(text: str) -> None:
    assert language_of(text) == "en"


def _requests(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_no_english_request_of_the_labelled_sets_reads_as_another_language() -> None:
    files = [path for path in sorted(DATA.glob("*/*.jsonl")) if path.stem not in ("tools", "eurolang")]
    read = [(path.name, str(record["query"])) for path in files for record in _requests(path) if "query" in record]
    assert len(read) > 900
    assert [(name, text) for name, text in read if language_of(text) != "en"] == []


def test_the_european_requests_read_as_their_own_language() -> None:
    records = _requests(DATA / "multiserver" / "eurolang.jsonl")
    read = [(language_of(str(record["query"])), record["split"]) for record in records]
    assert all(found in ("en", split) for found, split in read)  # never another language than its own
    assert sum(found == split for found, split in read) >= 20  # of 24: one function word alone is not enough


def test_the_fit_rule_judges_english_requests_only_unless_told_otherwise() -> None:
    german = Evidence(0.01, language="de")
    assert DEFAULT_FIT.fits(german) and not DEFAULT_FIT.fits(Evidence(0.01))
    assert not FitConfig(english_only=False).fits(german)


GERMAN = "Erzeuge mir ein sicheres Passwort"
"""A request the bundled catalog answers (generate_password) whose words BM25 cannot read: the evidence refuses it
when it judges every language."""


async def test_a_request_in_another_language_is_searched_and_told_to_search_in_english() -> None:
    async with open_server(make_settings(learn=False)) as server, client(server) as c:
        evidence = (await embedded(server.index)).find(GERMAN).evidence
        assert evidence is not None and evidence.language == "de"
        assert not FitConfig(english_only=False).fits(evidence)  # judged as English, nothing would fit
        answer = text_of(await c.call_tool("search_tools", {"query": GERMAN}))
        assert answer.startswith("Enabled: ") and "No tool here fits" not in answer
        assert "This request reads as German, and search reads English best" in answer
        assert len((await c.list_tools()).tools) > 2
        english = text_of(await c.call_tool("search_tools", {"query": "generate a strong password"}))
        assert english.startswith("Enabled: generate_password") and "reads as" not in english


async def test_a_catalog_described_in_the_requests_language_gets_no_such_line() -> None:
    tools = FunctionGroup("kalender", summary="Termine.")

    @tools.tool
    def termin_anlegen(titel: str, datum: str) -> str:
        """Legt einen Termin mit einem Titel an dem Datum an, das du angibst."""
        return f"{titel} am {datum}"

    @tools.tool
    def termine_auflisten(datum: str) -> list[str]:
        """Zeigt die Termine eines Tages, die im Kalender stehen."""
        return [datum]

    catalog = Catalog()
    catalog.set_group(Group(tools.group, tools.summary), tools.entries)
    async with client(build_server(catalog, make_settings(learn=False))) as c:
        answer = text_of(await c.call_tool("search_tools", {"query": "Zeige mir die Termine für morgen"}))
    assert answer.startswith("Enabled: termine_auflisten") and "reads as" not in answer


def test_an_index_reads_a_requests_language_once_with_its_analysis() -> None:
    index = build_index([])
    assert index.analyze("Quelle heure est-il à Tokyo ?").language == "fr"
    assert index.analyze("what time is it in Tokyo").language == "en"


async def test_a_request_in_another_script_that_matches_nothing_is_told_to_search_in_english() -> None:
    async with open_server(make_settings(learn=False)) as server, client(server) as c:
        answer = text_of(await c.call_tool("search_tools", {"query": "Сгенерируй надёжный пароль"}))
        assert answer.startswith("Nothing here matched 'Сгенерируй надёжный пароль' (it is not in English, and "
                                 "search reads English); no tool was enabled for it. Search again in English.")
        assert "No tool here fits" not in answer and "files" in answer  # the groups are named
        german = text_of(await c.call_tool("search_tools", {"query": "Würfle zwei Würfel für mich"}))
        assert german.startswith("Nothing here matched 'Würfle zwei Würfel für mich' (it reads as German")


def test_the_search_command_says_what_search_tools_would_of_a_request_in_another_language(
        capsys: pytest.CaptureFixture[str]) -> None:
    from lazytools.cli import main

    assert main(["search", GERMAN]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("This request reads as German, and search reads English best") and lines[1][:5].strip()
    assert main(["search", "Сгенерируй надёжный пароль"]) == 0
    assert capsys.readouterr().out.startswith("Nothing here matched 'Сгенерируй надёжный пароль' (it is not in English")
