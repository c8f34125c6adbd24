"""The MCP servers config file users already have (Claude Desktop, Cursor, VS Code), validated into server specs.

Accepted shapes, in a JSON file that may carry comments and trailing commas (VS Code writes JSONC):

    {"mcpServers": {NAME: {"command", "args", "env", "cwd"} | {"url", "headers"}}}      Claude Desktop, Cursor
    {"servers":    {NAME: {"type": "stdio" | "http" | "sse", ...}}}                      VS Code

Per server, lazytools also reads `description`, `describe`, `defer_loading`, `include`, `exclude`, `timeout`, `prefix`,
`scope` and `disabled`, and for HTTP servers `identity` (send each user's own credentials: docs/team.md). String values expand `${VAR}`, `${env:VAR}` and `${VAR:-default}` from the environment
(configtext.py). Anything wrong is a `ConfigError` that names the file, the server and the field.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from ...errors import ConfigError
from ...smallfiles import read_env_file, read_small_file
from ...toolnames import MAX_PREFIX_LENGTH, public_tool_name, server_prefix
from .configtext import Budget, expand_tree, parse_json, workspace_of

__all__ = [
    "MAX_CONFIG_BYTES",
    "GatewayConfig",
    "HttpServer",
    "Identity",
    "ServerConfig",
    "StdioServer",
    "TokenExchange",
    "load_config",
    "parse_config",
]

logger = logging.getLogger(__name__)

MAX_CONFIG_BYTES = 4 << 20
"""A config file larger than this is refused unread (a real one is a few KB; reading JSONC costs about 0.3 s a MB)."""

# Keys other clients write into the same entries; they mean nothing to lazytools and are not typos.
_OTHER_CLIENTS_KEYS = frozenset({"alwaysAllow", "autoApprove", "dev", "gallery", "transportType", "version"})


def _scalar_text(value: Any) -> Any:
    # Hand-written configs often say "PORT": 8080; the process environment only holds strings.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return value


Text = Annotated[str, BeforeValidator(_scalar_text)]


class _Server(BaseModel):
    """What every server entry may say, whatever its transport."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              extra="ignore", frozen=True)

    name: str
    """The key in the config file: the group name in the catalog and in search results."""
    description: str | None = None
    """Stands for what the server says of itself, in the search_tools manifest and in search's choice of server."""
    describe: Literal["server", "config"] = "server"
    """`config`: nothing the server says of itself (its title, description, instructions) is read, only
    `description` when given; for a server not trusted to describe itself honestly."""
    prefix: str | None = None
    """Public tool names are `prefix__tool`; defaults to the server name made safe."""
    defer_loading: bool | None = None
    """False lists this server's tools from the start; None follows the global `defer_all`."""
    include: list[str] | None = None
    """Only these tools (names or fnmatch patterns, upstream or public names); None means all."""
    exclude: list[str] = Field(default_factory=list)
    """Never these tools, whatever `include` says."""
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Seconds per tool call; None uses the global call timeout. A number, or a string holding one (`"${T}"`)."""
    disabled: bool = False
    scope: Literal["shared", "session"] = "shared"
    """`session`: one connection per client session (its own process for stdio), stopped with the session."""

    @field_validator("timeout", mode="before")
    @classmethod
    def _not_a_flag(cls, value: Any) -> Any:
        if isinstance(value, bool):  # pydantic reads true as 1 s
            raise ValueError(f"a number of seconds, not {str(value).lower()}")
        return value

    @field_validator("prefix")
    @classmethod
    def _valid_prefix(cls, value: str | None) -> str | None:
        if value is not None and server_prefix(value) != value:
            raise ValueError(f"use 1-{MAX_PREFIX_LENGTH} characters of A-Z a-z 0-9 . - and single inner underscores")
        return value

    @property
    def tool_prefix(self) -> str:
        return self.prefix or server_prefix(self.name)

    def allows(self, tool: str) -> bool:
        """Whether the include/exclude lists let `tool` (the upstream's own name) through. Patterns match
        case-insensitively, as tool names are compared elsewhere: `delete_*` also excludes `Delete_Everything`."""
        names = (tool.lower(), public_tool_name(self.tool_prefix, tool).lower())

        def matches(patterns: list[str]) -> bool:
            return any(fnmatch.fnmatchcase(name, pattern.lower()) for pattern in patterns for name in names)

        return (self.include is None or matches(self.include)) and not matches(self.exclude)

    def unmatched_includes(self, tools: list[str]) -> list[str]:
        """Include patterns that match none of `tools`: most likely typos, worth a warning."""
        return [p for p in self.include or () if not any(
            fnmatch.fnmatchcase(name.lower(), p.lower())
            for tool in tools for name in (tool, public_tool_name(self.tool_prefix, tool))
        )]


class StdioServer(_Server):
    """A server lazytools starts as a subprocess and talks to over stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[Text] = Field(default_factory=list)
    env: dict[str, Text] = Field(default_factory=dict)
    """Merged over a minimal inherited environment (PATH, HOME, USER, …), as the MCP SDK does."""
    env_file: Path | None = None
    """VS Code's `envFile`: a dotenv file whose variables are added under `env`."""
    cwd: Path | None = None

    @field_validator("command", "args", "env", "env_file", "cwd", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        # JSON can write "\u0000"; a program's path, arguments and environment cannot carry it (the OS would end the
        # string there, and the server would start with other arguments than the file says).
        texts = [*value, *value.values()] if isinstance(value, dict) else value if isinstance(value, list) else [value]
        if any("\0" in str(text) for text in texts):
            raise ValueError("holds a NUL character (\\u0000), which no command, argument, variable or path can carry")
        return value


class TokenExchange(BaseModel):
    """RFC 8693: lazytools trades the user's token at the issuer for one meant for this server."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True, validate_by_alias=True,
                              extra="forbid", frozen=True)

    audience: Text = Field(min_length=1)
    """The upstream's identifier at the issuer: the exchanged token's `aud`."""
    scope: Text | None = None
    resource: Text | None = None
    token_endpoint: Text | None = None
    """Default: the `token_endpoint` of LAZYTOOLS_AUTH_ISSUER's metadata."""
    client_id: Text | None = None
    """lazytools' client at the issuer; default LAZYTOOLS_AUTH_CLIENT_ID (and _SECRET)."""
    client_secret: Text | None = None


class Identity(BaseModel):
    """`"identity": {"exchange": {...}}`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exchange: TokenExchange


_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""A valid HTTP header name (RFC 9110's token)."""


class HttpServer(_Server):
    """A server lazytools connects to by URL: streamable HTTP, or the older HTTP+SSE transport."""

    type: Literal["http", "sse"] = "http"
    url: str
    headers: dict[str, Text] = Field(default_factory=dict)
    identity: Literal["forward"] | Identity | None = None
    """Each user's calls go on a connection of their own carrying their credentials: `"forward"` their own bearer
    token (only to servers marked so), or a token exchanged for this server. The shared connection, which lists
    the server's tools, uses `headers` only."""

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http:// or https:// URL")
        try:
            parts = urlsplit(value)
            _ = parts.port  # raises on a port that is not a number
        except ValueError:
            # Said without the URL or the library's message, which quote the part after the first ":" of the
            # authority: the password, when it holds an unencoded "/".
            raise ValueError("its host and port do not parse (a \"/\", \"?\", \"#\" or \"@\" in a user name or "
                             "password must be percent-encoded)") from None
        if not parts.hostname:
            raise ValueError("has no host")
        return value

    @field_validator("headers")
    @classmethod
    def _header_names(cls, value: dict[str, str]) -> dict[str, str]:
        if not all(_TOKEN.fullmatch(name) for name in value):
            # The name is not repeated: a secret put where a name goes would reach the log.
            raise ValueError("a header name is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~ only)")
        return value


ServerConfig = StdioServer | HttpServer


class GatewayConfig(BaseModel):
    """Every enabled server of one config file, in file order."""

    model_config = ConfigDict(frozen=True)

    path: Path | None = None
    servers: dict[str, ServerConfig] = Field(default_factory=dict)


# -- reading --------------------------------------------------------------------------------------------------------


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """Read, expand and validate a config file. `environ` defaults to the process environment."""
    try:
        # A byte order mark (Windows editors) is not an error.
        text = read_small_file(path, MAX_CONFIG_BYTES).decode("utf-8-sig")
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start:exc.start + 1]!r}); "
                          "save the file as UTF-8") from None
    except ValueError as exc:  # not a regular file, or too large
        raise ConfigError(f"{path}: {exc}") from None
    try:
        data = parse_json(text)
        config = parse_config(data, environ=os.environ if environ is None else environ, path=path)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from exc
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to read (objects, arrays or ${{...:-...}} defaults)") from None
    for name, server in config.servers.items():
        if isinstance(server, StdioServer) and server.cwd is not None and not server.cwd.is_dir():
            raise ConfigError(f"{path}: server {name!r}, field cwd: {server.cwd} is not a directory")
    return config


def parse_config(data: Any, *, environ: Mapping[str, str], path: Path | None = None) -> GatewayConfig:
    """Validate already-parsed JSON. Relative `cwd` and `envFile` resolve against the file's directory."""
    where = str(path) if path is not None else "config"
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a JSON object with \"mcpServers\" or \"servers\"")
    sections = [key for key in ("mcpServers", "servers") if key in data]
    if not sections:
        raise ConfigError(f"{where}: no \"mcpServers\" (Claude Desktop, Cursor) or \"servers\" (VS Code) object")
    entries: dict[str, Any] = {}
    for section in sections:
        block = data[section]
        if not isinstance(block, dict):
            raise ConfigError(f"{where}: \"{section}\" must be an object of servers by name")
        repeated = getattr(block, "repeated", ())  # parse_json's JsonObject: json kept the last of each alone
        if repeated:
            raise ConfigError(f"{where}: server {repeated[0]!r} is defined twice")
        for name, raw in block.items():
            if name in entries:
                raise ConfigError(f"{where}: server {name!r} is defined twice")
            entries[name] = raw
    base = path.parent if path is not None else Path.cwd()
    servers: dict[str, ServerConfig] = {}
    prefixes: dict[str, str] = {}
    budget = Budget()
    for name, raw in entries.items():
        if _disabled_alone(where, name, raw, environ, base, budget):
            continue  # not started, so its variables need not be set either
        server = _parse_server(where, name, raw, environ, base, budget)
        other = prefixes.setdefault(server.tool_prefix, name)
        if other != name:
            raise ConfigError(f"{where}: servers {other!r} and {name!r} would share the tool-name prefix "
                              f"{server.tool_prefix!r}; rename one or set \"prefix\"")
        servers[name] = server
    return GatewayConfig(path=path, servers=servers)


def _disabled_alone(where: str, name: str, raw: Any, environ: Mapping[str, str], base: Path, budget: Budget) -> bool:
    """Whether the entry's `disabled`, read by itself, says it is: `"true"`, 1 or `"${OFF}"` as much as `true`. The
    rest of the entry is not read, so a disabled server's unset variables refuse nothing (before, only the literal
    `true` was looked at here, and `"true"` with an unset variable in `env` refused the whole config). A `disabled`
    that cannot be read by itself is left to the whole entry's validation, which names what is wrong."""
    if not isinstance(raw, dict) or "disabled" not in raw:
        return False
    if raw["disabled"] is True:
        return True
    try:
        value = expand_tree(raw["disabled"], f"{where}: server {name!r}", environ, workspace_of(base), budget)
        return _DISABLED.validate_python(value) is True
    except (ConfigError, ValidationError):
        return False


_DISABLED: TypeAdapter[bool] = TypeAdapter(bool)


def _parse_server(where: str, name: str, raw: Any, environ: Mapping[str, str], base: Path,
                  budget: Budget) -> ServerConfig:
    here = f"{where}: server {name!r}"
    if not name.strip():
        raise ConfigError(f"{where}: a server has an empty name")
    if not isinstance(raw, dict):
        raise ConfigError(f"{here}: expected an object with \"command\" (stdio) or \"url\" (HTTP)")
    expanded = expand_tree(raw, here, environ, workspace_of(base), budget)
    kind = _transport(here, expanded)
    model: type[StdioServer] | type[HttpServer] = StdioServer if kind == "stdio" else HttpServer
    known = {f for f in model.model_fields} | {to_camel(f) for f in model.model_fields}
    unknown = sorted(set(expanded) - known - _OTHER_CLIENTS_KEYS)
    if unknown:
        logger.warning("%s: ignoring unknown keys %s", here, ", ".join(unknown))
    fields = {key: value for key, value in expanded.items() if key != "name"} | {"name": name, "type": kind}
    try:
        server = model.model_validate(fields)
    except ValidationError as exc:
        raise ConfigError(f"{here}: " + "; ".join(_describe(error) for error in exc.errors())) from exc
    if isinstance(server, StdioServer):
        server = _resolve_stdio_paths(here, server, base, environ, budget)
    return server


def _transport(here: str, raw: dict[str, Any]) -> Literal["stdio", "http", "sse"]:
    declared = raw.get("type")
    if "command" in raw and "url" in raw:
        raise ConfigError(f"{here}: has both \"command\" and \"url\"; a server is either a process or a URL")
    if declared is None:
        if "command" in raw:
            return "stdio"
        if "url" in raw:
            # Cursor and others infer the transport; a path ending in /sse is the old HTTP+SSE transport by convention.
            return "sse" if str(raw["url"]).rstrip("/").endswith("/sse") else "http"
        raise ConfigError(f"{here}: needs \"command\" (a stdio server) or \"url\" (an HTTP server)")
    kinds = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamablehttp": "http",
             "streamable_http": "http", "sse": "sse"}
    kind = kinds.get(str(declared).lower())
    if kind is None:
        raise ConfigError(f"{here}, field type: {declared!r} is not one of stdio, http (streamable HTTP), sse")
    if kind == "stdio" and "command" not in raw:
        raise ConfigError(f"{here}: type stdio needs \"command\"")
    if kind != "stdio" and "url" not in raw:
        raise ConfigError(f"{here}: type {declared} needs \"url\"")
    return kind  # type: ignore[return-value]


def _resolve_stdio_paths(here: str, server: StdioServer, base: Path, environ: Mapping[str, str],
                         budget: Budget) -> StdioServer:
    updates: dict[str, Any] = {}
    if server.cwd is not None and not server.cwd.is_absolute():
        updates["cwd"] = base / server.cwd
    if server.env_file is not None:
        env_file = server.env_file if server.env_file.is_absolute() else base / server.env_file
        if not env_file.is_file():
            raise ConfigError(f"{here}, field envFile: {env_file} is not a file")
        try:
            values = read_env_file(env_file, environ)
            budget.spend(sum(len(value or "") for value in values.values()))  # each server reads its file anew
        except ValueError as exc:  # a ConfigError of the file, or the budget spent
            raise ConfigError(f"{here}, field envFile: {exc}") from None
        loaded = {key: value for key, value in values.items() if value is not None}
        if any("\0" in text for item in loaded.items() for text in item):
            raise ConfigError(f"{here}, field envFile: {env_file} holds a NUL character, which no variable can carry")
        updates["env"] = loaded | server.env  # the entry's own env wins over the file
        updates["env_file"] = env_file
    return server.model_copy(update=updates) if updates else server


def _describe(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "entry"
    return f"field {where}: {error['msg']}"
