"""The surfaces a session may get and the user's choice among them: names that settings and the server share.

What each surface lists and allows is the server's policy (`server/surface.py`); here are only the names.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["Mode", "Surface"]

Mode = Literal["auto", "dynamic", "proxy"]
"""The user's choice: `auto` follows the client table, the others force a surface where the protocol allows."""
Surface = Literal["dynamic", "proxy"]
"""Dynamic: tools/list grows as search enables tools. Proxy: a static list; found tools go through invoke_tool."""
