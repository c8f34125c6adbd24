"""The assembly root: settings → sources → catalog → server → transport, put together here and nowhere else.

The CLI calls these, one each; nothing below the CLI imports this module."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterator, Awaitable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerMiddleware

from .audit import AuditLog, open_audit
from .catalog import Catalog, Group, suggest
from .errors import ConfigError
from .heap import settle
from .identity import Principal, named_principal
from .learning.log import UsageLog
from .learning.start import open_usage
from .logsink import queued_stderr
from .policy.file import PolicyFile
from .policy.limits import MemoryRateLimiter, RateLimiter, RedisRateLimiter
from .policy.rules import spaced_names
from .safetext import clip, redact_secrets_in_logs, redact_session_ids, redact_url
from .sdk import OpenTelemetryMiddleware
from .search import LiveIndex
from .search.config import configured_ranking
from .server.access import Gate
from .server.core import LazyServer
from .server.metatools import META_TOOL_NAMES
from .server.metrics import Metrics
from .server.middleware.access import AccessMiddleware
from .server.middleware.audit import AuditMiddleware
from .server.middleware.metrics import MetricsMiddleware
from .server.middleware.origin import OriginMiddleware
from .server.middleware.params import ParamsMiddleware
from .server.middleware.principal import PrincipalMiddleware
from .server.middleware.rate_limit import RateLimitMiddleware
from .server.middleware.shared_sessions import SharedSessions
from .server.parts import ServerParts
from .server.passthrough import PassThrough, SessionClients, UpstreamFeatures
from .server.registry import SessionRegistry, session_key
from .server.subscriptions import LocalSubscriptionBus
from .settings import Settings
from .sources import Source, StaticSource
from .sources.functions import function_tool
from .state.sessions import MemorySessionStore, SessionStore
from .telemetry import configure_tracing

if TYPE_CHECKING:
    from .state.redis import RedisState

__all__ = ["build_server", "bundled_catalog", "check_replicas_agree", "configure_logging", "granted_files_root",
           "open_catalog", "open_server", "open_state", "replica_fingerprint", "serve", "sources_for"]

logger = logging.getLogger("lazytools")

_BUNDLED_ANNOTATIONS = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)


GATEWAY_LOGGER = "lazytools.sources.gateway"
"""The gateway's own log lines: each upstream server coming up (INFO) or failing (WARNING, with its stderr's end)."""

_HTTP_CLIENT_LOGGERS = ("httpx2", "httpx")
"""The HTTP client libraries' loggers: they log every request they send at INFO ("HTTP Request: POST <url>")."""


def configure_logging(level: str, *, progress: bool = False) -> None:
    """Logs go to stderr: on stdio, stdout carries protocol messages and nothing else.

    Credentials are redacted from every record (`redact_secrets_in_logs`), and the HTTP client's line per request
    to an upstream shows only at DEBUG: at INFO it would be most of the log, one line per call or notification.
    `progress` shows the gateway's start-up at INFO whatever `level` is: `lazytools search` and `surface` wait
    for every upstream (npx and uvx downloads, docker pulls: up to the connect timeout) and would otherwise print
    nothing meanwhile. Upstreams' own stderr lines stay at `level`."""
    root = logging.getLogger()
    if not root.handlers:  # as logging.basicConfig: a process that set up its own logging keeps it
        # Written by a thread: a stderr that its reader leaves full must not stop the event loop (`logsink`).
        root.addHandler(queued_stderr(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")))
        root.setLevel(level)
    if progress and logging.getLogger().getEffectiveLevel() > logging.INFO:
        logging.getLogger(GATEWAY_LOGGER).setLevel(logging.INFO)
    redact_session_ids()
    redact_secrets_in_logs()
    for name in _HTTP_CLIENT_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET if level.upper() == "DEBUG" else logging.WARNING)


def bundled_catalog(files_root: Path | None, catalog: Catalog | None = None, *, ungranted: str = "") -> Catalog:
    """The example catalog shipped with lazytools (`examples/`), its file tools confined to `files_root` (None: no
    folder granted, and each file tool says `ungranted`)."""
    import lazytools_examples

    catalog = catalog if catalog is not None else Catalog()
    if files_root is not None and not files_root.is_dir():  # a typo'd or unexpanded path in a client's config
        state = "does not exist" if not files_root.exists() else "is not a directory"
        raise ConfigError(f"files root {files_root} {state} (--files-root / LAZYTOOLS_FILES_ROOT)")
    for category, functions in lazytools_examples.build_catalog(files_root, ungranted=ungranted).items():
        group = Group(category, lazytools_examples.CATEGORY_SUMMARIES.get(category, ""))
        entries = [function_tool(fn, group=category, annotations=_BUNDLED_ANNOTATIONS) for fn in functions]
        catalog.set_group(group, entries)
    return catalog


def granted_files_root(settings: Settings) -> tuple[Path | None, str]:
    """The folder the bundled file tools may read, or None and why not: a root nobody set (the working directory)
    that is the filesystem's root or the home folder (or above it) is no grant. Claude Desktop starts its servers
    in `/`, so a config without `--files-root` served every file the user may read. A root set explicitly, even
    `/`, is the user's choice."""
    root = settings.files_root.resolve()
    if "files_root" in settings.model_fields_set:
        return root, ""
    if root != Path(root.anchor) and not any(home == root or root in home.parents for home in _homes()):
        return root, ""
    why = (f"No folder was granted to the file tools: lazytools was started in {root} without --files-root, and "
           "that is not read unasked. Start it with --files-root DIR (or LAZYTOOLS_FILES_ROOT) naming the folder "
           "the file tools may read.")
    logger.warning("the bundled file tools read nothing: lazytools runs in %s and no --files-root (or "
                   "LAZYTOOLS_FILES_ROOT) names a folder for them", root)
    return None, why


def _homes() -> set[Path]:
    """The home folder as HOME names it and as the user database does: HOME may be empty (Path.home() is then `/`)
    or name another folder (a client's sandbox), and the user's own home folder was then read unasked."""
    homes = {Path.home().resolve()}
    try:
        import pwd  # POSIX only

        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir).resolve())
    except (ImportError, KeyError):  # Windows, or a uid the database does not know
        pass
    return homes


def sources_for(settings: Settings) -> list[Source]:
    """The sources these settings name, in the order they fill the catalog."""
    sources: list[Source] = []
    if settings.tools_jsonl is not None:
        from .sources.jsonl import JsonlSource

        # A JSONL catalog takes the place of the bundled examples; upstream servers still join it.
        sources.append(JsonlSource(settings.tools_jsonl))
    elif settings.config is None:
        files_root, ungranted = granted_files_root(settings)
        sources.append(StaticSource(lambda catalog: bundled_catalog(files_root, catalog, ungranted=ungranted)))
    if settings.config is not None:
        from .sources.gateway.gateway import GatewaySource

        sources.append(GatewaySource(settings))
    return sources


@asynccontextmanager
async def open_catalog(settings: Settings, *, down: list[str] | None = None) -> AsyncIterator[Catalog]:
    """The catalog for these settings, with its sources connected for as long as the context is open; `down`, if
    given, gets "name (why)" for each configured upstream server that is not serving once they have all started."""
    async with _open_sources(settings, down) as (catalog, _front):
        yield catalog


@asynccontextmanager
async def _open_sources(settings: Settings, down: list[str] | None = None
                        ) -> AsyncIterator[tuple[Catalog, UpstreamFeatures | None]]:
    """The catalog, and the front a source exposes, if one does (a gateway's prompts, resources, client side)."""
    if settings.semantic:
        from .search.embedders import check_embedder

        check_embedder(settings.embedder)
    catalog = Catalog()
    front: UpstreamFeatures | None = None
    async with AsyncExitStack() as stack:
        for source in sources_for(settings):
            opened = await stack.enter_async_context(source.open(catalog))
            exposed = getattr(opened, "front", None)
            if isinstance(exposed, UpstreamFeatures):
                front = exposed
            if down is not None:
                # The reason without the server's stderr: those lines stay on stderr, in the warning naming it.
                down.extend(f"{u.name} ({(u.error or 'still starting').partition(' (its stderr ended with')[0]})"
                            for u in getattr(opened, "down", ()))
        yield catalog, front


def build_server(catalog: Catalog, settings: Settings, *, store: SessionStore | None = None,
                 front: UpstreamFeatures | None = None, audit: AuditLog | None = None, policy: PolicyFile | None = None,
                 limiter: RateLimiter | None = None, usage: UsageLog | None = None) -> LazyServer:
    """The server, every part of it built here; `policy`, `limiter` and `usage` default to what `settings` name (a
    policy file, a rate limit in memory, the usage log), a caller may pass its own (a Redis limiter, the log
    `open_server` opened)."""
    reserved = META_TOOL_NAMES & set(catalog.names())
    if reserved:
        raise ConfigError(f"Tool names {sorted(reserved)} are reserved for lazytools' meta-tools")
    if policy is None and settings.policy is not None:
        policy = PolicyFile(settings.policy, max_bytes=settings.policy_max_bytes, settle=settings.policy_settle)
    if policy is not None and settings.auth_issuer is not None and settings.auth_groups_format == "space":
        spaced = spaced_names(policy.current().spec)
        if spaced:
            logger.warning("the policy names %s, but LAZYTOOLS_AUTH_GROUPS_FORMAT=space splits the claim on spaces: "
                           "those never match, and each word is a group of its own (use list or comma)",
                           ", ".join(clip(name) for name in spaced[:10]))
    if limiter is None and (settings.rate_limit or policy is not None):
        limiter = MemoryRateLimiter()
    # Metrics are served over HTTP only (GET /metrics): over stdio nobody could read them, so nothing counts them.
    metrics = Metrics() if settings.metrics and settings.transport == "http" else None
    local = named_principal(settings.stdio_user, "stdio")
    gate = Gate(catalog, policy, local)
    sessions = SessionRegistry(store if store is not None else MemorySessionStore(), settings, gate, front=front,
                               metrics=metrics)
    passing = None
    if front is not None:
        passing = PassThrough(front, sessions.session_for, gate.access, gate.refused)
        front.attach(SessionClients(sessions.store))
        front.check_updates(sessions.may_hear)
    limited = RateLimitMiddleware(limiter, gate, default=settings.rate_limit) if limiter is not None else None
    index = LiveIndex(catalog, semantic=settings.semantic, embedder=settings.embedder,
                      cache_dir=settings.embedding_cache_dir(), config=configured_ranking(settings.search_ranking))
    parts = ServerParts(
        catalog=catalog, settings=settings, sessions=sessions, gate=gate, index=index, events=LocalSubscriptionBus(),
        middleware=_middleware(catalog, gate, local, front, sessions, policy=policy, metrics=metrics, audit=audit,
                               limited=limited),
        always_available=_checked_pinned(catalog, settings.always_available_tools), front=front, passing=passing,
        # History is read and records are written on the log's own thread; search reads its prior.
        usage=usage if usage is not None else open_usage(settings), metrics=metrics, limited=limited)
    server = LazyServer(parts)
    if metrics is not None:
        metrics.watch(server)
    return server


def _middleware(catalog: Catalog, gate: Gate, local: Principal, front: UpstreamFeatures | None,
                sessions: SessionRegistry, *, policy: PolicyFile | None, metrics: Metrics | None,
                audit: AuditLog | None, limited: RateLimitMiddleware | None) -> list[ServerMiddleware[Any]]:
    """Around every request, outermost first (server/middleware/): params of the wrong shape answered naming the
    parameter at fault (outside the rest, which still see the SDK's own error), the SDK's span, who the request
    acts for, what they may see, metrics, the audit line that names them, their rate limit (a refused call is audited too), and
    innermost, for requests an upstream may serve, their origin, so upstream progress, logs and requests reach the
    client that asked. A layer whose feature is off is left out: each one costs every request its await and its
    bookkeeping."""

    def group_of(tool: str) -> str | None:
        """The group of a tool the request's principal may call; None for any other name (metrics)."""
        visible = gate.access().catalog
        return visible.get(tool).group if tool in visible else None

    def upstream_of(method: str, target: str) -> str | None:
        """The server (or in-process group) that serves a tool, prompt or resource; None when unknown."""
        if method == "prompts/get":
            return front.prompt_server(target) if front is not None else None
        if method == "resources/read":
            return front.uri_server(target) if front is not None else None
        return catalog.get(target).group if target in catalog else None

    layers: list[ServerMiddleware[Any]] = [ParamsMiddleware(), OpenTelemetryMiddleware(), PrincipalMiddleware(local)]
    if policy is not None:  # without a policy every principal's Access is the whole catalog, ready at once
        layers.append(AccessMiddleware(gate))
    if metrics is not None:  # before the audit and the limit: it counts what they refuse
        layers.append(MetricsMiddleware(metrics, server_of=group_of, session_of=session_key))
    if audit is not None:
        layers.append(AuditMiddleware(audit, upstream_of=upstream_of, session_of=session_key))
    if limited is not None:
        layers.append(limited)
    if front is not None:  # only upstreams read a request's origin (in-process tools have no use for it)
        layers.append(OriginMiddleware(sessions.session_for))
    return layers


def _checked_pinned(catalog: Catalog, names: Sequence[str]) -> list[str]:
    """ALWAYS_AVAILABLE_TOOLS, each a tool of the catalog or of a group not serving yet (else a ConfigError)."""
    # A group without tools is not serving yet (an upstream that failed to start).
    waiting = [group.name for group in catalog.groups if not catalog.in_group(group.name)]
    for name in names:
        if name in META_TOOL_NAMES:
            raise ConfigError(f"ALWAYS_AVAILABLE_TOOLS: {name!r} is a meta-tool and is always listed")
        if name not in catalog:
            close = suggest(name, catalog.names())
            hint = f" Closest: {', '.join(close)}." if close else ""
            if not waiting:
                raise ConfigError(f"ALWAYS_AVAILABLE_TOOLS names an unknown tool {name!r}.{hint}")
            logger.warning("ALWAYS_AVAILABLE_TOOLS names %r, which no server serves yet (not serving: %s); "
                           "it is listed once it appears.%s", name, ", ".join(waiting), hint)
    return list(dict.fromkeys(names))


@asynccontextmanager
async def open_server(settings: Settings, *, state: RedisState | None = None,
                      down: list[str] | None = None) -> AsyncIterator[LazyServer]:
    """The server for `settings`; with the replicas' shared `state`, rate limits are counted in its Redis (every
    replica shares them) on its connection pool, else in this process. `down` as for `open_catalog`."""
    audit = open_audit(settings.audit, values=settings.audit_arguments)
    limiter: RateLimiter | None = None
    if state is not None:
        limiter = RedisRateLimiter(state.client, prefix=settings.state_prefix)
    try:
        async with _open_sources(settings, down) as (catalog, front):
            # Learning from use is opened here and handed in: search reads it only through search.prior.Prior.
            server = build_server(catalog, settings, front=front, audit=audit, limiter=limiter,
                                  usage=open_usage(settings))
            try:
                yield server
            finally:
                with anyio.CancelScope(shield=True):  # the process must not exit inside a model's native code
                    await anyio.to_thread.run_sync(server.index.stop)
    finally:
        if audit is not None:
            audit.close()  # every line written before the process ends


INTERRUPTED = 130
"""The exit status after Ctrl-C (SIGINT), as a shell expects of an interrupted command (128 + the signal)."""
TERMINATED = 143
"""The exit status after SIGTERM (128 + 15), as a shell reports a command the signal ended (systemd: list it in
`SuccessExitStatus=`)."""


async def serve(settings: Settings) -> int:
    """Serve until the client leaves or a signal stops it; the exit status (INTERRUPTED after Ctrl-C, TERMINATED
    after SIGTERM, else 0)."""
    flush = configure_tracing()  # spans exported over OTLP when asked (telemetry.py), flushed at the end
    try:
        return await _serve(settings)
    finally:
        if flush is not None:
            flush()


async def _serve(settings: Settings) -> int:
    failed: Exception | None = None
    stopped_by: int | None = None
    held = _HeldSignals()
    with anyio.CancelScope() as whole:
        async with anyio.create_task_group() as tg:
            # Start-up (upstreams answering initialize, npx downloads) can take up to the connect timeout; a
            # SIGTERM or Ctrl-C then ends it cleanly too, with every upstream already started stopped.
            watching = await tg.start(_cancel_on_signal, whole) if _in_main_thread() else None
            try:
                async with AsyncExitStack() as stack:
                    stack.callback(held.release)  # last, once every upstream is stopped
                    # Replicas: sessions in Redis (docs/scaling.md), and the rate limits on the same pool.
                    state = await stack.enter_async_context(open_state(settings)) \
                        if settings.transport == "http" and settings.state_url is not None else None
                    server = await stack.enter_async_context(open_server(settings, state=state))
                    stack.callback(held.hold)  # first: a signal during the stop waits for the upstreams' end
                    await server.index.ready()  # built before the first client asks, not during its first search
                    settle()  # the collector no longer walks what start-up built, on every full collection
                    if watching is not None:
                        await watching.stop()  # the transports handle signals from here on
                    stopped_by = await _serve_on(server, settings, state)
            except Exception as exc:  # re-raised as itself below, not inside the task group's ExceptionGroup
                failed = exc
            finally:
                if watching is not None:
                    watching.scope.cancel()
    if failed is not None:
        raise failed
    if watching is not None and watching.signum is not None:
        stopped_by = watching.signum
    if stopped_by is None and held.received:  # the client closed stdin, then signalled while we stopped
        stopped_by = held.received[0]
    exits: dict[int, int] = {signal.SIGINT: INTERRUPTED, signal.SIGTERM: TERMINATED}
    return exits.get(stopped_by, 0) if stopped_by is not None else 0


async def _serve_on(server: LazyServer, settings: Settings, state: RedisState | None) -> int | None:
    """Serve on the configured transport; the signal that stopped it, if one did."""
    if settings.transport == "http":
        from .transports.http import serve_http

        logger.info("%s", _in_force(server, settings))
        if state is None:
            return await _until_stopped(serve_http(server, settings))
        SharedSessions(server, state).install()
        async with anyio.create_task_group() as tg:
            tg.start_soon(_keep_agreeing, state, server)
            stopped = await _until_stopped(serve_http(server, settings, state=state))
            tg.cancel_scope.cancel()
        return stopped
    from .transports.stdio import serve_stdio

    if settings.state_url is not None:
        logger.warning("LAZYTOOLS_STATE_URL is for HTTP replicas; a stdio session lives in this process")
    return await _until_signalled(serve_stdio(server), _in_force(server, settings))


def _in_force(server: LazyServer, settings: Settings) -> str:
    """The start-up block: what serves and under which rules, so an operator sees a setting that did not take (a
    variable not exported, a typo'd path) in the first lines, not at the first refused session."""
    audit = settings.audit.strip()
    audit_text = "off" if audit.lower() in ("", "off", "false", "no", "0") else audit
    if settings.state_url is not None and settings.transport == "http":
        sessions = f"shared in Redis at {redact_url(settings.state_url.get_secret_value())}"
    else:
        sessions = "in this process"
    limit = f"{settings.rate_limit} calls a minute per principal" if settings.rate_limit else "none"
    if settings.policy is not None:
        limit += ", and the calls_per_minute of the policy's rules"
    policy = str(settings.policy) if settings.policy is not None else "none: everyone may use everything"
    lines = [f"serving {len(server.catalog)} tools over {settings.transport}",
             f"  policy (LAZYTOOLS_POLICY): {policy}",
             f"  audit (LAZYTOOLS_AUDIT): {audit_text}",
             f"  sessions (LAZYTOOLS_STATE_URL): {sessions}",
             f"  rate limit (LAZYTOOLS_RATE_LIMIT): {limit}"]
    return "\n".join(lines)


def _shaping(server: LazyServer) -> dict[str, Any]:
    """What every replica sharing sessions must agree on, by the names a user sets: the settings that shape a
    session's record, and the tools it may name (their count and a digest: thousands of names stay out of Redis)."""
    settings = server.settings
    names = sorted(server.catalog.names())
    digest = hashlib.sha256(json.dumps(names).encode()).hexdigest()[:12]
    return {"LAZYTOOLS_MAX_ENABLED": settings.max_enabled,
            "LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS": ",".join(sorted(settings.always_available_tools)),
            "LAZYTOOLS_SESSION_IDLE_TIMEOUT": settings.session_idle_timeout,
            "tools": f"{len(names)} tools, digest {digest}"}


def replica_fingerprint(server: LazyServer) -> str:
    """A digest of `_shaping`: equal on replicas that agree."""
    return hashlib.sha256(json.dumps(_shaping(server), sort_keys=True).encode()).hexdigest()[:16]


def _this_replica(settings: Settings) -> str:
    return f"{socket.gethostname()}:{settings.port} (pid {os.getpid()})"


AGREE_EVERY = 60.0
"""Seconds between a replica's records of its fingerprint: another replica's counts as running for three times that."""


async def check_replicas_agree(state: RedisState, server: LazyServer, warned: set[str] | None = None, *,
                               replica: str | None = None) -> None:
    """Warn when a running replica sharing the store has other settings or tools: sessions they share would change
    as they move between them (one trims another's enabled tools, a tool missing here is dropped). Each replica
    records who it is (`replica`: host, port, pid) and what it runs with every `AGREE_EVERY` seconds, so every
    running replica is compared, whichever started first; each other replica and fingerprint is warned about once
    (`warned`), naming that replica and the settings that differ. A warning, not a refusal: a rolling upgrade that
    changes settings passes through this state on purpose."""
    mine, fingerprint = _shaping(server), replica_fingerprint(server)
    me = replica if replica is not None else _this_replica(server.settings)
    record = json.dumps({"replica": me, "fingerprint": fingerprint, "settings": mine}, sort_keys=True)
    warned = set() if warned is None else warned
    for theirs in await state.agree(record, alive=AGREE_EVERY * 3):
        name, their_print, their_settings = _their_record(theirs)
        if their_print == fingerprint or f"{name} {their_print}" in warned:
            continue
        warned.add(f"{name} {their_print}")
        differing = [f"{key}={clip(str(their_settings[key]), 200)} there, {mine[key]} here" for key in mine
                     if key in their_settings and their_settings[key] != mine[key]]
        logger.warning("REPLICAS DISAGREE: replica %s, sharing LAZYTOOLS_STATE_URL, runs with %s (fingerprint %s, here "
                       "%s on %s); sessions moving between them change. Give every replica the same settings and "
                       "configuration (docs/scaling.md)", clip(name, 200),
                       "; ".join(differing) or "other settings or tools", clip(their_print, 40), fingerprint, me)


def _their_record(text: str) -> tuple[str, str, dict[str, Any]]:
    """(replica, fingerprint, settings) of another replica's record; a bare fingerprint (a replica of an older
    lazytools, or a record someone else wrote) names no replica and no settings."""
    try:
        parsed = json.loads(text)
        if isinstance(parsed, dict) and isinstance(parsed.get("settings"), dict):
            return str(parsed.get("replica")), str(parsed.get("fingerprint")), parsed["settings"]
    except (ValueError, RecursionError):
        pass
    return "(unnamed)", text, {}


async def _keep_agreeing(state: RedisState, server: LazyServer) -> None:
    warned: set[str] = set()
    while True:
        await check_replicas_agree(state, server, warned)
        await anyio.sleep(AGREE_EVERY)


@asynccontextmanager
async def open_state(settings: Settings) -> AsyncIterator[RedisState]:
    """The shared session store of `settings.state_url`, listening for its messages while open."""
    from .state.redis import RedisState

    assert settings.state_url is not None
    state = RedisState(settings.state_url.get_secret_value(), ttl=settings.session_idle_timeout,
                       timeout=settings.state_timeout, prefix=settings.state_prefix,
                       local_copy=settings.state_local_copy, heartbeat=settings.replica_heartbeat,
                       liveness_ttl=settings.replica_liveness_ttl)
    async with state.running():
        if not await state.ping():  # served anyway: /readyz says 503 until Redis answers
            logger.warning("the session store (LAZYTOOLS_STATE_URL) does not answer yet (%s); /readyz is 503 until "
                           "it does", state.last_error)
        yield state


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()  # signal handlers belong to the main thread


class _Watch:
    """A running signal watcher that can be stopped, and waited for until its handlers are gone."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.gone = anyio.Event()
        self.signum: int | None = None

    async def stop(self) -> None:
        self.scope.cancel()
        await self.gone.wait()


async def _cancel_on_signal(target: anyio.CancelScope, *,
                            task_status: anyio.abc.TaskStatus[_Watch] = anyio.TASK_STATUS_IGNORED) -> None:
    watch = _Watch()
    try:
        with watch.scope, anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started(watch)
            async for signum in signals:
                logger.info("received %s while starting, shutting down", signal.Signals(signum).name)
                watch.signum = signum
                target.cancel()
                return
    finally:
        watch.gone.set()


class _HeldSignals:
    """SIGTERM and SIGINT noted, not acted on, while the gateway stops its upstream servers.

    A transport's own handlers are gone once it stops serving (stdio: the end of stdin). A client such as the SDK's
    stdio client closes stdin, then sends SIGTERM about 2 s later, while the gateway is still in an upstream's grace
    period (stdin closed, 2 s, SIGTERM, 2 s, SIGKILL); with the default action the process died there and left that
    upstream running, orphaned. Held, the signal only sets the exit status; the stop is bounded already."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}

    def hold(self) -> None:
        if not _in_main_thread() or self._previous:
            return
        logger.info("stopping the upstream servers")
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._note)

    def _note(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)  # only noted: logging from a signal handler could deadlock on its lock

    def release(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()
        if self.received:
            logger.info("received %s while stopping the upstream servers; they are stopped",
                        signal.Signals(self.received[0]).name)


async def _until_stopped(serving: Awaitable[None]) -> int | None:
    """Run `serving` (uvicorn) until it ends or SIGTERM/SIGINT arrives; either way the caller's cleanup then runs.
    Returns the signal that stopped it, if one did.

    uvicorn handles both signals while it serves, stops gracefully, then raises the signal again for the handler
    that was there before. With the default actions the process would die right there (SIGTERM), before the
    gateway stops its upstream servers (one that ignores the end of its stdin would outlive us), or exit 130 or 0
    depending on the event loop (SIGINT: asyncio's runner and uvloop differ). These handlers end `serving`
    instead, so the exit is clean and its status the same as on stdio."""
    if not _in_main_thread():
        await serving  # signal handlers belong to the main thread; uvicorn leaves signals alone elsewhere too
        return None
    loop = asyncio.get_running_loop()
    received: list[int] = []
    with anyio.CancelScope() as scope:

        def stop(signum: int) -> None:
            logger.info("received %s, shutting down", signal.Signals(signum).name)
            scope.cancel()

        def on_signal(signum: int, frame: FrameType | None) -> None:
            # Noted at once: uvicorn raises the signal again as it returns, before `stop` gets its turn; that second
            # delivery of the same stop is neither logged nor acted on again.
            received.append(signum)
            if len(received) == 1:
                loop.call_soon_threadsafe(stop, signum)  # on the loop's own turn, as asyncio.Runner handles SIGINT

        previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            await serving
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
    return received[0] if received else None


async def _until_signalled(serving: Awaitable[None], started: str) -> int | None:
    """Run `serving` until it ends or SIGTERM/SIGINT arrives; either way the caller's cleanup then runs uncancelled.
    Returns the signal that stopped it, if one did.

    `started` is logged once the signals are ours, so whoever waits for it may signal at once."""
    received: list[int] = []
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:

            async def stop_on_signal(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    task_status.started()
                    async for signum in signals:
                        logger.info("received %s, shutting down", signal.Signals(signum).name)
                        received.append(signum)
                        scope.cancel()
                        return

            await tg.start(stop_on_signal)
            logger.info("%s", started)
            await serving
            tg.cancel_scope.cancel()
    return received[0] if received else None
