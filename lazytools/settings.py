"""Settings: flags, environment variables (`LAZYTOOLS_*`) and `.env`, loaded and validated in one place."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .server.surface import Mode, Surface

__all__ = ["Settings"]


class Settings(BaseSettings):
    """Everything a user can set. Every field is listed with its default in `.env.example`."""

    model_config = SettingsConfigDict(
        env_prefix="LAZYTOOLS_",
        env_file=".env",
        env_file_encoding="utf-8",
        extra="ignore",
        env_ignore_empty=True,
        validate_default=True,
    )

    # Surfaces
    mode: Mode = "auto"
    default_surface: Surface = "dynamic"
    client_surfaces: dict[str, Surface] = Field(default_factory=dict)
    dynamic_bridge: bool = True
    always_available_tools: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # Search
    search_limit: int = Field(default=5, ge=1)
    search_max_limit: int = Field(default=20, ge=1)
    max_enabled: int = Field(default=20, ge=1)
    relevance_floor: float = Field(default=0.4, ge=0.0, le=1.0)
    semantic: bool = Field(default=False, description="Fuse BM25 with a sentence encoder's similarity.")
    embedder: str = Field(
        default="minilm+wordllama",
        description="The semantic mode's embedder: minilm+wordllama, minilm, wordllama (fastest), or a model folder.",
    )
    cache_dir: Path | None = Field(
        default=None, description="Tool-vector cache directory (default: $XDG_CACHE_HOME or ~/.cache, /lazytools).",
    )

    # Sources
    config: Path | None = None
    tools_jsonl: Path | None = None
    files_root: Path = Field(default_factory=Path.cwd)
    defer_all: bool = True
    call_timeout: float = Field(default=60.0, gt=0)
    call_timeout_ceiling: float = Field(default=3600.0, gt=0)
    max_session_upstreams: int = Field(default=100, ge=1)
    connect_timeout: float = Field(default=30.0, gt=0)

    # Transport
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    auth_token: SecretStr | None = None
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    session_idle_timeout: float = Field(default=1800.0, gt=0)
    max_sessions: int = Field(default=10_000, ge=1)
    max_body_bytes: int = Field(default=4 * 1024 * 1024, ge=1024)
    json_response: bool = False

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

    def embedding_cache_dir(self) -> Path:
        """The directory of the tool-vector cache: `cache_dir`, else the user's cache directory."""
        if self.cache_dir is not None:
            return self.cache_dir
        base = os.environ.get("XDG_CACHE_HOME", "").strip()
        root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
        return root / "lazytools"

    @field_validator("always_available_tools", "allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _split_commas(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value
