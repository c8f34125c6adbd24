"""Settings: environment, .env and the documented defaults in .env.example agree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from lazytools import Settings, cli, settingsdoc
from lazytools.server.clients import client_table

ROOT = Path(__file__).resolve().parent.parent


def test_generated_files_match_the_fields() -> None:
    """.env.example and docs/settings.md are made from the fields: `python -m lazytools.settingsdoc` rewrites them."""
    assert (ROOT / ".env.example").read_text() == settingsdoc.env_example()
    assert (ROOT / "docs" / "settings.md").read_text() == settingsdoc.settings_markdown()


def test_settingsdoc_check_sees_a_stale_file(tmp_path: Path) -> None:
    assert settingsdoc.main(["--root", str(tmp_path)]) == 0  # writes both
    assert settingsdoc.main(["--root", str(tmp_path), "--check"]) == 0
    (tmp_path / ".env.example").write_text(settingsdoc.env_example().replace("LAZYTOOLS_PORT=8000", ""))
    assert settingsdoc.main(["--root", str(tmp_path), "--check"]) == 1


def test_every_setting_is_described_and_documented() -> None:
    documented = set(re.findall(r"^LAZYTOOLS_([A-Z_]+)=", (ROOT / ".env.example").read_text(), flags=re.M))
    assert documented == {name.upper() for name in Settings.model_fields}
    assert all(field.description for field in Settings.model_fields.values())


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


def test_every_setting_but_secrets_is_a_flag_before_or_after_the_command(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    parser = cli._parser()
    flags = {action.dest for action in parser._actions if action.option_strings}
    assert flags >= {name for name, field in Settings.model_fields.items() if not settingsdoc.is_secret(field)}
    assert "auth_token" not in flags
    for argv in (["--search-limit", "3", "--no-dynamic-bridge", "search", "q"],
                 ["search", "--search-limit", "3", "--no-dynamic-bridge", "q"],
                 ["search", "q", "--search-limit", "3", "--no-dynamic-bridge"]):
        settings = cli._settings(parser.parse_args(argv))
        assert (settings.search_limit, settings.dynamic_bridge, settings.mode) == (3, False, "auto"), argv
    settings = cli._settings(parser.parse_args([
        "surface", "--client-surfaces", '{"x": "proxy"}', "--allowed-hosts", "a,b", "--log-level", "debug"]))
    assert settings.client_surfaces == {"x": "proxy"} and settings.allowed_hosts == ["a", "b"]
    assert settings.log_level == "DEBUG"


def test_a_default_limit_above_the_maximum_is_refused() -> None:
    with pytest.raises(ValueError, match="search_max_limit"):
        Settings(_env_file=None, search_limit=30, search_max_limit=20)  # type: ignore[call-arg]
    assert Settings(_env_file=None, search_limit=20, search_max_limit=20).search_limit == 20  # type: ignore[call-arg]
