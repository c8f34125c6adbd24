"""Redis commands per request of a session shared through Redis, by kind of request, with learning from use on.

`python -m benchmarks.redis_commands [--requests 40]`: a real redis-server and one HTTP replica in this process (a
dynamic-surface session, then a proxy-surface one); each kind of request is sent `--requests` times on one session
after a few to settle, and Redis's `INFO commandstats` counts what they cost. Commands a script runs inside Redis
(the compare-and-set write's `GET` and `SET`) are counted by Redis as its own commands: the round trips are the
`GET` of the record and the `EVALSHA` of the write (and the `PING` after it: state/redis.py, `_delivered`). Usage
records (`XADD` by the writer thread) are not counted; the pub/sub listener's `PING` after a second without messages
(local copies on) may add a few to the `PING`s. Each surface is measured with `LAZYTOOLS_STATE_LOCAL_COPY` off and on.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from redis.asyncio import Redis as AsyncRedis

from lazytools import build_server
from lazytools.app import open_state
from lazytools.server.middleware.shared_sessions import SharedSessions
from lazytools.transports.http import build_app
from tests.cluster import running_redis
from tests.conftest import make_settings
from tests.helpers import running_http
from tests.test_learning import QUERY, notes_catalog

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
OTHER_QUERY = "send an email to a friend"
COUNTED = ("get", "evalsha", "eval", "set", "publish", "expire", "ping")

Body = dict[str, Any]


def _kinds(surface: str) -> dict[str, Callable[[int], Body]]:
    def call(name: str, arguments: Body) -> Body:
        if surface == "proxy":  # a catalog tool is called through invoke_tool there
            arguments, name = {"tool_name": name, "arguments": arguments}, "invoke_tool"
        return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}

    return {
        "search_tools, the same query again": lambda i: _search({"query": QUERY}),
        "search_tools, two queries in turn": lambda i: _search({"query": QUERY if i % 2 else OTHER_QUERY}),
        "search_tools by tool_names": lambda i: _search({"tool_names": ["search_notes"]}),
        "tools/list": lambda i: {"method": "tools/list"},
        "tools/call, the same tool again": lambda i: call("search_notes", {"words": "budget"}),
        "tools/call, two tools in turn": lambda i: call("search_notes", {"words": "budget"}) if i % 2
        else call("tag_note", {"note": "n", "tag": "t"}),
    }


def _search(arguments: Body) -> Body:
    return {"method": "tools/call", "params": {"name": "search_tools", "arguments": arguments}}


async def _counts(admin: AsyncRedis) -> dict[str, int]:
    info = await admin.info("commandstats")
    return {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in info.items()}


async def measure(requests: int, scratch: Path) -> list[tuple[str, str, str, dict[str, float]]]:
    rows: list[tuple[str, str, str, dict[str, float]]] = []
    async with running_redis() as redis, AsyncRedis.from_url(redis.url) as admin:
        for surface, local_copy in itertools.product(("dynamic", "proxy"), (False, True)):
            settings = make_settings(learn=True, cache_dir=scratch / f"{surface}-{local_copy}", state_url=redis.url,
                                     transport="http", default_surface=surface, learn_sync_interval=60,
                                     state_local_copy=local_copy)
            server = build_server(notes_catalog(), settings)
            assert server.usage is not None and server.usage.loaded.wait(10)
            ids = itertools.count()
            async with open_state(settings) as state:
                SharedSessions(server, state).install()
                async with running_http(build_app(server, settings, state=state)) as base, \
                        httpx2.AsyncClient(timeout=30) as http:

                    async def post(body: Body, key: str | None = None) -> httpx2.Response:
                        message = {"jsonrpc": "2.0", **body}
                        if not str(body["method"]).startswith("notifications/"):
                            message["id"] = next(ids)
                        headers = {**HEADERS, **({"mcp-session-id": key} if key else {})}
                        response = await http.post(f"{base}/mcp", content=json.dumps(message), headers=headers)
                        assert response.status_code in (200, 202), response.text
                        return response

                    opened = await post({"method": "initialize", "params": {
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "benchmark", "version": "1"}}})
                    key = opened.headers["mcp-session-id"]
                    await post({"method": "notifications/initialized"}, key)
                    await post(_search({"tool_names": ["search_notes", "tag_note"]}), key)
                    for kind, body in _kinds(surface).items():
                        for i in (1, 0, 1):  # settle: the state this kind of request leaves
                            await post(body(i), key)
                        before = await _counts(admin)
                        for i in range(requests):
                            await post(body(i), key)
                        after = await _counts(admin)
                        rows.append((surface, "on" if local_copy else "off", kind, {name: (after.get(name, 0) - before.get(name, 0)) / requests
                                                     for name in COUNTED if after.get(name, 0) > before.get(name, 0)}))
            server.usage.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--requests", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lazytools-commands-") as scratch:
        rows = anyio.run(measure, args.requests, Path(scratch))
    print("| surface | local copy | request | Redis commands per request |")
    print("|---|---|---|---|")
    for surface, copy, kind, counts in rows:
        print(f"| {surface} | {copy} | {kind} | " + ", ".join(f"{name.upper()} {n:.2f}" for name, n in sorted(counts.items()))
              + " |")


if __name__ == "__main__":
    main()
