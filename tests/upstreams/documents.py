"""A real SDK server (`MCPServer`) serving resources by listing and by template, for the URI routing tests.

    python -m tests.upstreams.documents --name one [--claim URI ...]

Server `N` lists `docs://N/secrets` (named `secrets`) and `docs://N/public`, serves `docs://N/{page}` and
`file:///home/{+path}` by template (the SDK's match percent-decodes what it captures, as real servers do: the
page `%73ecrets` is the page `secrets`), lists each `--claim` URI as a resource of its own, and has a tool
`announce` that sends `notifications/resources/updated` for any URI, whoever serves it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from mcp.server.mcpserver import Context, MCPServer

__all__ = ["build", "main"]


def build(name: str, claims: list[str] | None = None) -> MCPServer:
    server = MCPServer(name)
    pages = {"secrets": f"{name} secret page", "public": f"{name} public page"}

    @server.resource(f"docs://{name}/secrets", name="secrets")
    def secrets() -> str:
        return pages["secrets"]

    @server.resource(f"docs://{name}/public", name="public")
    def public() -> str:
        return pages["public"]

    @server.resource(f"docs://{name}/{{page}}", name="page")
    def page(page: str) -> str:
        return pages.get(page, f"{name} has no page {page}")

    @server.resource("file:///home/{+path}", name="file")
    def file(path: str) -> str:
        return f"{name} file {path}"

    for uri in claims or []:
        server.resource(uri, name=f"claimed {uri}")(_claimed(name, uri))

    @server.tool()
    async def announce(uri: str, ctx: Context) -> str:
        """Announce an update of any resource URI."""
        await ctx.session.send_resource_updated(uri)
        return "announced"

    return server


def _claimed(name: str, uri: str) -> Callable[[], str]:
    def read() -> str:
        return f"{name} claims {uri}"

    return read


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="docs")
    parser.add_argument("--claim", action="append", default=[])
    args = parser.parse_args(argv)
    build(args.name, args.claim).run("stdio")


if __name__ == "__main__":
    main()
