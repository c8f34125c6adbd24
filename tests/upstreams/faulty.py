"""A toy upstream that misbehaves on the wire and at shutdown, for the reliability tests.

    python -m tests.upstreams.faulty --name alpha [--tools echo,pid] [--banner] [--helper] [--stubborn]

It serves the toy's tools plus `garble(kind)`, which writes junk on its stdout (the MCP wire) and then answers,
and `stall`, which says it has started (see FAULTY_PID_DIR), reports one progress step when the call carries a
progressToken, and never answers.
`--banner` prints log lines on stdout before serving, as servers that log to stdout do. `--helper` starts a
background process it never stops (as a server that launches a browser might). `--stubborn` ignores SIGTERM and
keeps running after its stdin closes, so only SIGKILL stops it. With `FAULTY_PID_DIR` set, it writes its own PID
(and its helper's) there, one file each, so a test can check nothing outlives lazytools, and appends the name of
every tool it is asked to call (and `tools/list` for each listing) to `NAME.calls`, so a test can check what
reached it; a stubborn one appends `end of stdin` there when its stdin has closed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

from .toy import Toy

__all__ = ["GARBAGE", "PID_DIR_VARIABLE", "entry", "main"]

PID_DIR_VARIABLE = "FAULTY_PID_DIR"
_REPO = Path(__file__).resolve().parents[2]

GARBAGE: dict[str, bytes] = {
    "text": b"DEBUG: connecting to the database...\nWarning: something happened\n",
    "json": b'{"hello": "world"}\n[1, 2, 3]\n"just a string"\n',
    "response": b'{"jsonrpc": "2.0", "id": 987654, "result": {"content": []}}\n',
    "notification": b'{"jsonrpc": "2.0", "method": "notifications/made_up", "params": {"x": 1}}\n',
    "request": b'{"jsonrpc": "2.0", "id": "from-upstream", "method": "no/such/method"}\n',
    "binary": b"\xff\xfe\x00\x01 not utf-8 \xc3\x28\n",
    "blank": b"\n\n   \n",
    "long": b"x" * 1_000_000 + b"\n",
    "bad_result": b"",  # an answer to the very call, with a result of the wrong shape (written by `garble`)
}
"""What `garble(kind)` writes on the wire before its answer: whole lines, so the answer itself stays intact."""

_EXTRAS = {tool.name: tool for tool in (
    types.Tool(name="stall", description="Say so in FAULTY_PID_DIR, report progress if asked, then never answer.",
               input_schema={"type": "object", "properties": {}}),
    types.Tool(name="garble", description="Write junk on the MCP wire, then answer.",
               input_schema={"type": "object", "properties": {"kind": {"type": "string", "enum": list(GARBAGE)}},
                             "required": ["kind"]}),
)}


class _Wire:
    """The server's stdout as the SDK's writer wants it (`write`, `flush`), shared with `garble`, so junk and
    messages go out in order and never split each other's lines."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write_bytes(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]

    async def write(self, text: str) -> None:
        self.write_bytes(text.encode())

    async def flush(self) -> None:
        return None


def entry(name: str, *flags: str, pid_dir: Path | None = None, **options: Any) -> dict[str, Any]:
    """A config entry that starts this server over stdio (as a module, so it can import the toy)."""
    env = {PID_DIR_VARIABLE: str(pid_dir)} if pid_dir is not None else {}
    return {"command": sys.executable, "args": ["-m", "tests.upstreams.faulty", "--name", name, *flags],
            "cwd": str(_REPO), "env": env, **options}


def _record_pid(name: str, pid: int) -> None:
    directory = os.environ.get(PID_DIR_VARIABLE)
    if directory:
        # Written whole, then renamed: a test reads the file as soon as it exists, and it must never read it empty.
        partial = Path(directory, f"{name}.pid.part")
        partial.write_text(str(pid))
        partial.replace(Path(directory, f"{name}.pid"))


def _record_call(name: str, tool: str) -> None:
    directory = os.environ.get(PID_DIR_VARIABLE)
    if directory:
        with Path(directory, f"{name}.calls").open("a") as log:
            log.write(tool + "\n")


def build(name: str, tools: list[str] | None, wire: _Wire) -> Server[Any]:
    """The toy's tools named in `tools` plus, if named there too, garble and stall (None: every tool)."""
    extras = [tool for tool in _EXTRAS.values() if tools is None or tool.name in tools]
    toy = Toy(name, [t for t in tools if t not in _EXTRAS] if tools is not None else None)

    async def list_tools(ctx: ServerRequestContext[Any], params: Any) -> types.ListToolsResult:
        _record_call(name, "tools/list")
        listed = await toy.list_tools(ctx, params)
        return types.ListToolsResult(tools=[*listed.tools, *extras])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        _record_call(name, params.name)
        if params.name == "garble":
            kind = str((params.arguments or {}).get("kind"))
            wire.write_bytes(GARBAGE[kind])
            if kind == "bad_result":
                # The real answer that follows goes to an id already answered: the client must drop it.
                wire.write_bytes(json.dumps({"jsonrpc": "2.0", "id": ctx.request_id,
                                             "result": {"content": "not a list"}}).encode() + b"\n")
            return types.CallToolResult(content=[types.TextContent(text=f"garbled {kind}")])
        if params.name == "stall":
            _record_pid(f"{name}-stalled", os.getpid())  # the call has arrived: a test may now kill this process
            await ctx.session.report_progress(1, None, "started, and stalling")  # a no-op without a token
            await anyio.sleep_forever()
        return await toy.call_tool(ctx, params)

    return Server(name, version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def _serve(server: Server[Any], wire: _Wire) -> None:
    async with stdio_server(stdout=wire) as (read_stream, write_stream):  # type: ignore[arg-type]
        await server.run(read_stream, write_stream,
                         server.create_initialization_options(NotificationOptions(tools_changed=True)))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="faulty")
    parser.add_argument("--tools", help="comma-separated toy tools, garble, stall; default: all")
    parser.add_argument("--banner", action="store_true", help="print log lines on stdout before serving")
    parser.add_argument("--helper", action="store_true", help="start a background process and never stop it")
    parser.add_argument("--stubborn", action="store_true", help="ignore SIGTERM and the end of stdin")
    args = parser.parse_args(argv)
    _record_pid(args.name, os.getpid())
    if args.stubborn:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.helper:
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
        _record_pid(f"{args.name}-helper", helper.pid)
    # The wire is a private copy of fd 1: what the process itself prints on fd 1 is junk on the wire too.
    wire = _Wire(os.dup(1))
    if args.banner:
        wire.write_bytes(b"Starting faulty server v1.0...\nListening on stdio\n")
    server = build(args.name, args.tools.split(",") if args.tools else None, wire)
    anyio.run(partial(_serve, server, wire))
    if args.stubborn:
        _record_call(args.name, "end of stdin")  # a test may now signal lazytools while it waits for this one
        time.sleep(600)  # stdin closed: a well-behaved server exits here; this one does not


if __name__ == "__main__":
    main()
