"""The shell commands: search the catalog, and what a fresh session costs in tokens."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lazytools.cli import main

from .upstreams.helpers import toy


@pytest.fixture(autouse=True)
def _in_a_folder_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`main` reads the `.env` of the folder it runs in: one in the folder pytest was started from (a developer's
    own) changed what these tests saw."""
    monkeypatch.chdir(tmp_path)


def test_search_prints_ranked_matches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--files-root", str(tmp_path), "search", "convert temperature celsius", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("1.") and "temperature" in first
    assert len(re.findall(r"^\s*\d+\.", out, flags=re.M)) <= 3


def test_search_with_no_match(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "qqqzzz"]) == 0
    assert capsys.readouterr().out.startswith("No tool here fits 'qqqzzz'; no tool was enabled for it. The tools "
                                              "here are in: text, math")  # as search_tools says it
    long = "qqqzzz " * 1000
    assert main(["search", long]) == 0  # a long one is cut, with what was cut counted
    out = capsys.readouterr().out
    assert out.startswith("No tool here fits 'qqqzzz qqqzzz") and f"(+{len(long) - 200:,} chars)" in out, out[:400]
    assert len(out) < 400, len(out)
    with pytest.raises(SystemExit) as exited:  # longer than search_tools takes: refused as the server refuses it
        main(["search", "convert a temperature " * 400])
    assert exited.value.code == 2 and "search_tools takes at most 8,000" in capsys.readouterr().err


def test_search_refuses_an_unknown_group_and_a_limit_below_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "convert", "--group", "nope"]) == 2
    err = capsys.readouterr().err
    assert "Unknown group 'nope'." in err and "units" in err, err
    for limit in ("0", "-1", "x"):
        with pytest.raises(SystemExit) as exited:
            main(["search", "convert", "--limit", limit])
        assert exited.value.code == 2
        assert "--limit" in capsys.readouterr().err


def test_surface_reports_tokens_against_the_whole_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["surface"]) == 0
    out = capsys.readouterr().out
    assert "cl100k_base" in out
    shares = [float(s) for s in re.findall(r"\(([\d.]+)%\)", out)]
    assert len(shares) == 2 and all(0 < share < 100 for share in shares)


def test_unknown_setting_value_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYTOOLS_DEFAULT_SURFACE", "sometimes")
    assert main(["surface"]) == 2
    assert "LAZYTOOLS_DEFAULT_SURFACE: Input should be 'dynamic' or 'proxy'" in capsys.readouterr().err


def test_options_after_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`lazytools search --tools-jsonl FILE "query"`: the option is an option, not the query."""
    tools = tmp_path / "tools.jsonl"
    tools.write_text('{"id": "t1", "name": "frobnicate_widget", "description": "Frobnicate a widget."}\n')
    assert main(["search", "--tools-jsonl", str(tools), "frobnicate", "--limit", "1"]) == 0
    assert "frobnicate_widget" in capsys.readouterr().out


@pytest.mark.process
@pytest.mark.parametrize("level", [None, "DEBUG"])
def test_upstream_stderr_is_quiet_in_search_unless_debugging_and_then_named(tmp_path: Path,
                                                                            level: str | None) -> None:
    """An upstream's stderr does not land unlabelled among search results: its lines are logged, named, with
    --log-level DEBUG; without it only a failed server's last lines show, in the warning that names the server."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "gone": toy("gone", "--require-file", str(tmp_path / "missing")),  # says why on stderr, exits
        "alpha": toy("alpha"),
    }}))
    flags = ["--log-level", level] if level else []
    done = subprocess.run([sys.executable, "-m", "lazytools", "search", "--config", str(config), *flags,
                           "echo a text"], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # `gone` is down: the answer lacks its tools, and says so
    assert "alpha__echo" in done.stdout and "is missing" not in done.stdout
    assert "Not serving: gone (" in done.stdout
    if level:
        assert "[gone] toy gone:" in done.stderr and "is missing, exiting" in done.stderr
    else:
        assert "[gone]" not in done.stderr
        (warning,) = [line for line in done.stderr.splitlines() if "upstream 'gone' failed to start" in line]
        assert "WARNING" in warning and "(its stderr ended with: toy gone:" in warning and "is missing" in warning


@pytest.mark.parametrize("command", [["surface"], []], ids=["surface", "serve"])
def test_a_files_root_that_is_not_a_folder_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            command: list[str]) -> None:
    (tmp_path / "a-file").write_text("x")
    for root, said in ((tmp_path / "missing", "does not exist"), (tmp_path / "a-file", "is not a directory")):
        assert main(["--files-root", str(root), *command]) == 2
        err = capsys.readouterr().err
        assert said in err and "LAZYTOOLS_FILES_ROOT" in err and "Traceback" not in err


def test_search_shows_what_search_tools_returns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for options, shown in (([], 5), (["--search-limit", "2"], 2), (["--limit", "50", "--search-max-limit", "7"], 7)):
        assert main(["--files-root", str(tmp_path), "search", "convert a temperature", *options]) == 0
        assert len(re.findall(r"^\s*\d+\.", capsys.readouterr().out, flags=re.M)) == shown, options


@pytest.mark.parametrize("command", ["", "serve", "search", "surface", "eval"])
def test_usage_is_one_clean_line(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Before: a command's usage began with the whole top-level usage ("lazytools [OPTIONS] [COMMAND] ... search")
    and then listed every setting as an option, over 40 wrapped lines."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"] if command else ["--help"])
    assert exited.value.code == 0
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert "\n" not in usage, usage[:500]
    assert re.fullmatch(rf"usage: lazytools{' ' + command if command else ''} [\w\s\[\]-]*\[OPTIONS\]", usage), usage
    assert "..." not in usage and "[-h]" not in usage and "--mode" not in usage


def test_help_names_every_setting(capsys: pytest.CaptureFixture[str]) -> None:
    from lazytools.settings import Settings
    from lazytools.settingsdoc import default_text, env_name, flag_name, is_secret

    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    shown = " ".join(out.split())  # argparse wraps long lines
    unwrapped = "".join(out.split())  # and breaks words longer than a line (a list default without spaces)
    for name, field in Settings.model_fields.items():
        # A secret has no flag (it would show in a process list) but --help still says where to set it.
        assert (env_name(name) if is_secret(field) else flag_name(name)) in shown, name
        if not is_secret(field):  # each flag's help ends with its default and its variable
            expected = f"(default: {default_text(name) or 'none'}) [{env_name(name)}]"
            assert "".join(expected.split()) in unwrapped, name
    assert "(default: 5) [LAZYTOOLS_SEARCH_LIMIT]" in shown


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out == f"lazytools {version('lazytools')}\n"


def test_an_invalid_setting_names_its_flag_and_variable(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "x", "--search-limit", "-3"]) == 2
    error = capsys.readouterr().err
    assert error.splitlines() == ["lazytools: invalid settings:",
                                  "  --search-limit / LAZYTOOLS_SEARCH_LIMIT: Input should be greater than or equal "
                                  "to 1 (got -3)"]
    assert "https://" not in error


@pytest.mark.parametrize("where", ["environment", ".env"])
def test_a_variable_that_is_not_json_is_named_without_a_traceback(where: str, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Before: pydantic-settings' SettingsError escaped as a traceback (the flag gave a clean usage error)."""
    if where == ".env":
        (tmp_path / ".env").write_text("LAZYTOOLS_CLIENT_SURFACES=notjson\n")
    else:
        monkeypatch.setenv("LAZYTOOLS_CLIENT_SURFACES", "notjson")
    assert main(["search", "x"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "lazytools: invalid settings:",
        f"  LAZYTOOLS_CLIENT_SURFACES (from {'the environment' if where == 'environment' else '.env'}): not valid "
        "JSON: Expecting value: line 1 column 1 (char 0)"]


@pytest.mark.parametrize("argv", [["search", "hash", "--search-l", "1"], ["search", "  "], ["surface", "--transp", "http"]])
def test_abbreviated_flags_and_an_empty_query_are_usage_errors(argv: list[str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert "unrecognized arguments" in error or "argument query: empty" in error


@pytest.mark.parametrize(("argv0", "shown"), [(".venv/bin/lazytools", ".venv/bin/lazytools"),
                                              ("/opt/my tools/lazytools", "'/opt/my tools/lazytools'")])
def test_the_banner_names_the_command_as_it_was_started(monkeypatch: pytest.MonkeyPatch, argv0: str,
                                                         shown: str) -> None:
    from lazytools import cli

    monkeypatch.setattr(sys, "argv", [argv0])
    assert cli._this_command() == shown
    monkeypatch.setattr(sys, "argv", ["/x/lazytools/__main__.py"])
    assert cli._this_command().endswith(" -m lazytools")


@pytest.mark.process
def test_search_prints_a_servers_odd_name_escaped_even_to_an_ascii_terminal(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    # JSON's escapes: a lone surrogate and the escape sequence that turns a terminal red
    config.write_text('{"mcpServers": {"w\\ud800\\u001b[31mx": %s}}' % json.dumps(toy("w", "--tools", "add")))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    done = subprocess.run([sys.executable, "-m", "lazytools", "--config", str(config), "search", "add two numbers"],
                          cwd=tmp_path, env={**env, "PYTHONIOENCODING": "ascii"}, capture_output=True, text=True,
                          timeout=120, check=False, encoding="utf-8", errors="strict")
    assert done.returncode == 0, done.stderr
    assert "[w\\ud800\\x1b[31mx]" in done.stdout and "\x1b" not in done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, "-m", "lazytools", "search", "zzqx \u2615"], cwd=tmp_path,
                          env={**env, "PYTHONIOENCODING": "ascii"}, capture_output=True, text=True, timeout=120,
                          check=False, encoding="utf-8", errors="strict")
    assert "zzqx \\u2615" in done.stdout and "Traceback" not in done.stderr  # echoed, the cup the terminal lacks escaped


@pytest.mark.process
def test_search_over_a_config_says_how_each_server_starts(tmp_path: Path) -> None:
    """Upstreams take seconds to start (npx, uvx, docker): a line for each as it comes up or fails, on stderr,
    and a failed one's warning ends with what it wrote on its stderr (otherwise hidden in `search`)."""
    fails = "import sys; print('Cannot connect to the Docker daemon. Is it running?', file=sys.stderr); sys.exit(1)"
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"alpha": toy("alpha", "--tools", "echo,add"),
                                                 "broken": {"command": sys.executable, "args": ["-c", fails]}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    done = subprocess.run([sys.executable, "-m", "lazytools", "--config", str(config), "search", "add two numbers"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, done.stderr  # a configured server is down: the answer lacks its tools
    assert "alpha__add" in done.stdout and "Docker" not in done.stdout
    assert "Not serving: broken (" in done.stdout
    lines = done.stderr.splitlines()
    assert any("starting 2 upstream servers (alpha, broken)" in line for line in lines), done.stderr
    assert any("upstream 'alpha': connected, 2 tools" in line for line in lines), done.stderr
    failed = [line for line in lines if "upstream 'broken' failed to start" in line]
    assert len(failed) == 1 and "WARNING" in failed[0], done.stderr
    assert ("it exited or closed the connection before answering (its stderr ended with: Cannot connect to the "
            "Docker daemon. Is it running?); retrying in 1 s") in failed[0], failed


@pytest.mark.parametrize("url", ["redis://user:S3cretPW@[::1/0", "redis://:S3cretPW@localhost:6379/0?socket_timeout=abc",
                                 "redis://:S3cretPW@localhost:port/0",
                                 "redis://:S3cretPW@localhost:6379/0?socket_connect_timeout=-1",
                                 "redis://:S3cretPW@localhost:6379/0?socket_timeout=0",
                                 "redis://:S3cretPW@localhost:6379/0?socket_timeout=nan",
                                 "redis://:S3cretPW@localhost:6379/0?max_connections=-3"])
def test_an_unparsable_state_url_is_a_clear_error_without_its_password(url: str, monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("LAZYTOOLS_STATE_URL", url)
    assert main(["search", "x"]) == 2
    error = capsys.readouterr().err
    assert "LAZYTOOLS_STATE_URL: is not a valid Redis URL: " in error, error
    assert "S3cretPW" not in error and "Traceback" not in error


@pytest.mark.process
@pytest.mark.parametrize("command", ["search", "surface"])
def test_a_one_shot_command_with_a_server_down_says_so_on_stdout_and_exits_1(tmp_path: Path, command: str) -> None:
    """Before: `search "time"` with the only server failed printed "No tools match 'time'." and exited 0, and
    `surface` printed "0 tools ... (1600.0%)": an answer that read as true."""
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"time": {"command": str(tmp_path / "no-such-uvx"),
                                                          "args": ["mcp-server-time"]}}}))
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    argv = [sys.executable, "-m", "lazytools", "--config", str(config), command, *(["time"] if command == "search"
                                                                                    else [])]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Not serving: time (command not found" in done.stdout, done.stdout
    assert "%" not in done.stdout and "Traceback" not in done.stderr
    if command == "surface":
        assert "the catalog has no tools to compare with" in done.stdout, done.stdout
        assert "Catalog: 0 tools in 0 groups." in done.stdout  # a server that is not serving is no group


@pytest.mark.process
@pytest.mark.parametrize("flag", ["-V", "--version"])
def test_dash_capital_v_is_the_version(tmp_path: Path, flag: str) -> None:
    done = subprocess.run([sys.executable, "-m", "lazytools", flag], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and re.fullmatch(r"lazytools \S+\n", done.stdout), (done.stdout, done.stderr)


@pytest.mark.process
def test_settings_that_do_not_fit_together_are_named_as_the_user_sets_them(tmp_path: Path) -> None:
    """Before: "auth_issuer needs auth_audience", the names of fields, which a user never writes."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env["LAZYTOOLS_AUTH_ISSUER"] = "https://idp.example.com"
    done = subprocess.run([sys.executable, "-m", "lazytools", "--transport", "http"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "LAZYTOOLS_AUTH_ISSUER needs LAZYTOOLS_AUTH_AUDIENCE" in done.stderr, done.stderr
    assert "auth_issuer" not in done.stderr and "auth_audience" not in done.stderr
    env["LAZYTOOLS_SEARCH_LIMIT"], env["LAZYTOOLS_SEARCH_MAX_LIMIT"] = "9", "4"
    del env["LAZYTOOLS_AUTH_ISSUER"]
    done = subprocess.run([sys.executable, "-m", "lazytools", "search", "x"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert "LAZYTOOLS_SEARCH_LIMIT (9) is above LAZYTOOLS_SEARCH_MAX_LIMIT (4)" in done.stderr, done.stderr
