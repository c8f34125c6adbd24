"""Settings: environment, .env and the documented defaults in .env.example agree."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from lazytools import ConfigError, Settings, cli, settingsdoc
from lazytools.server.clients import client_table
from lazytools.settings import CHAIN_VARIABLE, NAMED_ONLY, load_settings
from lazytools.smallfiles import MAX_ENV_FILE_BYTES

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


def test_an_unknown_lazytools_variable_is_named_with_the_closest_setting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """A typo (LAZYTOOLS_MAX_ENABLE for LAZYTOOLS_MAX_ENABLED) used to change nothing, silently."""
    monkeypatch.setenv("LAZYTOOLS_MAX_ENABLE", "5")
    monkeypatch.setenv("LAZYTOOLS_QQQ", "1")
    monkeypatch.setenv("LAZYTOOLS_SEARCH_LIMIT", "3")  # known: no warning
    # Set by the gateway for the lazytools it fronts: a fronted lazytools must not warn about it.
    monkeypatch.setenv(CHAIN_VARIABLE, "/x/mcp.json")
    env = tmp_path / "my.env"
    env.write_text("LAZYTOOLS_RELEVANCE_FLOR=0.2\nLAZYTOOLS_MODE=proxy\nDATABASE_URL=postgres://x\n")
    with caplog.at_level("WARNING", logger="lazytools.settings"):
        settings = Settings(_env_file=env)  # type: ignore[call-arg]
    assert settings.max_enabled == Settings.model_fields["max_enabled"].default and settings.mode == "proxy"
    warned = {record.getMessage().split()[0]: record.getMessage() for record in caplog.records}
    assert sorted(warned) == ["LAZYTOOLS_MAX_ENABLE", "LAZYTOOLS_QQQ", "LAZYTOOLS_RELEVANCE_FLOR"], warned
    assert "in the environment" in warned["LAZYTOOLS_MAX_ENABLE"]
    assert "did you mean LAZYTOOLS_MAX_ENABLED?" in warned["LAZYTOOLS_MAX_ENABLE"]
    assert "in the environment" in warned["LAZYTOOLS_QQQ"] and "did you mean" not in warned["LAZYTOOLS_QQQ"]
    assert f"in {env}" in warned["LAZYTOOLS_RELEVANCE_FLOR"]
    assert "did you mean LAZYTOOLS_RELEVANCE_FLOOR?" in warned["LAZYTOOLS_RELEVANCE_FLOR"]


@pytest.mark.process
def test_the_cli_warns_about_an_unknown_variable_on_stderr(tmp_path: Path) -> None:
    """Through the real command: the warning comes before logging is configured (the log level is a setting too),
    and must still reach stderr, and only stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")} | {"LAZYTOOLS_SEARCH_LIMT": "2"}
    done = subprocess.run([sys.executable, "-m", "lazytools", "search", "temperature"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "LAZYTOOLS_SEARCH_LIMT in the environment" in done.stderr and "LAZYTOOLS_SEARCH_LIMIT?" in done.stderr
    assert "LAZYTOOLS_SEARCH_LIMT" not in done.stdout and "temperature" in done.stdout


def test_a_missing_env_file_that_was_asked_for_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "nope.env"
    assert cli.main(["search", "temperature", "--env-file", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert str(missing) in captured.err and "does not exist" in captured.err
    assert cli.main(["--env-file", str(tmp_path), "surface"]) == 2  # a folder
    assert "is not a file" in capsys.readouterr().err
    # without --env-file, a missing .env is fine: it is optional
    assert cli.main(["search", "temperature"]) == 0
    capsys.readouterr()
    # and one that is there is read
    chosen = tmp_path / "chosen.env"
    chosen.write_text("LAZYTOOLS_SEARCH_LIMIT=1\n")
    assert cli.main(["search", "temperature", "--env-file", str(chosen)]) == 0
    assert len([line for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]) == 1


# -- a .env found in the working directory: it may tune, not grant ----------------------------------------------


def test_a_found_env_file_may_not_choose_commands_files_addresses_or_trust(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("LAZYTOOLS_SEARCH_LIMIT=3\nLAZYTOOLS_CONFIG=.tools.json\n"
                                   "lazytools_auth_jwks_url=http://127.0.0.1:9/keys\nLAZYTOOLS_FILES_ROOT=/\n")
    with pytest.raises(ConfigError) as refused:
        load_settings()
    message = str(refused.value)
    assert "LAZYTOOLS_AUTH_JWKS_URL, LAZYTOOLS_CONFIG, LAZYTOOLS_FILES_ROOT" in message and "--env-file" in message
    assert "SEARCH_LIMIT" not in message
    # the same file, named by the user, is theirs to trust
    named = load_settings(Path(".env"))
    assert named.config == Path(".tools.json") and named.files_root == Path("/") and named.search_limit == 3
    # tuning alone is fine
    (tmp_path / ".env").write_text("LAZYTOOLS_SEARCH_LIMIT=3\nLAZYTOOLS_MODE=proxy\nOTHER_TOOL_CONFIG=x\n")
    found = load_settings()
    assert (found.search_limit, found.mode, found.config) == (3, "proxy", None)
    # the environment and flags are the user's too, and a found .env that says the same changes nothing
    monkeypatch.setenv("LAZYTOOLS_CONFIG", "from-env.json")
    assert load_settings(files_root=tmp_path).config == Path("from-env.json")
    (tmp_path / ".env").write_text("LAZYTOOLS_CONFIG=from-env.json\nLAZYTOOLS_FILES_ROOT=" + str(tmp_path) + "\n")
    assert load_settings(files_root=tmp_path).files_root == tmp_path
    with pytest.raises(ConfigError, match="sets LAZYTOOLS_FILES_ROOT:"):
        load_settings()


def test_a_copy_of_env_example_found_in_the_working_directory_is_read(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """.env.example says to copy it to .env: it sets every setting, the named-only ones to their defaults."""
    monkeypatch.chdir(tmp_path)
    text = (ROOT / ".env.example").read_text()
    (tmp_path / ".env").write_text(text.replace("LAZYTOOLS_SEARCH_LIMIT=5", "LAZYTOOLS_SEARCH_LIMIT=4"))
    settings = load_settings()
    assert settings.search_limit == 4 and settings.host == "127.0.0.1" and settings.config is None
    (tmp_path / ".env").write_text(text.replace("LAZYTOOLS_HOST=127.0.0.1", "LAZYTOOLS_HOST=0.0.0.0"))
    with pytest.raises(ConfigError, match=r"sets LAZYTOOLS_HOST: "):
        load_settings()


def test_every_setting_naming_a_file_an_address_a_secret_or_a_principal_is_named_only() -> None:
    """A setting added later that names a path, a URL or a secret must not slip past the rule by being new."""
    for name, field in Settings.model_fields.items():
        annotation = str(field.annotation)
        risky = ("Path" in annotation or "SecretStr" in annotation or name.startswith("auth_")
                 or any(word in name for word in ("url", "host", "origin", "user", "file", "dir", "root", "config")))
        assert not risky or name in NAMED_ONLY or name.startswith("auth_"), name
    assert NAMED_ONLY <= set(Settings.model_fields)


@pytest.mark.process
def test_a_planted_env_file_runs_nothing(tmp_path: Path) -> None:
    """The attack: a project folder whose `.env` names a config whose "server" is a command. Started there (as
    clients start servers), lazytools refuses to start and the command never runs."""
    marker = tmp_path / "ran"
    (tmp_path / ".tools.json").write_text(
        '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "touch ' + str(marker) + '"]}}}')
    (tmp_path / ".env").write_text("LAZYTOOLS_CONFIG=.tools.json\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    done = subprocess.run([sys.executable, "-m", "lazytools", "search", "temperature"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "LAZYTOOLS_CONFIG" in done.stderr and "--env-file" in done.stderr
    assert not marker.exists()


@pytest.mark.parametrize("blank", ["", " ", "\t \n"])
def test_a_blank_shared_token_is_refused(blank: str) -> None:
    with pytest.raises(ValueError, match="LAZYTOOLS_AUTH_TOKEN is blank"):
        Settings(_env_file=None, auth_token=blank)  # type: ignore[call-arg]


# -- env files: python-dotenv's ${...}, bounded ------------------------------------------------------------------


def laughs(path: Path) -> Path:
    """31 lines, 495 bytes, each variable twice the one before: 10 GB at the last, with python-dotenv's expansion."""
    lines = ["A0=xxxxxxxxxx"] + [f"A{i}=${{A{i - 1}}}${{A{i - 1}}}" for i in range(1, 31)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_env_file_that_expands_to_gigabytes_is_refused(tmp_path: Path) -> None:
    env = laughs(tmp_path / ".env")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(env))}: A\d+ expands past [\d,]+ characters"):
        load_settings(env)
    with pytest.raises(ConfigError, match="expands past"):
        Settings(_env_file=env)  # type: ignore[call-arg]
    env.write_text("LAZYTOOLS_AUDIT=" + "x" * MAX_ENV_FILE_BYTES + "\n")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(env))}: over [\d,]+ bytes"):
        load_settings(env)


def test_an_env_file_expands_variables_as_python_dotenv_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LT_TEST_HOME", "/home/u")
    env = tmp_path / "my.env"
    env.write_text("BASE=/srv\nLAZYTOOLS_FILES_ROOT=${BASE}/tools\nLAZYTOOLS_CACHE_DIR=${LT_TEST_HOME}/c\n"
                   "LAZYTOOLS_AUDIT=${NOPE:-stderr}\nLAZYTOOLS_STDIO_USER=${BASE}x${NOPE}\n")
    settings = load_settings(env)
    assert settings.files_root == Path("/srv/tools") and settings.cache_dir == Path("/home/u/c")
    assert settings.audit == "stderr" and settings.stdio_user == "/srvx"


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_a_number_setting_must_be_finite(value: str) -> None:
    """A timeout of inf never fires and a share of NaN compares false with everything: neither is ever meant."""
    for field in ("call_timeout", "relevance_floor", "validation_timeout"):
        with pytest.raises(ValueError, match=f"{field}[\\s\\S]*finite number"):
            Settings(_env_file=None, **{field: value})  # type: ignore[call-arg]
