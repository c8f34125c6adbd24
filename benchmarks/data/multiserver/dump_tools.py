"""Write the `tools/list` of real MCP servers as a lazytools tools JSONL (how tools.jsonl here was made).

Usage: python dump_tools.py launch.json OUT.jsonl, where launch.json is {"name": {"command", "args", "env",
"package"}}; servers.jsonl beside OUT gets each server's version and instructions.
Each server is started over stdio with placeholder credentials (listing tools calls no API), asked for its tools,
and stopped. A server that fails to start is reported on stderr and skipped.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def list_tools(name: str, spec: dict[str, object]) -> tuple[dict[str, object], list[dict[str, object]]]:
    env = {**os.environ, **{str(k): str(v) for k, v in dict(spec.get("env") or {}).items()}}  # type: ignore[call-overload]
    params = StdioServerParameters(command=str(spec["command"]), args=[str(a) for a in spec.get("args") or []],  # type: ignore[attr-defined]
                                   env=env)
    with anyio.fail_after(60):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            hello = await session.initialize()
            result = await session.list_tools()
    info = {"server": name, "package": spec.get("package"), "version": hello.server_info.version,
            "instructions": hello.instructions}
    return info, [
        {"id": f"{name}/{tool.name}", "name": tool.name, "server": name, "description": tool.description or "",
         "input_schema": tool.input_schema}
        for tool in result.tools
    ]


async def main(servers_path: Path, out: Path) -> None:
    servers = json.loads(servers_path.read_text())
    lines: list[str] = []
    infos: list[str] = []
    for name, spec in servers.items():
        try:
            info, tools = await list_tools(name, spec)
        except Exception as exc:  # report and go on: one broken server must not lose the others
            print(f"{name}: failed: {exc!r}", file=sys.stderr)
            continue
        print(f"{name}: {len(tools)} tools", file=sys.stderr)
        infos.append(json.dumps(info, ensure_ascii=False, sort_keys=True))
        lines += [json.dumps(tool, ensure_ascii=False, sort_keys=True) for tool in tools]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out.with_name("servers.jsonl").write_text("\n".join(infos) + "\n", encoding="utf-8")


if __name__ == "__main__":
    anyio.run(main, Path(sys.argv[1]), Path(sys.argv[2]))
