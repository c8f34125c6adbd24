"""The upstreams' prompts under one server: named like tools (`server__prompt`, same rules, so two servers never
collide), looked up by that public name in an index built on first use after a change."""

from __future__ import annotations

import mcp_types as types

from ...errors import UnknownPromptError
from ...origin import current_origin, session_key
from ...toolnames import public_tool_name, unique_name
from .offerings import uris_in
from .upstream import Upstream

__all__ = ["Prompts"]


class Prompts:
    """Every upstream's prompts by public name."""

    def __init__(self, upstreams: list[Upstream]) -> None:
        self.upstreams = upstreams
        self._index: dict[str, tuple[Upstream, types.Prompt]] | None = None
        """By public name: a look-up is one dict access, not a walk of every upstream's prompts on the event loop."""

    def changed(self) -> None:
        """An upstream's prompts changed: the index is built again on next use."""
        self._index = None

    def find(self, name: str) -> tuple[Upstream, types.Prompt]:
        """The upstream and its own prompt behind public name `name`."""
        found = self._by_name().get(name)
        if found is None:
            raise UnknownPromptError(name)
        return found

    def _by_name(self) -> dict[str, tuple[Upstream, types.Prompt]]:
        if self._index is None:
            index: dict[str, tuple[Upstream, types.Prompt]] = {}
            for upstream in self.upstreams:
                for prompt in upstream.offerings.prompts:
                    name = unique_name(public_tool_name(upstream.config.tool_prefix, prompt.name), index, "-")
                    index[name] = (upstream, prompt)
            self._index = index
        return self._index

    def list(self) -> list[types.Prompt]:
        return [prompt.model_copy(update={"name": name}) for name, (_, prompt) in self._by_name().items()]

    async def get(self, name: str, arguments: dict[str, str] | None) -> types.GetPromptResult:
        upstream, prompt = self.find(name)
        request = types.GetPromptRequest(params=types.GetPromptRequestParams(name=prompt.name, arguments=arguments))
        result: types.GetPromptResult = await upstream.request(request, types.GetPromptResult,
                                                               f"prompt {prompt.name!r}")
        upstream.seen_uris.add(session_key(current_origin()), uris_in(result))
        return result

    def server_of(self, name: str) -> str | None:
        """The server of the prompt with public name `name`, if any."""
        found = self._by_name().get(name)
        return found[0].name if found is not None else None
