"""Tests for lazytools_examples.encoding."""

import pytest
from lazytools_examples import encoding as e


def test_base64_encode() -> None:
    assert e.base64_encode("hello") == "aGVsbG8="
    assert e.base64_encode("\xff\xfe?", url_safe=True) == "w7_Dvj8="


def test_base64_decode() -> None:
    assert e.base64_decode("aGVsbG8")["text"] == "hello"
    assert e.base64_decode("w7_Dvj8=")["text"] == "\xff\xfe?"
    binary = e.base64_decode("/wA=")
    assert binary["is_utf8"] is False and binary["hex"] == "ff00"
    with pytest.raises(ValueError, match="not valid Base64"):
        e.base64_decode("abc$")


def test_url_encode() -> None:
    assert e.url_encode("a b&c/d") == "a%20b%26c%2Fd"
    assert e.url_encode("a b&c/d", plus_for_spaces=True, safe="/") == "a+b%26c/d"
    assert e.url_encode("é") == "%C3%A9"


def test_url_decode() -> None:
    assert e.url_decode("a+b%26c%2Fd") == "a b&c/d"
    assert e.url_decode("a+b", plus_as_space=False) == "a+b"


def test_parse_url() -> None:
    parts = e.parse_url("https://user@Example.com:8080/p/q?a=1&a=2&b=#top")
    assert parts["host"] == "example.com" and parts["port"] == 8080 and parts["username"] == "user"
    assert parts["query_params"] == {"a": ["1", "2"], "b": [""]}
    assert parts["path"] == "/p/q" and parts["fragment"] == "top"
    with pytest.raises(ValueError, match="must be absolute"):
        e.parse_url("/just/a/path")
    with pytest.raises(ValueError, match="invalid URL"):
        e.parse_url("http://host:99999/")


def test_hex_encode() -> None:
    assert e.hex_encode("hi") == "6869"
    assert e.hex_encode("hi!", separator=":") == "68:69:21"


def test_hex_decode() -> None:
    assert e.hex_decode("0x68 69")["text"] == "hi"
    assert e.hex_decode("ff")["is_utf8"] is False
    with pytest.raises(ValueError, match="not valid hex"):
        e.hex_decode("abc")


def test_html_escape() -> None:
    assert e.html_escape("<a href='x'>&</a>") == "&lt;a href=&#x27;x&#x27;&gt;&amp;&lt;/a&gt;"
    assert e.html_escape('"q"', quote=False) == '"q"'


def test_html_unescape() -> None:
    assert e.html_unescape("&eacute;&amp;&#39;&lt;") == "é&'<"


def test_unicode_char_info() -> None:
    info = e.unicode_char_info("é€")
    assert info[0]["code_point"] == "U+00E9" and info[0]["name"] == "LATIN SMALL LETTER E WITH ACUTE"
    assert info[1]["utf8_hex"] == "e2 82 ac" and info[1]["category"] == "Sc"
    with pytest.raises(ValueError, match="too long"):
        e.unicode_char_info("x" * 201)
