"""Ranking behaviours of the search index: names first, typos, groups, long requests, stop words."""

from __future__ import annotations

import random
import string
from collections.abc import Callable

import pytest

from lazytools import Catalog, Group, ToolEntry
from lazytools.search import LiveIndex, SearchIndex, split_words, tokenize
from lazytools.search.config import RankingConfig
from lazytools.search.query import clauses
from lazytools.search.vocabulary import (
    MAX_COMPOUND,
    MAX_PART,
    MAX_TYPO_LENGTH,
    Vocabulary,
    edit_distance,
    split_compound,
)

from .conftest import searched
from .fixtures.catalogs import _never, memory_and_files, realistic, tool

NUMBER_WEIGHT = RankingConfig().number_weight


def scores(index: SearchIndex, query: str) -> dict[str, float]:
    """Every matching tool's score as a search serves it (no tool is named and no embedder is in: BM25's)."""
    return {hit.entry.name: hit.score for hit in index.search(query, limit=len(index))}


def names(index: SearchIndex, query: str, limit: int = 5, **options: object) -> list[str]:
    return [hit.entry.name for hit in index.search(query, limit=limit, **options)]  # type: ignore[arg-type]


INDEX = SearchIndex(realistic())


def test_exact_name_comes_first_even_against_better_worded_tools() -> None:
    # "list_issues" alone would rank github's tool (more words match); the exact name wins.
    assert names(INDEX, "jira__list_issues")[0] == "jira__list_issues"
    assert names(INDEX, "JIRA__LIST_ISSUES")[0] == "jira__list_issues"


def test_name_written_as_words_counts_as_exact() -> None:
    assert names(INDEX, "github create issue")[0] == "github__create_issue"
    index = SearchIndex([tool("get_alerts", "Severe weather alerts."), tool("get_forecast", "Weather forecast.")])
    assert names(index, "get forecast")[0] == "get_forecast"


def test_name_mentioned_as_identifier_inside_a_request_comes_first() -> None:
    query = "please call slack__add_reaction on the last message in the thread"
    assert names(INDEX, query)[0] == "slack__add_reaction"


def test_plain_word_that_is_also_a_name_is_not_forced_first() -> None:
    index = SearchIndex([tool("search", "Search the web."), tool("get_forecast", "Get the weather forecast.")])
    assert names(index, "search the weather forecast")[0] == "get_forecast"
    assert names(index, "search")[0] == "search"  # but the whole query being the name is exact


def test_prefix_of_a_name_finds_it() -> None:
    assert names(INDEX, "github__create_iss")[0] == "github__create_issue"
    assert names(INDEX, "filesystem__li")[0] == "filesystem__list_directory"


def test_prefix_shared_by_too_many_names_is_not_a_name_match() -> None:
    many = SearchIndex([tool(f"get_item_{i}", "Fetch a record.") for i in range(60)] + [tool("ping", "Pong.")])
    assert many._names.matches("get_it") == {}
    assert many._names.matches("get_item_7") == {7: 3}
    assert many._names.matches("get_item_5") == {5: 3, 50: 1, 51: 1, 52: 1, 53: 1, 54: 1, 55: 1, 56: 1, 57: 1, 58: 1,
                                                  59: 1}


def test_typo_is_corrected_against_the_catalog_vocabulary() -> None:
    assert names(INDEX, "wether forecast")[0] == "weather__get_forecast"
    assert names(INDEX, "screnshot")[0] == "browser__screenshot"


def test_a_very_long_term_gets_no_near_miss_entries() -> None:
    """An upstream's description of 100,000 letters without a space is one term: its near misses (each a copy less
    one letter) would hold 10^10 characters (9 GB were seen). Terms past MAX_TYPO_LENGTH are neither corrected nor
    corrected to (5,000 letters here: enough to tell, small enough that the code before passed through)."""
    giant = "".join(random.Random(1).choices(string.ascii_lowercase, k=5_000))
    index = SearchIndex([tool("huge", giant), tool("forecast", "Get the weather forecast.")])
    table = index.vocabulary._delete_index()
    assert max(map(len, table)) <= MAX_TYPO_LENGTH + 1 and sum(map(len, table)) < 10_000
    assert index.vocabulary.corrections(giant[:-1] + "x") == []
    assert names(index, "wether forecast")[0] == "forecast"  # a real typo is still corrected
    assert names(index, giant)[0] == "huge"  # and the term itself still matches


def test_long_sentences_do_not_get_spelling_guesses() -> None:
    # A short query's word that is no word ("tablle") is corrected; in a long sentence an unknown word is usually a
    # real word the catalog lacks ("tablet" is one edit from "table"), not a typo.
    assert "tabl" in INDEX.query_terms("a short tablle")
    assert "tabl" not in INDEX.query_terms("a tablle to read comics on long flights over the ocean")
    long_terms = INDEX.query_terms("I would like a tablet to read comics on long flights over the ocean")
    assert "tabl" not in long_terms


def test_word_cut_short_is_completed() -> None:
    assert names(INDEX, "screensh")[0] == "browser__screenshot"


def test_phrasal_verbs_and_idioms_mean_their_action_not_their_words() -> None:
    # Tools whose names hold a phrase's literal words ("kick", "drop", "pull", "list ... machines") come first, so
    # that ties go to them: on the words alone "spin up a machine" lists machines and "kick off" kicks a member.
    index = SearchIndex([
        tool("describe_namespace", "Describe a namespace: its labels, quotas and status."),
        tool("drop_collection", "Drop a collection from the database."),
        tool("drop_index", "Drop an index of a collection."),
        tool("get_pipeline", "Get a pipeline and its recent runs."),
        tool("kick_member", "Kick a member out of a chat channel."),
        tool("pull_image", "Pull a container image onto a node for a pod."),
        tool("list_machines", "List the virtual machines of a project."),
        tool("post_message", "Send text to a chat channel."),
        tool("delete_namespace", "Delete a namespace and everything in it."),
        tool("create_machine", "Create a virtual machine in a project."),
        tool("pod_logs", "Get the logs of a pod."),
        tool("start_pipeline", "Start a pipeline run."),
    ])
    assert names(index, "spin up a machine")[0] == "create_machine"
    assert names(index, "kick off the nightly pipeline")[0] == "start_pipeline"
    assert names(index, "drop a message in #general")[0] == "post_message"
    assert names(index, "drop the orders collection")[0] == "drop_collection"  # the plain sense stays
    assert names(index, "tear down the staging namespace")[0] == "delete_namespace"
    assert names(index, "pull up the logs of the api pod")[0] == "pod_logs"
    assert "kick" not in index.query_terms("kicked off the pipeline")  # the verb read through its stem, then left out


def test_reacting_to_something_adds_a_reaction_and_react_alone_stays_a_word() -> None:
    # Snowball keeps "react" and "reaction" apart; "react to" is the phrase that means a reaction.
    index = SearchIndex([
        tool("add_issue_comment", "Add a comment to an existing issue."),
        tool("update_issue", "Update an existing issue: its title, body, labels or state."),
        tool("add_issue_reaction", "Add an emoji reaction to an issue."),
        tool("react_docs", "Look up the React documentation: hooks, components and APIs."),
    ])
    assert names(index, "react to the issue with a thumbs up")[0] == "add_issue_reaction"
    assert names(index, "the React docs on hooks")[0] == "react_docs"


def test_a_question_word_asks_for_what_it_names_where_the_request_opens_with_it() -> None:
    index = SearchIndex([
        tool("insert_many", "Insert many documents into a collection."),
        tool("count", "Count the documents in a collection."),
        tool("route_map", "Draw a route between two places on a map."),
        tool("distance_matrix", "Travel distance and time between origins and destinations."),
        tool("geocode", "Find the location and address of a place by its name."),
        tool("search_posts", "Search the posts of a forum."),
    ])
    assert names(index, "how many documents are in the orders collection")[0] == "count"
    assert names(index, "how far is it from Lyon to Geneva")[0] == "distance_matrix"
    assert names(index, "hi, where is the Eiffel Tower")[0] == "geocode"
    # Inside a story the words are not the request's question: nothing is read.
    assert index.query_terms("someone asked how many users came") == index.query_terms("someone asked users came many")


def test_numbers_of_a_request_do_not_match_the_numbers_of_an_example() -> None:
    # "15% of 80" shares "15" with a cron example: a short number is an amount and counts little.
    index = SearchIndex([
        tool("describe_cron", "Explain a cron expression, e.g. '*/15 9-17 * * 1-5' -> every 15 minutes."),
        tool("percentage_change", "Calculate the percentage increase or decrease from an old value to a new one."),
    ])
    assert index.query_terms("what's 15% of 80")["15"] == NUMBER_WEIGHT
    assert index.configured(RankingConfig(off={"short_numbers"})).query_terms("what's 15% of 80")["15"] == 1.0


def test_everyday_wordings_mean_their_action() -> None:
    # "remember that ..." stores, "forget ..." deletes, "summarise a file" reads it, "what changed" is a diff.
    index = SearchIndex([
        tool("summarize_article", "Summarize a wiki article."),
        tool("commit", "Record changes to the repository."),
        tool("resize_window", "Resize the browser window."),
        tool("add_observations", "Add observations to entities in the memory graph."),
        tool("delete_entities", "Delete entities from the memory graph."),
        tool("read_file", "Read the contents of a file."),
        tool("diff", "Show the diff of the working tree."),
        tool("status", "Show the working tree status."),
    ])
    assert names(index, "remember that Alice owns the billing service")[0] == "add_observations"
    assert names(index, "forget what you know about Carol")[0] == "delete_entities"
    assert names(index, "summarise a file")[0] == "read_file"
    assert set(names(index, "what changed in the repository")[:2]) == {"diff", "status"}
    assert "chang" not in index.query_terms("what changed in the repository")


def test_full_width_and_ligature_letters_read_as_plain_ones() -> None:
    assert split_words("ｃｏｎｖｅｒｔ＿ｔｅｍｐｅｒａｔｕｒｅ") == ["convert", "temperature"]
    assert split_words("read a ﬁle") == ["read", "a", "file"]
    assert names(INDEX, "ｗｅａｔｈｅｒ ｆｏｒｅｃａｓｔ")[0] == names(INDEX, "weather forecast")[0]


def test_plain_ascii_splits_as_the_general_expression_splits_it() -> None:
    from lazytools.textwords import _WORDS, _chunk_words

    rng = random.Random(3)
    alphabet = "aZ09_-./:;,!?\t\n \x00\x7f~`'\"()[]{}#@$%^&*+=|\\<>" + "PRsURLsIDs"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(60))) for _ in range(300)]
    for text in [*texts, "getURLsFromPage, then list open PRs\n1. read_file", ""]:
        expected = [word for chunk in _WORDS.findall(text) for word in _chunk_words(chunk)]
        assert split_words(text) == expected, text


def test_tied_tools_come_in_catalog_order_whatever_the_limit() -> None:
    # Many tools with one text (a hostile or generated catalog): a larger limit only adds results after the first.
    index = SearchIndex([tool(f"t{i:05d}", "Convert a temperature between units.") for i in range(3000)])
    five = names(index, "convert temperature")
    assert five == ["t00000", "t00001", "t00002", "t00003", "t00004"]
    assert names(index, "convert temperature", limit=20)[:5] == five


def test_the_threshold_of_the_best_candidates_is_numpys_selection() -> None:
    # The ranking selects its pool's threshold among a sample first: the value must be the one numpy's selection of
    # all the values gives, ties (copies score alike), a few distinct values and values that do not compare included.
    import numpy as np

    from lazytools.search.index import _smallest

    rng = np.random.default_rng(7)
    for size in (1, 5, 40, 300, 2000, 9000):
        for values in (rng.random(size), rng.integers(0, 6, size).astype(np.float64),
                       np.repeat(rng.random(size // 10 + 1), 10)[:size], -np.sort(rng.random(size))):
            for count in {1, 2, 10, 20, size}:
                if count <= size:
                    assert _smallest(values, count) == np.partition(values, count - 1)[count - 1]
    with_nan = rng.random(5000)
    with_nan[::3] = np.nan
    assert _smallest(with_nan, 20) == np.partition(with_nan, 19)[19]


def test_an_embedder_given_to_the_index_cannot_bring_nan_into_scores() -> None:
    import numpy as np

    class Broken:
        name = fingerprint = "broken-for-one-text"
        dimensions = 2

        def embed(self, texts: object) -> np.ndarray:
            rows = np.array([[1.0, 0.0] if "weather" in str(text) else [np.nan, np.nan] for text in texts])  # type: ignore[attr-defined]
            return rows.astype(np.float32)

    index = SearchIndex([tool("get_forecast", "Weather forecast."), tool("read_file", "Read a file.")],
                        embedder=Broken())  # type: ignore[arg-type]
    assert names(index, "read a file")[0] == "read_file"
    assert all(np.isfinite(hit.score) for hit in index.search("weather", limit=2))


def test_plural_acronyms_stay_whole_words() -> None:
    # A camelCase cut would make "PRs" into "p" + "rs", and "URLs" into "ur" + "ls"; the stemmer would leave "prs".
    assert split_words("list open PRs") == ["list", "open", "pr"]
    assert split_words("getURLsFromPage") == ["get", "url", "from", "page"]
    assert split_words("IDs of the KPIs") == ["id", "of", "the", "kpi"]
    assert split_words("HTTPServer getHTTPSUrl") == ["http", "server", "get", "https", "url"]
    assert tokenize("PRs") == tokenize("pr")


def test_query_stop_words_are_ignored() -> None:
    assert tokenize("Hi! Can you please help me, I want to get the weather") == tokenize("get weather")
    assert names(INDEX, "can you please help me read a file")[0] == "filesystem__read_file"


def test_group_named_in_query_boosts_its_tools() -> None:
    assert names(INDEX, "list issues")[0] == "jira__list_issues"  # the shorter description wins on words alone
    assert names(INDEX, "list issues on github")[0] == "github__list_issues"
    assert names(INDEX, "jira: list issues")[0] == "jira__list_issues"


def test_group_named_in_query_multiplies_its_tools_scores() -> None:
    query = "list issues on github"
    boosted = scores(INDEX, query)["github__list_issues"]
    unboosted = scores(INDEX.configured(RankingConfig(group_boost=0.0)), query)["github__list_issues"]
    assert boosted == pytest.approx(1.5 * unboosted)
    assert scores(INDEX.configured(RankingConfig(off={"group_boost"})), query)["github__list_issues"] == \
        pytest.approx(unboosted)  # switched off, the stage does what a weight of 0 does


def test_group_filter_keeps_only_that_group() -> None:
    found = names(INDEX, "list", limit=10, groups=["slack"])
    assert found and all(name.startswith("slack__") for name in found)
    assert names(INDEX, "weather forecast", groups=["github"]) == []


def test_long_request_with_two_needs_gets_both_tools() -> None:
    query = ("I need the weather forecast for Lisbon for the weekend, and then post a message to the "
             "travel channel on Slack with the summary")
    assert clauses(query) and len(clauses(query)) >= 2
    top = names(INDEX, query, limit=3)
    assert "weather__get_forecast" in top and "slack__post_message" in top


def test_name_spelled_out_in_a_sentence_lifts_that_tool() -> None:
    def build(config: RankingConfig = RankingConfig()) -> SearchIndex:
        return SearchIndex([
            tool("post_message", "Deliver a text to one person."),
            tool("channel_send", "Post a message to a channel of the team workspace, with the team's formatting."),
            tool("list_users", "List the people of the workspace."),
            tool("upload_file", "Upload a file to a channel."),
        ], config=config)

    query = "post a message to the team channel"
    boosted, plain = scores(build(), query), scores(build(RankingConfig(name_words_boost=0.0)), query)
    # Every word of post_message's name is in the request: it scores name_words_boost more; the others do not move.
    assert boosted["post_message"] == pytest.approx(plain["post_message"] * (1 + RankingConfig().name_words_boost))
    assert boosted["channel_send"] == pytest.approx(plain["channel_send"])
    assert scores(build(RankingConfig(off={"name_words"})), query) == plain


def test_name_words_need_all_words_and_at_least_two() -> None:
    from lazytools.search.names import NameWords

    words = NameWords([frozenset({"creat", "issu"}), frozenset({"search"}), frozenset(), frozenset({"list", "issu"})])
    assert words.covered({"creat", "issu", "bug"}).tolist() == [True, False, False, False]
    assert words.covered({"search", "list"}).tolist() == [False, False, False, False]  # one-word names: plain words
    assert words.covered(set()).tolist() == [False] * 4
    rng = random.Random(9)
    vocabulary = [f"w{n}" for n in range(30)]
    names = [frozenset(rng.sample(vocabulary, rng.randint(0, 4))) for _ in range(200)]
    many = NameWords(names)
    for _ in range(100):
        terms = set(rng.sample(vocabulary, rng.randint(0, 30)))
        assert many.covered(terms).tolist() == [len(name) >= 2 and name <= terms for name in names]


def test_glued_name_words_count_when_the_query_spells_their_parts() -> None:
    from lazytools.search.documents import field_words, known_words, name_terms

    entries = [tool("seoanalysis", "SEO analysis of a page."), tool("timezone_list", "Every timezone name.")]
    words = [field_words(entry) for entry in entries]
    known = known_words(words)
    assert name_terms(words[0], known) == {"seo", "analysi"}  # cut: the descriptions use both parts
    assert name_terms(words[1], known) == {"timezon", "list"}  # kept whole: the descriptions use the word


def test_steps_of_a_task_description_are_separate_needs() -> None:
    task = "Plan the release:\n1. list the open issues\n2) create a branch for the fix\n- post a message on slack"
    assert clauses(task) == ["Plan the release", "list the open issues", "create a branch for the fix",
                             "post a message on slack"]
    assert clauses("read the config file after that delete the old log file") == [
        "read the config file", "delete the old log file"]
    # All three needs are found in the first places (no place is reserved per need: the scores and the clauses'
    # coverage decide); "list the open issues" names no tracker, so Jira's list answers it as well as GitHub's.
    found = set(names(INDEX, task, limit=6))
    assert {"github__create_branch", "slack__post_message"} <= found
    assert found & {"github__list_issues", "jira__list_issues"}


def test_glued_names_are_cut_into_catalog_words() -> None:
    index = SearchIndex([
        tool("seoanalysis", "Analysis of the rankings of a website."),
        tool("keyword_planner", "Plan SEO keywords and ad campaigns."),
        tool("site_ping", "Check that a website is up."),
    ])
    assert names(index, "analysis")[0] == "seoanalysis"
    assert split_compound("seoanalysis", {"seo", "analysis"}) == ["seo", "analysis"]
    assert split_compound("seoanalysis", {"seo"}) == []


def test_nothing_matching_returns_nothing() -> None:
    assert INDEX.search("zzzqqq") == []
    assert INDEX.search("") == []
    assert INDEX.search("weather", limit=0) == []
    assert SearchIndex([]).search("weather") == []


def test_equal_scores_keep_catalog_order() -> None:
    index = SearchIndex([tool(f"twin_{i}", "Identical description.") for i in range(4)])
    assert names(index, "identical description", limit=4) == ["twin_0", "twin_1", "twin_2", "twin_3"]


def test_parameters_and_their_descriptions_are_searchable() -> None:
    assert names(INDEX, "IANA timezone")[0] == "time__get_current_time"


async def test_live_index_rebuilds_after_the_catalog_changes() -> None:
    catalog = Catalog()
    catalog.set_group(Group("misc"), [tool("alpha", "First tool.")])
    live = LiveIndex(catalog)
    first = await live.ready()
    assert (await live.ready()) is first and names(first, "zebra") == []
    catalog.set_group(Group("misc"), [tool("alpha", "First tool."), tool("zebra", "Second tool.")])
    again = await live.ready()
    assert again is not first and names(again, "zebra") == ["zebra"]


async def test_live_index_ready_rebuilds_off_the_loop_once_for_concurrent_searches() -> None:
    import anyio

    catalog = Catalog()
    catalog.set_group(Group("misc"), [tool("alpha", "First tool.")])
    live = LiveIndex(catalog)
    first = await live.ready()
    assert await live.ready() is first
    catalog.set_group(Group("misc"), [tool("alpha", "First tool."), tool("zebra", "Second tool.")])
    built: list[object] = []

    async def search() -> None:
        built.append(await live.ready())

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(search)
    assert len({id(index) for index in built}) == 1 and built[0] is not first
    assert names(built[0], "zebra") == ["zebra"]  # type: ignore[arg-type]


def test_vocabulary_lookups() -> None:
    vocabulary = Vocabulary(["weather", "forecast", "whether", "screenshot"])
    assert vocabulary.corrections("wether") == ["weather", "whether"]
    assert vocabulary.corrections("weather") == []  # known words are not corrected
    assert vocabulary.corrections("cat") == []  # too short to guess
    assert vocabulary.completions("scr") == ["screenshot"]
    assert vocabulary.completions("sc") == []
    assert edit_distance("forecast", "forcast") == 1
    assert edit_distance("form", "from") == 1  # neighbours swapped
    assert edit_distance("weather", "cloudy", limit=2) == 3


def test_within_one_edit_says_what_the_edit_distance_table_says() -> None:
    from itertools import product

    from lazytools.search.vocabulary import within_one_edit

    words = ["".join(letters) for size in range(6) for letters in product("abc", repeat=size)]
    rng = random.Random(4)
    pairs = [(a, b) for a in words for b in words if abs(len(a) - len(b)) <= 2 and rng.random() < 0.2]
    pairs += [("weather", "wether"), ("form", "from"), ("forecast", "forcast"), ("abcd", "badc"), ("ab", "ba"),
              ("kubernetes", "kubernets"), ("kubernetes", "kubrenetes"), ("", "a"), ("", "")]
    assert len(pairs) > 10_000
    assert [within_one_edit(a, b) for a, b in pairs] == [edit_distance(a, b, 1) <= 1 for a, b in pairs]


def test_cjk_text_is_cut_into_character_bigrams() -> None:
    assert split_words("北京天气 IP定位 getWeather 猫") == ["北京", "京天", "天气", "ip", "定位", "get", "weather", "猫"]
    assert tokenize("查询天气预报") == ["查询", "询天", "天气", "气预", "预报"]


def test_a_chinese_request_finds_the_tool_described_in_chinese() -> None:
    tools = [
        tool("maps_weather", "根据城市名称或者标准adcode查询指定城市的天气", "amap", city="城市名称"),
        tool("maps_geo", "将详细的结构化地址转换为经纬度坐标", "amap", address="待解析的结构化地址信息"),
        tool("get_recipe", "根据菜谱名称查询指定菜谱的完整详情，包括食材、步骤等", "cook"),
        tool("get_weather", "Current weather for a city.", "weather"),
    ]
    index = SearchIndex(tools)
    assert names(index, "北京明天天气怎么样")[0] == "maps_weather"
    assert names(index, "把这个地址转换成经纬度")[0] == "maps_geo"
    assert names(index, "红烧肉的菜谱和步骤")[0] == "get_recipe"
    assert names(index, "weather in Beijing")[0] == "get_weather"


def test_chinese_punctuation_and_sequencing_words_separate_needs() -> None:
    assert clauses("帮我查一下上海明天的天气，再推荐一个菜谱") == ["帮我查一下上海明天的天气", "再推荐一个菜谱"]
    assert clauses("先查询天气然后规划骑行路线") == ["先查询天气", "规划骑行路线"]


def _needing(kind: str) -> Callable[..., ToolEntry]:
    """A maker of tools named `name` in `group` that require the given inputs, all of JSON type `kind`."""

    def needs(name: str, group: str, *required: str) -> ToolEntry:
        schema = {"type": "object", "properties": {p: {"type": kind} for p in required}, "required": [*required]}
        return ToolEntry(name=name, group=group, description=name.replace("_", " "), input_schema=schema,
                         call=realistic()[0].call)

    return needs


def test_tools_that_produce_a_required_id_are_suggested_beside_their_consumer() -> None:
    needs = _needing("string")
    tools = [
        needs("post_message", "slack", "channel_id", "text"),
        needs("list_channels", "slack"),
        needs("get_channel_history", "slack", "channel_id"),  # requires the id itself: no producer
        needs("archive_channel_notes", "slack"),  # holds "channel" but no finding verb
        needs("list_channels_elsewhere", "teams"),  # another server's channels are not this one's ids
        needs("find", "mongo", "connectionId", "collection"),
        needs("connect", "mongo", "connectionString"),
        needs("list_connections", "mongo"),
    ]
    index = SearchIndex(tools)
    by_name = {entry.name: entry for entry in tools}
    assert [e.name for e in index.producers([by_name["post_message"]])] == ["list_channels"]
    assert [e.name for e in index.producers([by_name["find"]])] == ["connect", "list_connections"]
    assert index.producers([by_name["find"]], limit=1) == [by_name["connect"]]
    assert index.producers([by_name["post_message"], by_name["list_channels"]]) == []  # already found
    assert index.producers([by_name["list_channels"], by_name["connect"]]) == []  # they require no id


def test_a_geocoder_is_suggested_beside_tools_that_require_coordinates() -> None:
    needs = _needing("number")
    tools = [
        needs("weather_forecast", "open-meteo", "latitude", "longitude"),
        needs("air_quality", "open-meteo", "latitude", "longitude"),
        needs("geocoding", "open-meteo", "name"),
        needs("elevation", "open-meteo", "lat"),  # latitude alone is not a place
        needs("DirectionsTool", "mapbox", "coordinates"),
        needs("ForwardGeocodeTool", "mapbox", "q"),
        needs("ReverseGeocodeTool", "mapbox", "longitude", "latitude"),  # needs coordinates itself: never a producer
        needs("geocode", "other-maps", "address"),  # another server's geocoder: not this one's input
    ]
    index = SearchIndex(tools)
    by_name = {entry.name: entry for entry in tools}
    assert [e.name for e in index.producers([by_name["weather_forecast"]])] == ["geocoding"]
    assert [e.name for e in index.producers([by_name["weather_forecast"], by_name["air_quality"]])] == ["geocoding"]
    assert [e.name for e in index.producers([by_name["DirectionsTool"]])] == ["ForwardGeocodeTool"]
    assert [e.name for e in index.producers([by_name["ReverseGeocodeTool"]])] == ["ForwardGeocodeTool"]
    assert index.producers([by_name["elevation"]]) == []
    assert index.producers([by_name["ForwardGeocodeTool"]]) == []


def _described(name: str, group: str, **parameters: str) -> ToolEntry:
    """A tool whose required parameters are described (name -> description)."""
    return ToolEntry(name=name, group=group, description=f"{name} tool.", call=_never,
                     input_schema={"type": "object", "required": list(parameters),
                                   "properties": {p: {"type": "string", "description": d}
                                                  for p, d in parameters.items()}})


def test_a_parameter_described_as_coordinates_needs_the_geocoder_in_english_or_chinese() -> None:
    tools = [
        _described("maps_direction_driving", "amap", origin="出发点经度，纬度，坐标格式为：经度，纬度"),
        _described("maps_geo", "amap", address="待解析的结构化地址信息"),
        _described("maps_text_search", "amap", keywords="搜索关键词"),
        _described("route", "osm", start="Start point as coordinates (lon,lat)"),
        _described("geocode", "osm", q="A place name"),
        _described("maps_directions", "google", origin="Starting point address or coordinates"),  # an address too
        _described("maps_geocode", "google", address="The address to geocode"),
    ]
    index = SearchIndex(tools)
    by_name = {entry.name: entry for entry in tools}
    assert [e.name for e in index.producers([by_name["maps_direction_driving"]])] == ["maps_geo"]
    assert [e.name for e in index.producers([by_name["route"]])] == ["geocode"]
    assert index.producers([by_name["maps_directions"]]) == []
    assert index.producers([by_name["maps_geo"]]) == []


LONG_TASK = (
    "Our repository on GitHub has piled up issues since the last release and the pull requests keep waiting. "
    "List the open issues in the GitHub repository, get the pull request that fixes the login issue, "
    "create an issue in the repository for the release notes, and tell the team on Slack"
)


def test_a_long_task_keeps_the_tool_of_its_shortest_step() -> None:
    # Six clauses, most of them about GitHub: the whole text's words drown "tell the team on Slack".
    default = RankingConfig()
    assert len(clauses(LONG_TASK)) >= default.long_task_clauses
    top = names(INDEX, LONG_TASK)
    needed = {"github__list_issues", "github__get_pull_request", "github__create_issue", "slack__post_message"}
    assert needed <= set(top)
    # The long-task clause weight lifts it (its clause is the one no GitHub tool answers); with the short requests'
    # weight it ranks lower (out of the five before round 4 removed synonyms, which had lifted GitHub's tools too).
    short_weight = RankingConfig(long_task_clause_weight=default.clause_weight)
    shorter = names(INDEX.configured(short_weight), LONG_TASK)
    assert "slack__post_message" not in shorter or shorter.index("slack__post_message") > top.index("slack__post_message")


def test_requests_of_few_clauses_keep_the_short_clause_weight() -> None:
    query = "get the weather forecast for Lisbon, convert 9am Lisbon time to Chicago time, and post it on Slack"
    assert 2 <= len(clauses(query)) < RankingConfig().long_task_clauses
    before = scores(INDEX, query)
    assert scores(INDEX.configured(RankingConfig(long_task_clause_weight=5.0)), query) == pytest.approx(before)


def test_a_tool_its_server_lists_twice_takes_one_place() -> None:
    text = "Get a summary of a Wikipedia article."
    index = SearchIndex([
        tool("get_summary", text, "wikipedia", title="Article title"),
        tool("wikipedia_get_summary", text, "wikipedia", title="Article title"),
        tool("get_article", "Get the full text of a Wikipedia article.", "wikipedia", title="Article title"),
        tool("translate", "Translate a text into another language.", "lara", text="Text", target="Language"),
    ])
    found = names(index, "summary of the wikipedia article, then translate it", limit=3)
    assert set(found) == {"get_summary", "translate", "get_article"}  # not both names of the summary
    assert names(index, "wikipedia_get_summary", limit=1) == ["wikipedia_get_summary"]  # still found by its name


def test_copies_are_the_same_text_and_parameters_under_a_related_name() -> None:
    from lazytools.search.copies import first_copies

    text = "Get a summary of a Wikipedia article."
    entries = [
        tool("get_summary", text, "w", title="t"),
        tool("wikipedia_get_summary", "  get a summary of a wikipedia ARTICLE. ", "w", title="t"),  # a copy
        tool("get_summary_v2", text, "w", title="t", lang="l"),  # other parameters
        tool("fetch_digest", text, "w", title="t"),  # the same vague text under an unrelated name
        tool("a", "", "w"),
        tool("a_b", "", "w"),  # no description: nobody's copy
    ]
    assert first_copies(entries) == [0, 0, 2, 3, 4, 5]


def test_copies_are_only_found_within_one_group() -> None:
    # The same server configured twice (two roots), and a server copying another's text under a name holding its
    # tool's name: each keeps its own tool, and search returns both.
    from dataclasses import replace

    from lazytools.search.copies import first_copies

    def upstream(name: str, description: str, group: str, upstream_name: str) -> ToolEntry:
        return replace(tool(name, description, group, path="a path"), upstream_name=upstream_name)

    entries = [
        upstream("fs_home__read_file", "Read a file.", "fs_home", "read_file"),
        upstream("fs_work__read_file", "Read a file.", "fs_work", "read_file"),
        upstream("good__get_weather", "Current weather for a city.", "good", "get_weather"),
        upstream("evil__weather", "Current weather for a city.", "evil", "weather"),
        upstream("fs_home__write_file", "Write a file.", "fs_home", "write_file"),
        upstream("fs_work__write_file", "Write a file.", "fs_work", "write_file"),
    ]
    assert first_copies(entries) == [0, 1, 2, 3, 4, 5]
    index = SearchIndex(entries)
    assert set(names(index, "read a file", limit=2)) == {"fs_home__read_file", "fs_work__read_file"}
    assert set(names(index, "current weather for a city", limit=2)) == {"good__get_weather", "evil__weather"}


def test_numbered_tools_are_not_copies_of_each_other() -> None:
    from lazytools.search.copies import first_copies

    entries = [tool(f"report_{i}", "Monthly report.", "r", month="m") for i in (1, 10, 11, 2, 20)]
    assert first_copies(entries) == [0, 1, 2, 3, 4]
    assert len(names(SearchIndex(entries), "monthly report", limit=5)) == 5


def test_copies_of_a_shared_text_are_compared_with_a_bounded_number_of_tools() -> None:
    from lazytools.search.copies import MAX_COMPARED, first_copies

    entries = [tool(f"tool_{i:05d}", "Does a thing.", "w") for i in range(3 * MAX_COMPARED)]
    entries.append(tool(f"x_tool_{2 * MAX_COMPARED:05d}", "Does a thing.", "w"))  # its original is past the bound
    entries.append(tool("x_tool_00001", "Does a thing.", "w"))  # its original is within it
    found = first_copies(entries)
    assert found[-2] == len(entries) - 2 and found[-1] == 1


class _CountingSet(set[str]):
    """A vocabulary that counts the pieces looked up in it."""

    looked_up = 0

    def __contains__(self, piece: object) -> bool:
        type(self).looked_up += 1
        return super().__contains__(piece)


def test_glued_words_cost_linear_work_and_hostile_lengths_are_left_whole() -> None:
    known = _CountingSet({"get", "weather", "forecast"})
    glued = "getweatherforecast" * 3  # 54 characters: still cut
    assert split_compound(glued, known) == ["get", "weather", "forecast"] * 3
    assert _CountingSet.looked_up <= len(glued) * MAX_PART
    _CountingSet.looked_up = 0
    assert split_compound("getweather" * 100_000, known) == []  # a 1 MB upstream name: not cut at all
    assert _CountingSet.looked_up == 0
    assert split_compound("x" * MAX_COMPOUND, known) == []
    assert _CountingSet.looked_up <= MAX_COMPOUND * MAX_PART


def test_remembered_splits_are_fresh_lists_each_time() -> None:
    # split_words and clauses remember recent texts; a caller changing what it got must not change the next answer.
    words = split_words("listFiles in the docs_folder")
    words.append("extra")
    assert split_words("listFiles in the docs_folder") == ["list", "files", "in", "the", "docs", "folder"]
    request = "book a flight to Paris for Friday, then find a hotel near the station and add both to my calendar"
    parts = clauses(request)
    assert len(parts) >= 2
    parts.clear()
    assert clauses(request) == clauses(request) and len(clauses(request)) >= 2


async def test_a_real_word_the_catalog_lacks_is_never_fixed_into_one_it_has() -> None:
    # "notes" is one edit from the memory server's "nodes", but an English word: never a typo of it.
    for request in ("read notes/todo.txt", "files in the notes directory"):
        found = await searched(memory_and_files(), request)
        assert found[0] in ("fs__read_text_file", "fs__list_directory"), found
        assert "memory__search_nodes" not in found, (request, found)
    # A word that is no word is still corrected.
    assert (await searched(memory_and_files(), "knowlege graph nodse"))[:2] == ["memory__open_nodes",
                                                                             "memory__search_nodes"]
