"""Settings: environment, .env and the documented defaults in .env.example agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from lazytools import Settings
from lazytools.server.clients import client_table

ROOT = Path(__file__).resolve().parent.parent


def test_env_example_lists_every_setting() -> None:
    documented = set(re.findall(r"^LAZYTOOLS_([A-Z_]+)=", (ROOT / ".env.example").read_text(), flags=re.M))
    fields = {name.upper() for name in Settings.model_fields}
    assert fields == documented


def test_env_example_values_are_the_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    example = Settings(_env_file=ROOT / ".env.example")  # type: ignore[call-arg]
    defaults = Settings(_env_file=None)  # type: ignore[call-arg]
    assert example.model_dump(exclude={"files_root"}) == defaults.model_dump(exclude={"files_root"})
    assert example.files_root.resolve() == defaults.files_root.resolve()


def test_environment_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYTOOLS_ALWAYS_AVAILABLE_TOOLS", " a, b ,,c")
    monkeypatch.setenv("LAZYTOOLS_CLIENT_SURFACES", '{"My Client": "proxy"}')
    monkeypatch.setenv("LAZYTOOLS_LOG_LEVEL", "debug")
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert settings.always_available_tools == ["a", "b", "c"]
    assert settings.log_level == "DEBUG"
    table = client_table(settings.client_surfaces)
    assert table["my client"] == "proxy" and table["claude-ai"] == "proxy"


def test_dotenv_file_and_flags_precedence(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("LAZYTOOLS_MODE=proxy\nLAZYTOOLS_SEARCH_LIMIT=7\n")
    settings = Settings(_env_file=env, search_limit=3)  # type: ignore[call-arg]
    assert settings.mode == "proxy" and settings.search_limit == 3


def test_invalid_values_name_the_field() -> None:
    with pytest.raises(ValidationError, match="mode"):
        Settings(_env_file=None, mode="sometimes")  # type: ignore[call-arg]


def test_readme_settings_table_lists_every_setting_with_its_default() -> None:
    readme = (ROOT / "README.md").read_text()
    rows = dict(re.findall(r"^\| `LAZYTOOLS_([A-Z_]+)` \| ([^|]+) \|", readme, flags=re.M))
    example = dict(re.findall(r"^LAZYTOOLS_([A-Z_]+)=(.*)$", (ROOT / ".env.example").read_text(), flags=re.M))
    assert set(rows) == {name.upper() for name in Settings.model_fields}
    for name, default in example.items():
        assert rows[name].strip() == (f"`{default}`" if default else "(empty)"), name
