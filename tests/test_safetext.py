"""Untrusted text escaped before it is echoed: controls, and the invisible characters that change what is read."""

from __future__ import annotations

import json

import pytest

from lazytools import Catalog, build_server
from lazytools.safetext import clip, encodable_json, escape, redact_secrets, redact_url

from .conftest import client, make_settings, text_of

INVISIBLE = {
    "\u202e": "\\u202e",  # right-to-left override: "exe.txt" shows as "txt.exe"
    "\u202a": "\\u202a",
    "\u2066": "\\u2066",  # isolates
    "\u2069": "\\u2069",
    "\u200b": "\\u200b",  # zero-width space
    "\u200d": "\\u200d",
    "\u200e": "\\u200e",  # direction marks
    "\u200f": "\\u200f",
    "\u061c": "\\u061c",
    "\u2060": "\\u2060",  # word joiner
    "\ufeff": "\\ufeff",  # byte-order mark / zero-width no-break space
    "\U000e0041": "\\U000e0041",  # a tag character: hidden ASCII "A"
}


@pytest.mark.parametrize("char", INVISIBLE)
def test_bidi_and_zero_width_characters_are_escaped(char: str) -> None:
    assert clip(f"a{char}b") == f"a{INVISIBLE[char]}b"
    assert escape(f"a{char}b") == f"a{INVISIBLE[char]}b"


def test_visible_text_is_kept_as_it_is() -> None:
    text = "héllo Ünïcode 日本語 עברית 😀 e\u0301"
    assert clip(text) == text and escape(text) == text
    assert escape("a\nb\x1b[2J") == "a\\nb\\x1b[2J"


async def test_a_query_matching_nothing_is_echoed_without_bidi_or_zero_width_characters(catalog: Catalog) -> None:
    query = "qqzzx\u202e\u2066\u200bzzqqv\ufeff"
    async with client(build_server(catalog, make_settings(mode="proxy"))) as c:
        answer = text_of(await c.call_tool("search_tools", {"query": query}))
    assert answer.splitlines()[0].startswith("No tool here fits 'qqzzx\\u202e\\u2066\\u200bzzqqv\\ufeff';")


@pytest.mark.parametrize(("url", "shown"), [
    ("http://alice:pa55@127.0.0.1:80/mcp?api_key=K&v=2#tok", "http://***@127.0.0.1:80/mcp?api_key=***&v=***#***"),
    ("https://example.com/mcp", "https://example.com/mcp"),
    ("https://u@example.com?bare-token", "https://***@example.com?***"),
    ("https://example.com/a@b/?x=1", "https://example.com/a@b/?x=***"),  # an @ in the path is no userinfo
    # A "/" or "?" in the password, unencoded: parsers take it for the end of the authority (#20 round 2, F3).
    ("http://alice:K1SEC/RET@127.0.0.1:9/mcp", "http://***@127.0.0.1:9/mcp"),
    ("http://alice:K1SEC/R/ET@127.0.0.1:9/mcp?k=v", "http://***@127.0.0.1:9/mcp?k=***"),
    ("http://alice:K1?SEC@127.0.0.1:9/mcp", "http://alice:***?***"),
    ("http://127.0.0.1:K2SEC/mcp", "http://127.0.0.1:***/mcp"),
    ("http://[::1]:8080/a@b", "http://[::1]:8080/a@b"),
])
def test_urls_lose_their_userinfo_and_query_values(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert redact_secrets(f"POST {url} \"200 OK\"") == f"POST {shown} \"200 OK\""


@pytest.mark.parametrize(("said", "shown"), [
    ("session opened by oauth:http://127.0.0.1:9000#alice", "session opened by oauth:http://127.0.0.1:9000#alice"),
    ("oauth:https://idp.example.com/realms/x#svc-42 refused", "oauth:https://idp.example.com/realms/x#svc-42 refused"),
    ("oauth:https://u:pw@idp.example.com?k=v#bob", "oauth:https://***@idp.example.com?k=***#bob"),
    ("see http://host/cb#access_token=SECRET", "see http://host/cb#***"),  # any other URL's fragment still goes
])
def test_a_principal_key_keeps_its_issuer_and_subject_readable(said: str, shown: str) -> None:
    """Before: `oauth:<issuer>#<subject>` (a principal's key in logs) lost its subject to the fragment redaction: the
    operator could not tell whose request a line was about. The subject is no secret; an issuer has no fragment."""
    assert redact_secrets(said) == shown


def test_a_refused_header_value_is_not_echoed() -> None:
    said = "LocalProtocolError: Illegal header value b'tok\\nen SECRET'; retrying"
    assert redact_secrets(said) == "LocalProtocolError: Illegal header value ***; retrying"


@pytest.mark.parametrize(("said", "shown"), [
    ("InvalidURL: Invalid port: 'K1SEC'; retrying in 1 s", "InvalidURL: Invalid port: ***; retrying in 1 s"),
    ("LocalProtocolError: Illegal header name b'K25SECRET:'", "LocalProtocolError: Illegal header name ***"),
])
def test_a_refused_port_or_header_name_is_not_echoed(said: str, shown: str) -> None:
    assert redact_secrets(said) == shown


def test_encodable_json_replaces_lone_surrogates_in_strings_and_keys_and_keeps_the_rest() -> None:
    clean = {"a": [1, 2.5, None, True, "text"], "b": {"c": "\U0001f600"}}
    assert encodable_json(clean) == (clean, 0) and encodable_json(clean)[0] is clean
    value = {"k\udc00": ["x\ud800y", {"z": "\ud83d\ude00 and \udfff"}], "n": 3}
    fixed, replaced = encodable_json(value)
    assert fixed == {"k\ufffd": ["x\ufffdy", {"z": "\U0001f600 and \ufffd"}], "n": 3} and replaced == 3
    assert json.dumps(fixed, ensure_ascii=False).encode()
