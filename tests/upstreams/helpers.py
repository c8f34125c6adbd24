"""Helpers for the gateway tests: config entries for toy upstreams, an open gateway (shared ones: tests/helpers.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters

from lazytools import Catalog, LazyServer, Settings, build_server
from lazytools.sources.gateway.gateway import Backoff, Gateway, open_gateway

from ..conftest import make_settings
from ..helpers import running_http
from .toy import build

__all__ = ["FAST", "TOY", "Opened", "direct", "http_toy", "opened", "toy"]

TOY = Path(__file__).resolve().parent / "toy.py"
FAST = Backoff(first=0.05, most=0.5)
"""Reconnection delays short enough for tests that wait for a recovery."""


def toy(name: str, *flags: str, **options: Any) -> dict[str, Any]:
    """A config entry that starts the toy upstream over stdio."""
    return {"command": sys.executable, "args": [str(TOY), "--name", name, *flags], **options}


def direct(name: str, *flags: str) -> Client:
    """A client of its own for a toy upstream, to compare answers with the gateway's."""
    return Client(StdioServerParameters(command=sys.executable, args=[str(TOY), "--name", name, *flags]),
                  mode="legacy", cache=None)


@dataclass
class Opened:
    catalog: Catalog
    gateway: Gateway
    settings: Settings
    server: LazyServer


@asynccontextmanager
async def opened(tmp_path: Path, servers: dict[str, Any], *, section: str = "mcpServers", backoff: Backoff = FAST,
                 **overrides: Any) -> AsyncIterator[Opened]:
    """Write `servers` to a config file, open the gateway on it and build the lazytools server."""
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({section: servers}))
    settings = make_settings(config=path, **overrides)
    catalog = Catalog()
    async with open_gateway(settings, catalog, backoff=backoff) as gateway:
        yield Opened(catalog, gateway, settings, build_server(catalog, settings, front=gateway.front))


@asynccontextmanager
async def http_toy(name: str, **options: Any) -> AsyncIterator[str]:
    """The toy upstream served over streamable HTTP by uvicorn in this process; yields its /mcp URL."""
    app = build(name, **options).streamable_http_app()
    async with running_http(app) as base:
        yield base + "/mcp"

