"""The gateway: every upstream server of the config file, connected at once, filling one catalog group each."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import anyio

from ...auth.exchange import TokenExchanger
from ...auth.fetch import Fetcher
from ...auth.issuer import Issuer
from ...catalog import Catalog
from ...errors import ConfigError
from ...safetext import clip, redact_secrets_in_logs
from ...settings import CHAIN_VARIABLE, Settings
from .config import GatewayConfig, HttpServer, Identity, load_config
from .credentials import UserUpstreams
from .front import Front
from .lifecycle import Backoff
from .log_levels import LogLevels
from .relay import Relay
from .scoped import SessionUpstreams
from .upstream import Hooks, Upstream

__all__ = ["Backoff", "Gateway", "GatewaySource", "open_gateway"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Gateway:
    """The upstreams of an open gateway, in config order."""

    upstreams: list[Upstream]
    front: Front
    """Their prompts and resources, and how they reach client sessions: the server serves it."""

    def __getitem__(self, name: str) -> Upstream:
        for upstream in self.upstreams:
            if upstream.name == name:
                return upstream
        raise KeyError(name)

    @property
    def serving(self) -> list[Upstream]:
        return [u for u in self.upstreams if u.state == "serving"]

    @property
    def down(self) -> list[Upstream]:
        return [u for u in self.upstreams if u.state != "serving"]


@asynccontextmanager
async def open_gateway(
    settings: Settings,
    catalog: Catalog,
    *,
    config: GatewayConfig | None = None,
    backoff: Backoff | None = None,
    one_by_one: bool = False,
) -> AsyncIterator[Gateway]:
    """Connect every upstream of `settings.config` (or `config`) concurrently and keep them connected.

    Returns once each upstream has connected or failed its first attempt (each bounded by `connect_timeout`).
    Failures are logged and retried in the background; the others serve. `one_by_one` connects them in turn
    instead, for the start-up benchmark.
    """
    redact_secrets_in_logs()  # an upstream's URL or headers may carry its credentials
    if config is None:
        if settings.config is None:
            raise ConfigError("The gateway needs a config file (--config or LAZYTOOLS_CONFIG)")
        config = load_config(settings.config)
    chain = _fronted_chain(config)
    if not config.servers:
        logger.warning("%s lists no enabled servers", config.path or "the config")
    relay = Relay()
    # Filled below, once what each upstream tells and routes to exists; the front and its parts hold this list.
    upstreams: list[Upstream] = []
    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        levels = LogLevels(upstreams, relay)
        scoped = SessionUpstreams(tg, settings, relay, backoff=backoff or Backoff(), chain=chain,
                                  limit=settings.max_session_upstreams, level_of=levels.of)
        users = UserUpstreams(scoped, settings, _exchanger(settings, config))
        front = Front(upstreams, relay, scoped, levels)
        for server in config.servers.values():
            per_user = isinstance(server, HttpServer) and server.identity is not None
            hooks = Hooks(per_session=scoped.instance if server.scope == "session" else None,
                          per_user=users.instance if per_user else None,
                          offerings_changed=front.offerings_changed,
                          resource_updated=front.subscriptions.resource_updated, wanted_level=levels.shared)
            upstreams.append(Upstream(server, catalog=catalog, settings=settings, backoff=backoff or Backoff(),
                                      chain=chain, relay=relay, hooks=hooks))
        # Each first attempt has its own connect_timeout deadline; stopping a hung process after it can take a few
        # more seconds, which start-up need not wait for.
        if upstreams:
            logger.info("starting %d upstream servers (%s), each within %g s", len(upstreams),
                        clip(", ".join(upstream.name for upstream in upstreams), 400), settings.connect_timeout)
        with anyio.move_on_after(settings.connect_timeout * (len(upstreams) if one_by_one else 1) + 0.5):
            for upstream in upstreams:
                tg.start_soon(upstream.run, name=f"upstream {upstream.name}")
                if one_by_one:
                    await upstream.started.wait()
            for upstream in upstreams:
                await upstream.started.wait()
        gateway = Gateway(upstreams, front)
        _log_start(gateway, catalog)
        try:
            yield gateway
        except Exception as exc:
            # Raised by the caller's block (a ConfigError from build_server, say): re-raised as itself below, not
            # inside the ExceptionGroup a task group would wrap it in, so callers can catch what they expect.
            failed = exc
        finally:
            tg.cancel_scope.cancel()
    if failed is not None:
        raise failed


@dataclass(frozen=True, slots=True)
class GatewaySource:
    """The upstream servers of `settings.config` as a `Source`."""

    settings: Settings

    def open(self, catalog: Catalog) -> AbstractAsyncContextManager[Gateway]:
        return open_gateway(self.settings, catalog)


def _exchanger(settings: Settings, config: GatewayConfig) -> TokenExchanger | None:
    """The token exchanger, when a server's `identity` asks for exchanges."""
    if not any(isinstance(s, HttpServer) and isinstance(s.identity, Identity) for s in config.servers.values()):
        return None
    fetcher = Fetcher(timeout=settings.auth_fetch_timeout, max_bytes=settings.auth_fetch_max_bytes)
    issuer = Issuer(settings.auth_issuer, fetcher) if settings.auth_issuer is not None else None
    return TokenExchanger(issuer, fetcher)


def _fronted_chain(config: GatewayConfig) -> str:
    """The config files fronted by the lazytools processes above this one, plus this one's, for stdio upstreams.

    A config that starts lazytools on itself (one VS Code file holding lazytools and its upstreams, say) would
    spawn lazytools after lazytools without end: the second one refuses to start instead.
    """
    chain = [part for part in os.environ.get(CHAIN_VARIABLE, "").split(os.pathsep) if part]
    if config.path is None:
        return os.pathsep.join(chain)
    path = str(config.path.resolve())
    if path in chain:
        raise ConfigError(f"{config.path}: this file starts lazytools, which would front this file again; give "
                          "lazytools a config without its own entry (or mark that entry \"disabled\": true)")
    return os.pathsep.join([*chain, path])


def _log_start(gateway: Gateway, catalog: Catalog) -> None:
    serving, down = gateway.serving, gateway.down
    tools = sum(len(catalog.in_group(u.name)) for u in serving)
    message = f"gateway: {len(serving)} of {len(gateway.upstreams)} upstream servers serving {tools} tools"
    if down:
        message += "; not serving yet: " + ", ".join(f"{u.name} ({u.error or 'still starting'})" for u in down)
    logger.log(logging.WARNING if down else logging.INFO, message)
