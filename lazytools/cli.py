"""The `lazytools` command: parse options, call one library function, print. Nothing else lives here."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import re
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

import anyio
from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from .errors import LazyToolsError
from .safetext import clip, escape
from .settings import Settings, load_settings
from .settingsdoc import default_text, env_name, flag_name, is_secret

__all__ = ["main"]


_WAITING = """\
lazytools is an MCP server: it is waiting for an MCP client to speak JSON-RPC on stdin (this terminal).
Point a client at this command instead (README: "Add it to your client"), or try it from the shell:
  {command} search "convert a temperature"
  {command} surface
  npx -y @modelcontextprotocol/inspector --cli -- {command} --method tools/list
(the tools a query finds; what a fresh session lists, and its token cost; the MCP Inspector listing the tools)
Ctrl-C stops it."""


def _this_command() -> str:
    """This command as the shell can run it again from here: the path it was started by (`.venv/bin/lazytools`
    after the README's install, which leaves it off PATH), or `python -m lazytools` with this interpreter."""
    started = sys.argv[0] if sys.argv and sys.argv[0] else "lazytools"
    if Path(started).name == "__main__.py":
        return f"{shlex.quote(sys.executable)} -m lazytools"
    return shlex.quote(started)


def _json_object(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"not JSON: {exc}") from exc


def _query(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("empty: say what the tool should do, e.g. \"convert a temperature\"")
    from .server.metatools import MAX_QUERY_CHARS  # imported here: the other commands need none of the server

    if len(text) > MAX_QUERY_CHARS:  # what search_tools refuses: the command answers as the server would
        raise argparse.ArgumentTypeError(f"{len(text):,} characters: search_tools takes at most {MAX_QUERY_CHARS:,}")
    return text


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from exc
    if value < 1:
        raise argparse.ArgumentTypeError(f"at least 1 ({value} given)")
    return value


def _flag_options(field: FieldInfo) -> dict[str, Any]:
    """argparse options for a setting, read from its type; values are validated by Settings, as from the env."""
    annotation: Any = field.annotation
    if get_origin(annotation) in (Union, UnionType):  # `X | None`: the flag gives an X
        annotation = next(arg for arg in get_args(annotation) if arg is not type(None))
    if annotation is bool:
        return {"action": argparse.BooleanOptionalAction}
    if get_origin(annotation) is Literal:
        return {"choices": get_args(annotation), "type": str.upper if "INFO" in get_args(annotation) else str}
    if get_origin(annotation) is dict:
        return {"type": _json_object, "metavar": "JSON"}
    if annotation in (int, float, Path):
        metavar = {int: "N", float: "NUMBER", Path: "PATH"}[annotation]
        if (field.description or "").startswith("Seconds"):
            metavar = "SECONDS"
        return {"type": annotation, "metavar": metavar}
    return {"type": str, "metavar": "TEXT" if annotation is str else "A,B"}  # lists: split by Settings


def _settings_options() -> argparse.ArgumentParser:
    """Every setting as a flag (`search_limit` → `--search-limit`), from the fields of Settings.

    The defaults are SUPPRESS, so a flag absent from the command line is absent from the namespace: the same
    parser is a parent of the top level and of every subcommand, and options work before or after the command.
    """
    options = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS, allow_abbrev=False)
    secrets = ", ".join(env_name(name) for name, field in Settings.model_fields.items() if is_secret(field))
    group = options.add_argument_group("settings (also LAZYTOOLS_* variables or .env; docs/settings.md)",
                                       f"Secrets have no flag, so they never show in a process list: set {secrets} "
                                       "in the environment or .env.")
    for name, field in Settings.model_fields.items():
        if is_secret(field):
            continue
        default = default_text(name)
        text = f"{field.description} (default: {default or 'none'}) [{env_name(name)}]".replace("%", "%%")
        group.add_argument(flag_name(name), dest=name, help=text,
                           **_flag_options(field))
    group.add_argument("--env-file", type=Path, metavar="PATH",
                       help="read settings from this file, which must exist (without it: .env, if there is one)")
    return options


def _version() -> str:
    try:
        return importlib.metadata.version("lazytools")
    except importlib.metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "(not installed)"


def _shown(limit: int | None, settings: Settings) -> int:
    """`lazytools search` shows what search_tools would return: its default limit, and never past its maximum."""
    return settings.search_limit if limit is None else max(1, min(limit, settings.search_max_limit))


def _parser() -> argparse.ArgumentParser:
    common = _settings_options()
    # Usage lines are written out: argparse's own would list all 40 settings, and a subcommand's would start with
    # the whole top-level usage ("lazytools [OPTIONS] [COMMAND] ... search [-h] [--mode ...] ...").
    # No abbreviations: `--search-l 1` would silently mean --search-limit today and something else tomorrow.
    parser = argparse.ArgumentParser(prog="lazytools", parents=[common], usage="%(prog)s [COMMAND] [OPTIONS]",
                                     allow_abbrev=False,
                                     description="An MCP server that shows tools only once found.",
                                     epilog="Options go before or after the command; `lazytools COMMAND --help` "
                                            "shows a command's own.")
    parser.add_argument("-V", "--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", prog="lazytools")
    commands.add_parser("serve", parents=[common], allow_abbrev=False, usage="%(prog)s [OPTIONS]",
                        help="serve MCP (the default)")
    search = commands.add_parser("search", parents=[common], allow_abbrev=False,
                                 usage="%(prog)s QUERY [--limit N] [--group GROUP] [OPTIONS]",
                                 help="search the catalog from the shell")
    search.add_argument("query", type=_query)
    search.add_argument("--limit", type=_count, help="matches to show (default: what search_tools returns, "
                        "LAZYTOOLS_SEARCH_LIMIT; at most LAZYTOOLS_SEARCH_MAX_LIMIT)")
    search.add_argument("--group", help="only tools of this group (an upstream server's name, or a bundled category)")
    commands.add_parser("surface", parents=[common], allow_abbrev=False, usage="%(prog)s [OPTIONS]",
                        help="what a fresh session sees and what it costs in tokens")
    usage = commands.add_parser("usage", parents=[common], allow_abbrev=False, usage="%(prog)s [--limit N] [OPTIONS]",
                                help="the most called tools (learning from use) and the ALWAYS_AVAILABLE_TOOLS "
                                     "line they suggest")
    usage.add_argument("--limit", type=_count, default=20, help="tools to show (default 20)")
    evaluate = commands.add_parser("eval", parents=[common], allow_abbrev=False,
                                   usage="%(prog)s --tools PATH --queries PATH [OPTIONS]",
                                   help="search quality on a labelled query file")
    evaluate.add_argument("--tools", type=Path, required=True, help="catalog JSONL (id, name, description, ...)")
    evaluate.add_argument("--queries", type=Path, required=True, help="queries JSONL (id, query, relevant_tool_ids)")
    evaluate.add_argument("--every", type=int, default=1, help="use every Nth query of the single-tool split")
    evaluate.add_argument("--misses", type=int, default=10, help="how many worst misses to print")
    evaluate.add_argument("--split", help="only queries of this split (e.g. single, multi)")
    evaluate.add_argument("--half", choices=["even", "odd"], help="every other query of each split (tune/hold out)")
    evaluate.add_argument("--limit", type=int, help="search_tools' limit (default: LAZYTOOLS_SEARCH_LIMIT, 5; at most "
                          "LAZYTOOLS_SEARCH_MAX_LIMIT)")
    evaluate.add_argument("--rankings", type=Path, help="write each query's returned tool ids here (JSONL)")
    evaluate.add_argument("--servers", type=Path, help="servers JSONL (server, description, instructions); default: "
                          "servers.jsonl beside the tools file, when there is one")
    return parser


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {name: getattr(args, name) for name in Settings.model_fields if hasattr(args, name)}
    return load_settings(getattr(args, "env_file", None), **overrides)


def _loop_options() -> dict[str, Any]:
    """uvloop when it is installed (`uvicorn[standard]` brings it): it serves HTTP with less CPU per request
    (docs/benchmarks.md). Everything else runs unchanged."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        settings = _settings(args)
        return anyio.run(_run, args, settings, backend_options=_loop_options())
    except ValidationError as exc:
        print("lazytools: invalid settings:\n" + _settings_errors(exc), file=sys.stderr)
        return 2
    except SettingsError as exc:  # a variable or .env line that could not even be read (a JSON field's bad JSON)
        print("lazytools: invalid settings:\n" + _unreadable(exc), file=sys.stderr)
        return 2
    except LazyToolsError as exc:
        print(f"lazytools: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before the server watches signals (it imports, then starts), or in a command
        return 130
    except BrokenPipeError:  # `lazytools search ... | head`: the reader left; that is not an error
        sys.stderr.close()
        return 0


def _settings_errors(exc: ValidationError) -> str:
    """One line per problem, naming the flag and the variable that set it (pydantic's own dump names fields)."""
    lines = []
    for error in exc.errors(include_url=False):
        message = error["msg"].removeprefix("Value error, ")
        field = str(error["loc"][0]) if error["loc"] else ""
        if field in Settings.model_fields:
            if is_secret(Settings.model_fields[field]):  # never echoed
                lines.append(f"  {env_name(field)}: {message}")
            else:
                lines.append(f"  {flag_name(field)} / {env_name(field)}: {message} "
                             f"(got {clip(repr(error.get('input')), 80)})")
        else:
            lines.append(f"  {message}")
    return "\n".join(lines)


_UNREADABLE = re.compile(r'field "(\w+)" from source "(\w+)"')


def _unreadable(exc: SettingsError) -> str:
    """The line for a value pydantic-settings could not parse: the variable, where it came from, the JSON error."""
    found = _UNREADABLE.search(str(exc))
    if found is None or found.group(1) not in Settings.model_fields:
        return f"  {clip(str(exc), 200)}"
    where = ".env" if found.group(2).startswith("DotEnv") else "the environment"
    cause = f": {clip(str(exc.__cause__), 120)}" if exc.__cause__ is not None else ""
    return f"  {env_name(found.group(1))} (from {where}): not valid JSON{cause}"


def _print(report: str) -> None:
    """A report on stdout as a terminal can show it: line by line, an unsafe character from a config or an upstream
    (a server named "w\\x1b[31mx", a lone surrogate; `safetext.escape`) written as its escape, and any character
    the terminal's encoding lacks as a backslash escape instead of an error."""
    text = "\n".join(map(escape, report.split("\n")))
    if hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")
    print(text)


async def _run(args: argparse.Namespace, settings: Settings) -> int:
    from . import app, report

    serving = args.command in (None, "serve")
    # `search` and `surface` print a report: logs (upstream servers' stderr among them) only when asked for
    asked = "log_level" in settings.model_fields_set  # from a flag, the environment or .env
    # ... but with upstream servers to wait for, one line for each as it comes up or fails
    app.configure_logging(settings.log_level if serving or asked else "WARNING",
                          progress=not serving and not asked and settings.config is not None)
    if serving:
        if settings.transport == "stdio" and sys.stdin is not None and sys.stdin.isatty():
            print(_WAITING.format(command=_this_command()), file=sys.stderr, flush=True)
        return await app.serve(settings)
    down: list[str] = []
    if args.command == "search":
        async with app.open_catalog(settings, down=down) as catalog:
            _print(report.search_report(catalog, args.query, limit=_shown(args.limit, settings), group=args.group,
                                        semantic=settings.semantic, embedder=settings.embedder,
                                        ranking=settings.search_ranking,
                                        cache_dir=settings.embedding_cache_dir() if settings.semantic else None))
    elif args.command == "surface":
        async with app.open_server(settings, down=down) as server:
            _print(report.surface_report(server))
    if down:  # an answer without a configured server's tools is not the answer: say so where it is read
        print(report.down_report(down))
        return 1
    elif args.command == "usage":
        try:
            if settings.state_url is not None:  # replicas keep their usage in Redis
                print(report.shared_usage_report(settings.state_url.get_secret_value(), prefix=settings.state_prefix,
                                                 timeout=settings.state_timeout, limit=args.limit))
            else:
                print(report.usage_report(settings.embedding_cache_dir(), limit=args.limit))
        except report.UsageUnreadable as exc:
            print(f"lazytools: {exc}", file=sys.stderr)
            return 1
    elif args.command == "eval":
        from .evaluate import run_eval

        print(run_eval(args.tools, args.queries, every=args.every, misses=args.misses, split=args.split,
                       semantic=settings.semantic, half=args.half,
                       limit=settings.search_limit if args.limit is None else args.limit,
                       max_limit=settings.search_max_limit, rankings=args.rankings,
                       floor=settings.relevance_floor, embedder=settings.embedder, servers=args.servers,
                       ranking=settings.search_ranking))
    return 0
