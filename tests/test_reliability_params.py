"""A request whose params have the wrong shape gets -32602 naming the parameter at fault, never echoing its value:
over an in-memory client, over HTTP (in a session and as a 2026-07-28 request) and over stdio."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from .conftest import client, text_of
from .test_http import lazy, open_raw_session, rpc, serving
from .test_reliability_wire import modern
from .test_stdio_faults import _exchange

SECRET = "VALUE-THAT-MUST-NOT-COME-BACK"

# (method, params, the parameter the answer must name)
BAD: dict[str, tuple[str, dict[str, Any], str]] = {
    "arguments a list": ("tools/call", {"name": "search_tools", "arguments": [SECRET]}, "'arguments'"),
    "arguments a string": ("tools/call", {"name": "search_tools", "arguments": SECRET}, "'arguments'"),
    "name a number": ("tools/call", {"name": 987654321, "arguments": {}}, "'name'"),
    "name missing": ("tools/call", {"arguments": {"q": SECRET}}, "'name' is required"),
    "progress token a list": ("tools/call", {"name": "search_tools", "arguments": {"query": "a"},
                                             "_meta": {"progressToken": [SECRET]}}, "'_meta.progressToken'"),
    "cursor a number": ("tools/list", {"cursor": 987654321}, "'cursor'"),
}


class Raw(types.Request[dict[str, Any], str]):
    """Any method with any params: the SDK's own request types refuse these shapes before sending."""


def check_error(error: dict[str, Any] | types.ErrorData, case: str) -> None:
    data = error if isinstance(error, dict) else error.model_dump()
    _, params, named = BAD[case]
    assert data["code"] == types.INVALID_PARAMS, (case, data)
    assert named in data["message"], (case, data)
    text = json.dumps(data)
    assert SECRET not in text and "987654321" not in text, (case, data)


@pytest.mark.parametrize("case", BAD)
async def test_wrong_shapes_get_invalid_params_naming_the_parameter_in_memory(case: str) -> None:
    method, params, _ = BAD[case]
    async with client(lazy()) as c:
        with pytest.raises(MCPError) as info:
            await c.session.send_request(Raw(method=method, params=params), types.CallToolResult)
        check_error(info.value.error, case)
        served = await c.call_tool("invoke_tool", {"tool_name": "word_count", "arguments": {"text": "a b"}})
        assert text_of(served) == "2"  # the same connection goes on


async def test_wrong_shapes_get_invalid_params_naming_the_parameter_over_http() -> None:
    async with serving(lazy()) as url, httpx2.AsyncClient(timeout=60) as http:
        session_id = await open_raw_session(http, url)
        for case, (method, params, _) in BAD.items():
            _, message = await rpc(http, url, method, params, session_id=session_id, request_id=40)
            check_error(message["error"], case)
            # A 2026-07-28 request: its Mcp-Name header cannot carry a number (the SDK refuses the mismatch, -32020),
            # and modern() puts its own _meta in.
            if case not in ("name a number", "progress token a list"):
                body, headers = modern({"jsonrpc": "2.0", "id": 41, "method": method, "params": params})
                answer = await http.post(url, content=body, headers={"accept": "application/json, text/event-stream",
                                                                     "content-type": "application/json", **headers})
                check_error(answer.json()["error"], case)


@pytest.mark.process
def test_wrong_shapes_get_invalid_params_naming_the_parameter_over_stdio(tmp_path: Path) -> None:
    lines = [json.dumps({"jsonrpc": "2.0", "id": 50 + i, "method": method, "params": params})
             for i, (method, params, _) in enumerate(BAD.values())]
    messages, _ = _exchange(tmp_path, lines, wait_for=frozenset({1, 99, *range(50, 50 + len(BAD))}))
    by_id = {m.get("id"): m for m in messages}
    for i, case in enumerate(BAD):
        error = by_id[50 + i]["error"]
        assert isinstance(error, dict)
        check_error(error, case)


def test_an_answer_names_a_few_parameters_each_cut_short() -> None:
    from pydantic import BaseModel, ConfigDict, ValidationError

    from lazytools.server.middleware.params import invalid_params

    class ManyParams(BaseModel):
        model_config = ConfigDict(extra="forbid")
        a: int
        b: int
        c: int
        d: int

    params = {"a": SECRET, "b": SECRET, "c": SECRET, "d": SECRET, "k" * 10_000: SECRET}
    with pytest.raises(ValidationError) as info:
        ManyParams.model_validate(params)
    error = invalid_params(info.value, params).error
    assert error.code == types.INVALID_PARAMS and "'a' must be an integer; 'b'" in error.message
    assert "(and 2 more)" in error.message and SECRET not in error.message and len(error.message) < 300
    with pytest.raises(ValidationError) as info:
        ManyParams.model_validate({"a": 1, "b": 2, "c": 3, "d": 4, "k" * 10_000: 5})
    error = invalid_params(info.value, {"k" * 10_000: 5}).error
    assert "is not allowed" in error.message and len(error.message) < 200, error.message


def test_the_members_of_a_union_are_not_named_as_parameters() -> None:
    from mcp_types import methods
    from pydantic import ValidationError

    from lazytools.server.middleware.params import invalid_params

    params = {"ref": {"type": "ref/prompt", "name": 3}, "argument": {"name": "a", "value": "b"}}
    with pytest.raises(ValidationError) as info:
        methods.validate_client_request("completion/complete", "2025-11-25", params)
    # pydantic's locations run through each member it tried ("ref.PromptReference.name"): no such parameter.
    assert invalid_params(info.value, params).error.message == "Invalid request parameters: 'ref' is not valid"
