"""A real SDK server (`MCPServer`) that says of itself what its flags say, with tools named and described by them:
a stand-in for any real upstream, honest or not, in the tests of how search reads what a server says of itself.

    python -m tests.upstreams.described --name NAME [--title T] [--description D] [--instructions I]
                                        --tool NAME=DESCRIPTION [--tool ...]

Each tool takes an optional `text` and answers with its own name.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from mcp.server.mcpserver import MCPServer

__all__ = ["build", "main"]


def _answer(name: str) -> Callable[[str], str]:
    def answer(text: str = "") -> str:
        return name

    return answer


def build(name: str, tools: Sequence[tuple[str, str]], *, title: str | None = None, description: str | None = None,
          instructions: str | None = None) -> MCPServer:
    server = MCPServer(name, title=title, description=description, instructions=instructions)
    for tool, text in tools:
        server.add_tool(_answer(tool), name=tool, description=text)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", required=True)
    parser.add_argument("--title")
    parser.add_argument("--description")
    parser.add_argument("--instructions")
    parser.add_argument("--tool", action="append", default=[], help="NAME=DESCRIPTION")
    args = parser.parse_args(argv)
    tools = [tuple(spec.split("=", 1)) for spec in args.tool]
    build(args.name, [(tool, text) for tool, text in tools], title=args.title, description=args.description,
          instructions=args.instructions).run()


if __name__ == "__main__":
    main()
