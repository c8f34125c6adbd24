"""Settings: flags, environment variables (`LAZYTOOLS_*`) and `.env`, loaded and validated in one place."""

from __future__ import annotations

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
    semantic: bool = False

    # Sources
    config: Path | None = None
    tools_jsonl: Path | None = None
    files_root: Path = Field(default_factory=Path.cwd)
    defer_all: bool = True
    call_timeout: float = Field(default=60.0, gt=0)
    call_timeout_ceiling: float = Field(default=3600.0, gt=0)
    max_session_upstreams: int = Field(default=100, ge=1)
    connect_timeout: float = Field(default=30.0, gt=0)

    # Limits on hostile input (docs/reliability.md, "Hostile input")
    max_result_bytes: int = Field(
        default=4 * 1024 * 1024, ge=4096,
        description="Largest tool result sent to a client, in bytes of JSON (in-process and upstream); a larger one "
                    "is truncated, with a note saying so.")
    max_argument_bytes: int = Field(
        default=4 * 1024 * 1024, ge=1024,
        description="Largest tool arguments checked against a schema and passed on, in bytes (about).")
    validation_timeout: float = Field(
        default=5.0, gt=0,
        description="Seconds checking one call's arguments against the tool's input schema may take (in a worker "
                    "thread); past it the call is refused.")

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
    header_timeout: float = Field(
        default=10.0, gt=0,
        description="Seconds an HTTP client has to send a request's headers, from its first byte (or from the "
                    "connection); then the connection is closed.")
    body_timeout: float = Field(
        default=15.0, gt=0,
        description="Seconds an HTTP client has to send a request's body once its headers are in; then it gets 408.")
    max_connections: int = Field(
        default=512, ge=8,
        description="Most HTTP connections open at once (lowered to fit the open-file limit); past it the oldest "
                    "connection still sending its headers is closed, or the new one if none is.")

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"

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
