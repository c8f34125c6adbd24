"""The MCP server wiring: tools/list and tools/call over catalog, index and session state.

Built from parts made elsewhere (parts.py; app.py `build_server` makes them). Knows nothing of transports: stdio and
HTTP hand it streams. Errors become `isError` results here and only here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from anyio.lowlevel import RunVar
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.subscriptions import ListenHandler
from opentelemetry import trace

from ..audit import note_reason, reason_of
from ..catalog import Catalog, suggest
from ..entry import ToolEntry, compact_json, listed_bytes
from ..errors import LazyToolsError, ToolNotEnabledError, UnknownToolError
from ..modes import Surface
from ..safetext import clip
from ..search import Results
from ..search.prior import Prior
from ..state.sessions import SessionState, SessionStore
from ..threads import loop_limiter, threads_for
from ..validation import Limits, validate_call
from .access import Access
from .learning import record_call, record_search, source_of
from .metatools import (
    INVOKE_TOOL,
    SEARCH_TOOLS,
    invoke_tool_definition,
    quick_search,
    resolve_invocation,
    search_tools,
    search_tools_definition,
)
from .parts import ServerParts
from .rendering import down_note, left_line
from .results import sendable
from .subscriptions import ToolsListChanged
from .surface import SessionView

__all__ = ["BM25_ONLY", "INSTRUCTIONS", "LazyServer"]

logger = logging.getLogger(__name__)
_tracer = trace.get_tracer("lazytools")

TOOLS_LIST_BYTES = 768 * 1024
"""What one tools/list answer may hold (UTF-8 JSON); enabled tools that would pass it are listed lean
(`ToolEntry.to_mcp(lean=True)`). Each field of a tool has its own bound, yet twenty enabled tools at every bound made
1.5 MB, which the SDK client over HTTP refuses (1 MiB an event): that session could list no tool at all."""

SUGGESTED_ON_LOOP = 2_000
"""An unknown name is spelled against at most this many names on the event loop; against more, in a worker thread:
spelling it against a catalog of many thousands would hold every other session's requests for that long."""
BM25_ONLY = ("(Semantic search is still embedding the catalog's tools: keyword matching alone ranked this answer. "
             "Ask again in a moment for the full ranking.)")
"""Said under a search's answer when the embedding outlasted `semantic_wait`."""


_SPELLING: RunVar[anyio.CapacityLimiter] = RunVar("lazytools_spelling_threads")
"""One worker thread spells unknown names at a time, per event loop: the spelling holds the GIL, and many such
threads at once would leave the event loop a turn only once each had had one."""


async def _suggested(name: str, candidates: Sequence[str]) -> UnknownToolError:
    """The error for an unknown `name`, with the closest of `candidates` (found off the event loop when many)."""
    if len(candidates) <= SUGGESTED_ON_LOOP:
        return UnknownToolError(name, suggest(name, candidates))
    found = await anyio.to_thread.run_sync(suggest, name, candidates, limiter=loop_limiter(_SPELLING, 1))
    return UnknownToolError(name, found)


_STATELESS_THREADS: RunVar[anyio.CapacityLimiter] = RunVar("lazytools_stateless_threads")
"""The share of worker threads that stateless requests (no session to charge) hold together, per event loop."""

INSTRUCTIONS = """\
Most tools are hidden to keep your context small. To do something, call search_tools with what you need in \
plain words (or exact tool_names). Found tools are added to your tool list, or, when results say so, are \
called through invoke_tool(tool_name, arguments). Search again whenever you need a different capability."""


def _listed_within(entries: list[ToolEntry], left: int) -> list[types.Tool]:
    """`entries` as tools/list sends them, each one lean whose whole form would pass the `left` bytes still free."""
    tools: list[types.Tool] = []
    for entry in entries:
        tool = entry.to_mcp()
        if (size := listed_bytes(tool)) > left:
            tool = entry.to_mcp(lean=True)
            size = listed_bytes(tool)
        left -= size
        tools.append(tool)
    return tools


class LazyServer(Server[Any]):
    """A low-level MCP server that shows a small tool surface and grows it per session."""

    def __init__(self, parts: ServerParts) -> None:
        self.catalog = parts.catalog
        self.settings = parts.settings
        self.sessions = parts.sessions
        self.store: SessionStore = parts.sessions.store
        self.gate = parts.gate
        self.index = parts.index
        self.events = parts.events
        self.front = parts.front
        self.usage = parts.usage
        self.metrics = parts.metrics
        self.limits = Limits.of(parts.settings)
        self._limited = parts.limited
        passing = parts.passing
        super().__init__(
            "lazytools",
            version=_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.events),
            # Without this the SDK runs our tools/list handler on every 2026-07-28 tools/call with arguments.
            get_tool_input_schema=self.input_schema_of,
            # A gateway passes its upstreams' prompts and resources through (passthrough.py).
            on_list_prompts=passing.list_prompts if passing else None,
            on_get_prompt=passing.get_prompt if passing else None,
            on_list_resources=passing.list_resources if passing else None,
            on_list_resource_templates=passing.list_templates if passing else None,
            on_read_resource=passing.read_resource if passing else None,
            on_subscribe_resource=passing.subscribe if passing else None,
            on_unsubscribe_resource=passing.unsubscribe if passing else None,
            on_completion=passing.complete if passing else None,
        )
        if passing is not None:
            # Added, not passed: the constructor warns about these 2026-deprecated features.
            self.add_request_handler("logging/setLevel", types.SetLevelRequestParams, passing.set_level)
            self.add_notification_handler("notifications/roots/list_changed", types.NotificationParams,
                                          passing.roots_changed)
            self.add_notification_handler("notifications/initialized", types.NotificationParams, passing.initialized)
        self.middleware[:] = list(parts.middleware)
        self._definitions: dict[tuple[int, Surface, Access], tuple[list[types.Tool], int]] = {}
        self._always_available = list(parts.always_available)
        self.pinned = self._pinned_now()
        self.catalog.on_change(self._catalog_changed)
        self.catalog.on_announce(self._tools_changed)

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        # Every transport calls this; some with no arguments. listChanged must be advertised on all of them.
        return super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True, prompts_changed=True,
                                                        resources_changed=True),
            experimental_capabilities, extensions
        )

    def rate_refusals(self) -> int:
        return self._limited.refusals if self._limited is not None else 0

    def _prior(self, state: SessionState | None) -> Prior | None:
        """The usage prior as this request's user (or session) may read it: others' use above the floor only."""
        if self.usage is None:
            return None
        source = source_of(self.usage, state)
        return self.usage.seen_by(source) if source is not None else self.usage.prior

    def input_schema_of(self, name: str) -> Mapping[str, Any] | None:
        """The input schema a 2026-07-28 tools/call's `Mcp-Param-*` headers are checked against (the transport's
        check), for a tool a client may call by name; None where the schema declares no header (`_declaring`), as
        the meta-tools' own never do: then the check has nothing to compare, and walks no schema twice a call."""
        if name not in self.catalog:  # the meta-tools are not in it
            return None
        if self.gate.policy is not None:
            # Called before the middleware, with the principal the HTTP edge set (if any): a tool hidden from it is
            # unknown here too, or a header check would tell it apart from a name that does not exist.
            principal = self.gate.principal()
            if not self.gate.warm(principal) or name not in self.gate.access(principal).catalog:
                return None
        return _declaring(self.catalog.get(name).input_schema)

    # -- tools/list -----------------------------------------------------------------------------------------

    def view_of(self, state: SessionState | None) -> SessionView:
        """The surface policy for this session (or for a request without one), and what its principal may see."""
        return SessionView.of(state, bridge=self.settings.dynamic_bridge, access=self.gate.access())

    def _access(self, view: SessionView) -> Access:
        return view.access if view.access is not None else self.gate.access()

    def surface_tools(self, state: SessionState | None) -> list[types.Tool]:
        view = self.view_of(state)
        visible = self._access(view).catalog
        static, size = self._static_tools(view)
        enabled = [visible.get(name) for name in view.lists_enabled() if name in visible and name not in self.pinned]
        return static + _listed_within(enabled, TOOLS_LIST_BYTES - size)

    def _static_tools(self, view: SessionView) -> tuple[list[types.Tool], int]:
        # What every session of this view lists first (pinned tools, the meta-tools), and its size in bytes.
        surface = view.surface
        access = self._access(view)
        # The rest of the view is the same for every session of the principals that share an Access.
        cache_key = (self.catalog.version, surface, access)
        if cache_key not in self._definitions:
            if len(self._definitions) > 64:
                self._definitions = {}
            self._definitions = {k: v for k, v in self._definitions.items() if k[0] == self.catalog.version}
            settings = self.settings
            visible = access.catalog
            meta = [search_tools_definition(visible, settings.search_max_limit, settings.search_limit, surface,
                                            settings.manifest_chars)]
            if view.offers_invoke:
                meta.append(invoke_tool_definition())
            # Pinned tools within the list's budget too: a pinned server whose tools passed 1 MiB made every
            # session's tools/list too large for the SDK client over HTTP.
            room = TOOLS_LIST_BYTES - sum(listed_bytes(tool) for tool in meta)
            tools = [*_listed_within([visible.get(name) for name in self.pinned if name in visible], room), *meta]
            self._definitions[cache_key] = tools, sum(listed_bytes(tool) for tool in tools)
        return self._definitions[cache_key]

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.surface_tools(self.sessions.session_for(ctx)))

    # -- tools/call -----------------------------------------------------------------------------------------

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return await self.handle_call(self.sessions.session_for(ctx), params.name, params.arguments, ctx)

    async def handle_call(
        self,
        state: SessionState | None,
        name: str,
        arguments: Any,
        ctx: ServerRequestContext[Any, Any] | None = None,
    ) -> types.CallToolResult:
        """`call`, with every error turned into an `isError` result, and every result made sendable and bounded
        (results.py): the boundary to the client."""
        try:
            result = await self.call(state, name, arguments, ctx)
        except LazyToolsError as exc:
            # Arguments can hold secrets: the log names the tool and the error class, never the arguments.
            logger.info("tools/call %s failed: %s", clip(name), type(exc).__name__)
            note_reason(reason_of(exc))
            if isinstance(exc, UnknownToolError) and exc.candidates is not None:
                exc = await _suggested(exc.name, exc.candidates)
            result = _error(_failure_text(exc, self.gate.access().catalog))
        except Exception as exc:  # a bug of ours must not end the session: report it, keep serving
            logger.exception("tools/call %s: unexpected error", clip(name))
            note_reason("internal_error")
            result = _error(f"Internal error in lazytools while calling {clip(name)}: {type(exc).__name__}: "
                            f"{clip(str(exc), 500)}")
        return sendable(result, max_bytes=self.settings.max_result_bytes, tool=name)

    async def call(
        self,
        state: SessionState | None,
        name: str,
        arguments: Any,
        ctx: ServerRequestContext[Any, Any] | None = None,
    ) -> types.CallToolResult:
        """Serve one tools/call; raises the library's errors (see `handle_call` for the boundary)."""
        view = self.view_of(state)
        access = self._access(view)
        if name == SEARCH_TOOLS:
            return await self._search(state, view, arguments or {}, ctx)
        if name == INVOKE_TOOL and view.offers_invoke:
            try:
                entry, args = resolve_invocation(access.catalog, arguments or {}, self.limits, suggesting=False)
            except UnknownToolError as exc:
                if exc.name in self.catalog:  # hidden from this principal: it reads as unknown
                    self.gate.refused("tool")
                raise
            if state is not None:
                state.used(entry.name)
        else:
            entry = self._callable_entry(view, name)
            if state is not None:
                state.used(entry.name)
            args = arguments
        # Bounded in size and time, and off the event loop unless the schema is our own and the arguments small:
        # a hostile schema or argument stalls no other session.
        settings = self.settings
        # A tool that checks its own arguments (an in-process function) is left to: unless the policy judges the
        # arguments, which it must only see checked.
        valid = await validate_call(entry.name, entry.input_schema, args, self.limits, trusted=entry.trusted_schema,
                                    left_to_tool=entry.checks_arguments and not access.judges_arguments)
        access.check_arguments(entry, valid)
        # Upstreams send progress, logs and requests for the client during the call to this request's origin,
        # which OriginMiddleware set around it.
        with threads_for(self._threads_of(state), time_limit=settings.call_timeout):
            if self.usage is None or state is None:
                return await entry.call(valid)
            try:
                result = await entry.call(valid)
            except Exception:
                record_call(self.usage, state, entry.name, ok=False)
                raise
            record_call(self.usage, state, entry.name, ok=not result.is_error)
            return result

    def _threads_of(self, state: SessionState | None) -> anyio.CapacityLimiter:
        """The share of worker threads a session's in-process tool calls may hold; stateless requests share one."""
        if state is None:
            return loop_limiter(_STATELESS_THREADS, self.settings.max_session_tool_threads)
        if state.threads is None:
            state.threads = anyio.CapacityLimiter(self.settings.max_session_tool_threads)
        return state.threads

    def _callable_entry(self, view: SessionView, name: str) -> ToolEntry:
        visible = self._access(view).catalog
        if name in visible:
            if view.may_call(name, self.pinned):
                return visible.get(name)
            if view.search_enables:
                raise ToolNotEnabledError(name, bridge=view.offers_invoke)
            raise LazyToolsError(f"Tool {name!r} is not in this session's list: call invoke_tool(tool_name="
                                 f"{name!r}, arguments={{...}}).")
        if name in self.catalog:
            self.gate.refused("tool")
        raise UnknownToolError(name, candidates=_spelled_against(view, self.pinned, visible))

    async def _search(
        self,
        state: SessionState | None,
        view: SessionView,
        arguments: dict[str, Any],
        ctx: ServerRequestContext[Any, Any] | None,
    ) -> types.CallToolResult:
        settings = self.settings
        index = await self.index.ready()
        embedded = await self.index.embedded(settings.semantic_wait) if _ranks(arguments) else True

        access = self._access(view)
        visible, index = access.catalog, access.index(index)

        def search() -> Results:
            return search_tools(visible, index, arguments, surface=view.surface,
                                default_limit=settings.search_limit, max_limit=settings.search_max_limit,
                                bridge=settings.dynamic_bridge, floor=settings.relevance_floor,
                                enable_at_most=settings.max_enabled, pinned=self.pinned,
                                prior=self._prior(state),
                                visible=visible.__contains__, limits=self.limits)  # learned suggestions: only what this principal may see

        # Off the event loop unless quick (`quick_search`: BM25 over a small catalog, a short query): a sentence
        # encoder takes milliseconds of CPU per query, and checking a hostile client's arguments can take longer;
        # other sessions keep going meanwhile.
        with _tracer.start_as_current_span("lazytools search", attributes={"lazytools.surface": view.surface}) as span:
            outcome = search() if quick_search(index, arguments) else await anyio.to_thread.run_sync(search)
            span.set_attribute("lazytools.search.returned", len(outcome.returned))
        if self.metrics is not None:
            self.metrics.found(state.key if state is not None else None, [entry.name for entry in outcome.returned])
        if self.usage is not None and state is not None:
            record_search(self.usage, state, outcome.query, outcome.returned,
                          outcome.enabled if view.search_enables else [])
        if state is not None and view.search_enables:
            # Pinned tools are always listed and never counted: they neither take a place nor ever leave.
            wanted = [entry.name for entry in outcome.enabled if entry.name not in self.pinned]
            new, gone = state.enable(wanted, limit=settings.max_enabled)
            if gone:
                logger.debug("session %s: %d least recently used tools disabled", state.key[:8], len(gone))
                outcome = replace(outcome, text=f"{outcome.text}\n{left_line(gone, settings.max_enabled)}")
            if new or gone:
                # Sent before the result is returned, so the client can re-list as the model reads the result.
                if ctx is not None:
                    await ctx.session.send_tool_list_changed()
                elif state.notify is not None:
                    await state.notify()
        text = outcome.text if embedded else f"{outcome.text}\n\n{BM25_ONLY}"
        return types.CallToolResult(content=[types.TextContent(text=text)])

    # -- catalog changes ------------------------------------------------------------------------------------

    def _catalog_changed(self, catalog: Catalog) -> None:
        self._definitions.clear()
        self.pinned = self._pinned_now()
        self.events.publish_nowait(ToolsListChanged())

    async def _tools_changed(self) -> None:
        # A group's tools changed while serving (an upstream's list_changed or reconnection). Every surface lists
        # search_tools, whose description counts the catalog, and the pinned tools: tell every session that can hear.
        for state in self.store:
            if state.notify is not None:
                try:
                    await state.notify()
                except Exception as exc:  # a client that went away must not keep the others from hearing
                    logger.info("session %s: list_changed not delivered: %s", state.key[:8], exc)

    def _pinned_now(self) -> list[str]:
        """ALWAYS_AVAILABLE_TOOLS that the catalog holds now, then the tools their upstream pins."""
        configured = [name for name in self._always_available if name in self.catalog]
        return list(dict.fromkeys([*configured, *(entry.name for entry in self.catalog if entry.pinned)]))


def _spelled_against(view: SessionView, pinned: Sequence[str], visible: Catalog) -> list[str]:
    """The names an unknown name is spelled against: what the session lists first, then what else it may call;
    each once (the listed tools are in the catalog too)."""
    listed = [name for name in [*pinned, *view.enabled] if name in visible]
    # Only the meta-tools this session lists: without the bridge, invoke_tool is itself an unknown name here.
    meta = [SEARCH_TOOLS, INVOKE_TOOL] if view.offers_invoke else [SEARCH_TOOLS]
    return list(dict.fromkeys([*listed, *meta, *visible.names()]))


X_MCP_HEADER = "x-mcp-header"
"""The schema keyword by which a 2026-07-28 tool declares an argument mirrored in an `Mcp-Param-*` header."""
_DECLARING: dict[int, tuple[Mapping[str, Any], bool]] = {}
"""Schema id -> (the schema, whether its text names `x-mcp-header`); holding the schema keeps its id its own."""


def _declaring(schema: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """`schema` if it may declare an `Mcp-Param` header (its JSON names `x-mcp-header` anywhere), else None; read once
    per schema, not on every call."""
    known = _DECLARING.get(id(schema))
    if known is None or known[0] is not schema:
        if len(_DECLARING) >= 8192:  # catalogs change: old schemas are not kept forever
            _DECLARING.clear()
        known = _DECLARING[id(schema)] = (schema, X_MCP_HEADER in compact_json(schema))
    return schema if known[1] else None


def _failure_text(exc: LazyToolsError, visible: Catalog) -> str:
    """What a failed call says: the error, and for an unknown tool whose server is down, which and why (of the
    servers `visible`, this principal's view, holds: a hidden one is not named)."""
    text = str(exc)
    return text + down_note(visible.not_serving(), exc.name) if isinstance(exc, UnknownToolError) else text


def _ranks(arguments: Any) -> bool:
    """Whether search_tools' `arguments` hold a request to rank: tool_names or a group alone are answered without
    waiting for the vectors."""
    query = arguments.get("query") if isinstance(arguments, dict) else None
    return isinstance(query, str) and bool(query.strip())


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("lazytools")
    except PackageNotFoundError:
        return "0.0.0"


