"""Tests for lazytools_examples.text."""

import pytest
from lazytools_examples import text


def test_count_text_stats() -> None:
    stats = text.count_text_stats("Hello world. This is a test!\n\nSecond paragraph here.")
    assert stats["words"] == 9
    assert stats["sentences"] == 3
    assert stats["paragraphs"] == 2
    assert stats["lines"] == 3
    assert stats["characters"] == 52
    assert text.count_text_stats("")["words"] == 0


def test_word_frequency() -> None:
    result = text.word_frequency("The cat and the hat and the bat", top=2)
    assert result == [{"word": "the", "count": 3}, {"word": "and", "count": 2}]
    assert text.word_frequency("a bb ccc", min_length=3) == [{"word": "ccc", "count": 1}]


def test_slugify_text() -> None:
    assert text.slugify_text("Héllo, Wörld! 2024") == "hello-world-2024"
    assert text.slugify_text("Hello World", separator="_") == "hello_world"
    assert text.slugify_text("one two three", max_length=7) == "one-two"
    with pytest.raises(ValueError, match="separator"):
        text.slugify_text("x", separator="-----")


@pytest.mark.parametrize(
    ("source", "style", "expected"),
    [
        ("myVariableName", "snake", "my_variable_name"),
        ("HTTPServerError", "snake", "http_server_error"),
        ("hello world", "camel", "helloWorld"),
        ("hello_world", "pascal", "HelloWorld"),
        ("some_value here", "kebab", "some-value-here"),
        ("max-retries", "constant", "MAX_RETRIES"),
        ("the quick fox", "title", "The Quick Fox"),
        ("THE_QUICK_FOX", "sentence", "The quick fox"),
        ("MiXeD", "upper", "MIXED"),
    ],
)
def test_convert_case(source: str, style: str, expected: str) -> None:
    assert text.convert_case(source, style) == expected  # type: ignore[arg-type]


def test_reverse_text() -> None:
    assert text.reverse_text("abc") == "cba"
    assert text.reverse_text("one two  three", unit="words") == "three two one"
    assert text.reverse_text("a\nb\nc", unit="lines") == "c\nb\na"


def test_truncate_text() -> None:
    assert text.truncate_text("The quick brown fox jumps", 12) == "The quick…"
    assert text.truncate_text("The quick brown fox jumps", 12, whole_words=False) == "The quick b…"
    assert text.truncate_text("short", 10) == "short"
    with pytest.raises(ValueError, match="longer than the ellipsis"):
        text.truncate_text("abcdef", 3, ellipsis="...")


def test_wrap_text() -> None:
    paragraph = "word " * 40
    wrapped = text.wrap_text(paragraph + "\n\nsecond paragraph", width=30, indent="> ")
    lines = wrapped.splitlines()
    assert all(len(line) <= 30 for line in lines)
    assert "" in lines and lines[-1] == "> second paragraph"


def test_diff_texts() -> None:
    result = text.diff_texts("a\nb\nc", "a\nB\nc\nd")
    assert result["identical"] is False
    assert (result["added_lines"], result["removed_lines"]) == (2, 1)
    assert "-b" in result["diff"] and "+B" in result["diff"] and result["diff"].startswith("--- old")
    assert text.diff_texts("same", "same") == {"identical": True, "added_lines": 0, "removed_lines": 0, "diff": ""}


def test_diff_texts_bounds_the_lines_it_compares() -> None:
    # difflib's time grows with the product of the line counts: 400 KB of short lines took 82 s of CPU.
    fitting = "\n".join("x" for _ in range(text.DIFF_MAX_LINES))
    assert text.diff_texts(fitting, fitting)["identical"] is True
    with pytest.raises(ValueError, match=f"new_text has too many lines: {text.DIFF_MAX_LINES + 1} "):
        text.diff_texts("a", fitting + "\ny")


def test_find_and_replace() -> None:
    result = text.find_and_replace("Cat cat catalog", "cat", "dog", case_sensitive=False, whole_word=True)
    assert result == {"text": "dog dog catalog", "replacements": 2}
    assert text.find_and_replace("a.b.c", ".", "\\1", max_replacements=1) == {"text": "a\\1b.c", "replacements": 1}
    with pytest.raises(ValueError, match="find must not be empty"):
        text.find_and_replace("abc", "", "x")


def test_extract_emails() -> None:
    found = text.extract_emails("Mail a@b.com or A@B.com, and x.y+z@sub.example.org.")
    assert found == ["a@b.com", "x.y+z@sub.example.org"]
    assert len(text.extract_emails("a@b.com a@b.com", unique=False)) == 2


def test_extract_urls() -> None:
    found = text.extract_urls("See https://example.com/a?b=1, and (www.test.org). Again https://example.com/a?b=1")
    assert found == ["https://example.com/a?b=1", "www.test.org"]


def test_text_size_is_capped() -> None:
    with pytest.raises(ValueError, match="too long"):
        text.count_text_stats("x" * 1_000_001)
