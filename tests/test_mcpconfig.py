"""The config file: every format users already have, ${VAR} expansion, public names, and clear errors."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lazytools import ConfigError
from lazytools.sources.gateway.config import MAX_CONFIG_BYTES, HttpServer, StdioServer, load_config, parse_config
from lazytools.sources.gateway.configtext import MAX_EXPANDED_CHARS, expand_variables
from lazytools.toolnames import public_tool_name, server_prefix

ROOT = Path(__file__).resolve().parent.parent
NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")


def parse(data: dict[str, Any], **environ: str) -> dict[str, StdioServer | HttpServer]:
    return dict(parse_config(data, environ=environ, path=Path("/cfg/mcp.json")).servers)


def error_of(data: Any, **environ: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data, environ=environ, path=Path("/cfg/mcp.json"))
    return str(caught.value)


# -- formats ------------------------------------------------------------------------------------------------------


def test_claude_desktop_and_cursor_format() -> None:
    servers = parse({"mcpServers": {
        "files": {"command": "npx", "args": ["-y", "server-files", "/tmp"], "env": {"DEBUG": "1", "PORT": 8080},
                  "cwd": "work"},
        "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        "legacy": {"url": "https://example.com/sse"},
    }})
    files, remote, legacy = servers["files"], servers["remote"], servers["legacy"]
    assert isinstance(files, StdioServer) and files.command == "npx" and files.args == ["-y", "server-files", "/tmp"]
    assert files.env == {"DEBUG": "1", "PORT": "8080"}  # numbers become the strings an environment holds
    assert files.cwd == Path("/cfg/work")  # relative to the config file
    assert isinstance(remote, HttpServer) and remote.type == "http" and remote.headers["Authorization"] == "Bearer x"
    assert isinstance(legacy, HttpServer) and legacy.type == "sse"


def test_vscode_format_with_comments_trailing_commas_and_workspace(tmp_path: Path) -> None:
    folder = tmp_path / "project" / ".vscode"
    folder.mkdir(parents=True)
    (folder / "mcp.json").write_text("""{
      // VS Code writes JSONC
      "inputs": [],
      "servers": {
        "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git", "${workspaceFolder}"],},
        /* a remote one */
        "api": {"type": "http", "url": "http://localhost:9000/mcp", "headers": {"X-Key": "${env:API_KEY}"}},
        "old": {"type": "sse", "url": "http://localhost:9001/events"},
      },
    }""")
    config = load_config(folder / "mcp.json", environ={"API_KEY": "k1"})
    git, api, old = config.servers["git"], config.servers["api"], config.servers["old"]
    assert isinstance(git, StdioServer) and git.args == ["mcp-server-git", str(tmp_path / "project")]
    assert isinstance(api, HttpServer) and api.type == "http" and api.headers == {"X-Key": "k1"}
    assert isinstance(old, HttpServer) and old.type == "sse"


def test_type_aliases_and_lazytools_options() -> None:
    servers = parse({"servers": {
        "a": {"type": "streamable-http", "url": "http://h/mcp", "deferLoading": False, "timeout": 5,
              "include": ["get_*"], "exclude": ["get_secret"], "description": "Alpha.", "prefix": "al"},
        "b": {"type": "streamableHttp", "url": "http://h/mcp", "defer_loading": True},
    }})
    a, b = servers["a"], servers["b"]
    assert a.type == "http" and b.type == "http"
    assert a.defer_loading is False and b.defer_loading is True and a.timeout == 5 and a.tool_prefix == "al"
    assert a.description == "Alpha." and a.describe == "server"
    assert parse({"mcpServers": {"c": {"command": "x", "describe": "config"}}})["c"].describe == "config"
    assert a.allows("get_user") and not a.allows("get_secret") and not a.allows("delete_user")
    by_public = parse({"mcpServers": {"gh": {"command": "x", "exclude": ["gh__delete_*"]}}})["gh"]
    assert not by_public.allows("delete_repo") and by_public.allows("create_repo")  # public names work too


def test_disabled_servers_are_skipped_even_with_unset_variables() -> None:
    servers = parse({"mcpServers": {"off": {"command": "x", "env": {"T": "${NOT_SET}"}, "disabled": True},
                                    "on": {"command": "y"}}})
    assert list(servers) == ["on"]


@pytest.mark.parametrize("off", ["true", "True", 1, "${OFF}"])
def test_a_server_disabled_in_other_words_is_not_started(off: Any) -> None:
    # "disabled": "true" (by hand, or from "${OFF}") passed validation as True and the server started all the same:
    # only the literal true was looked at, before validation, and nothing read the field after.
    servers = parse_config({"mcpServers": {"off": {"command": "x", "disabled": off}, "on": {"command": "y"}}},
                           environ={"OFF": "true"})
    assert list(servers.servers) == ["on"]
    kept = parse_config({"mcpServers": {"on": {"command": "y", "disabled": "false"}}}, environ={})
    assert list(kept.servers) == ["on"]
    # Its other variables need not be set either, as with the literal true: the whole config was refused.
    unset = parse_config({"mcpServers": {"off": {"command": "x", "env": {"T": "${NOT_SET}"}, "disabled": off},
                                         "on": {"command": "y"}}}, environ={"OFF": "true"})
    assert list(unset.servers) == ["on"]


def test_both_sections_merge_and_env_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "secrets.env").write_text("TOKEN=from-file\nOTHER=2\n")
    (tmp_path / "mcp.json").write_text(json.dumps({
        "mcpServers": {"a": {"command": "x"}},
        "servers": {"b": {"type": "stdio", "command": "y", "envFile": "secrets.env", "env": {"OTHER": "3"}}},
    }))
    config = load_config(tmp_path / "mcp.json", environ={})
    b = config.servers["b"]
    assert list(config.servers) == ["a", "b"]
    assert isinstance(b, StdioServer) and b.env == {"TOKEN": "from-file", "OTHER": "3"}


def test_an_env_file_holding_a_nul_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nul.env").write_bytes(b"TOKEN=a\0b\n")
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"a": {"command": "x", "envFile": "nul.env"}}}))
    with pytest.raises(ConfigError, match=r"server 'a', field envFile: .*nul.env holds a NUL character"):
        load_config(tmp_path / "mcp.json", environ={})


def test_an_env_file_that_expands_to_gigabytes_is_refused(tmp_path: Path) -> None:
    lines = ["A0=xxxxxxxxxx"] + [f"A{i}=${{A{i - 1}}}${{A{i - 1}}}" for i in range(1, 31)]
    (tmp_path / "laughs.env").write_text("\n".join(lines) + "\n")
    (tmp_path / "mcp.json").write_text(json.dumps({"mcpServers": {"s": {"command": "x", "envFile": "laughs.env"}}}))
    with pytest.raises(ConfigError, match=r"mcp.json: server 's', field envFile: .*laughs.env: A\d+ expands past"):
        load_config(tmp_path / "mcp.json", environ={})


def test_unknown_keys_warn_but_other_clients_keys_do_not(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="lazytools.sources.gateway.config"):
        parse({"mcpServers": {"a": {"command": "x", "exlude": ["t"], "autoApprove": ["t"]}}})
    assert "'a': ignoring unknown keys exlude" in caplog.text and "autoApprove" not in caplog.text


def test_the_sample_config_parses() -> None:
    config = load_config(ROOT / "examples" / "mcp.json", environ={"GITHUB_TOKEN": "t", "HOME": "/home/u"})
    assert config.servers and all(server.name for server in config.servers.values())


# -- ${VAR} -------------------------------------------------------------------------------------------------------


def test_variables_expand_from_the_environment() -> None:
    env = {"HOME": "/home/u", "TOKEN": "s3", "EMPTY": ""}
    assert expand_variables("${HOME}/x:${env:TOKEN}", env) == "/home/u/x:s3"
    assert expand_variables("${MISSING:-fallback}|${EMPTY:-d}|${MISSING:-}", env) == "fallback|d|"
    assert expand_variables("no variables, $HOME stays", env) == "no variables, $HOME stays"
    servers = parse({"mcpServers": {"a": {"command": "${BIN}/server", "args": ["--token", "${TOKEN}"],
                                          "env": {"KEY": "${TOKEN}"}}}}, BIN="/opt/bin", TOKEN="s3")
    a = servers["a"]
    assert isinstance(a, StdioServer) and a.command == "/opt/bin/server" and a.args == ["--token", "s3"]
    assert a.env == {"KEY": "s3"}


def test_unset_variable_names_server_field_and_variable() -> None:
    message = error_of({"mcpServers": {"github": {"command": "x", "env": {"GITHUB_TOKEN": "${GH_TOKEN}"}}}})
    assert message.startswith("/cfg/mcp.json: server 'github', field env.GITHUB_TOKEN:")
    assert "environment variable GH_TOKEN is not set" in message
    prompt = error_of({"servers": {"api": {"type": "http", "url": "http://h", "headers": {"K": "${input:key}"}}}})
    assert "field headers.K" in prompt and "VS Code prompt" in prompt
    odd = error_of({"mcpServers": {"a": {"command": "x", "args": ["${not a var}"]}}})
    assert "field args.0" in odd and "not a variable" in odd


# -- broken files -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "expected"), [
    ([], "expected a JSON object"),
    ({"tools": {}}, 'no "mcpServers"'),
    ({"mcpServers": []}, '"mcpServers" must be an object'),
    ({"mcpServers": {"a": "npx server"}}, "server 'a': expected an object"),
    ({"mcpServers": {"a": {"args": ["x"]}}}, "server 'a': needs \"command\""),
    ({"mcpServers": {"a": {"command": "x", "url": "http://h"}}}, "server 'a': has both"),
    ({"servers": {"a": {"type": "websocket", "url": "ws://h"}}}, "server 'a', field type: 'websocket'"),
    ({"servers": {"a": {"type": "http", "command": "x"}}}, "type http needs \"url\""),
    ({"mcpServers": {"a": {"command": "x", "args": "--flag"}}}, "server 'a': field args: Input should be a valid list"),
    ({"mcpServers": {"a": {"command": ""}}}, "server 'a': field command:"),
    ({"mcpServers": {"a": {"command": "x", "timeout": -1}}}, "field timeout: Input should be greater than 0"),
    ({"mcpServers": {"a": {"command": "x", "timeout": True}}}, "field timeout: Value error, a number of seconds, not true"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": ["v"]}}}}, "field env.K: Input should be a valid string"),
    ({"mcpServers": {"a": {"url": "ftp://h/x"}}}, "field url: Value error, must be an http"),
    ({"mcpServers": {"a": {"command": "x", "prefix": "a__b"}}}, "field prefix:"),
    ({"mcpServers": {"a": {"command": "x", "include": "t"}}}, "field include: Input should be a valid list"),
    ({"mcpServers": {"a": {"command": "x", "describe": "nobody"}}}, "field describe: Input should be 'server' or"),
    ({"mcpServers": {"a b": {"command": "x"}, "a_b": {"command": "y"}}}, "'a b' and 'a_b' would share"),
    ({"mcpServers": {"a": {"command": "x"}}, "servers": {"a": {"command": "y"}}}, "server 'a' is defined twice"),
    # A NUL would end the string where the OS reads it: the server would start with other words than the file says.
    ({"mcpServers": {"a": {"command": "x", "args": ["a\u0000b"]}}}, "server 'a': field args: Value error, holds a NUL"),
    ({"mcpServers": {"a": {"command": "x\u0000y"}}}, "server 'a': field command: Value error, holds a NUL"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K": "v\u0000"}}}}, "field env: Value error, holds a NUL"),
    ({"mcpServers": {"a": {"command": "x", "env": {"K\u0000": "v"}}}}, "field env: Value error, holds a NUL"),
    ({"mcpServers": {"a": {"command": "x", "cwd": "/tmp\u0000/x"}}}, "field cwd: Value error, holds a NUL"),
])
def test_broken_configs_name_server_and_field(data: Any, expected: str) -> None:
    message = error_of(data)
    assert message.startswith("/cfg/mcp.json")
    assert expected in message


def test_unreadable_and_invalid_json_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read config file"):
        load_config(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text('{\n  "mcpServers": {\n    "a": {"command": "x" "args": []}\n  }\n}')
    with pytest.raises(ConfigError, match=r"bad.json: not valid JSON at line 3, column 26: Expecting .,. delimiter"):
        load_config(tmp_path / "bad.json")


def _load_text(tmp_path: Path, text: str, **environ: str) -> str:
    (tmp_path / "mcp.json").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "mcp.json", environ=environ)
    return str(caught.value)


@pytest.mark.parametrize(("entry", "expected"), [
    ('"timeout": ' + "9" * 5000, "field timeout: a number of more than 100 digits"),
    ('"args": ["a", -' + "9" * 5000 + "]", "field args.1: a number of more than 100 digits"),
    ('"timeout": 1e400', "field timeout: 1e400 is not a finite number"),
    ('"env": {"K": -1e400}', "field env.K: -1e400 is not a finite number"),
    ('"timeout": NaN', "field timeout: NaN is not a finite number"),
    ('"timeout": Infinity', "field timeout: Infinity is not a finite number"),
    ('"timeout": "${T}"', "field timeout: Input should be a finite number"),
])
def test_a_number_that_is_too_long_or_not_finite_is_refused_naming_its_field(tmp_path: Path, entry: str,
                                                                               expected: str) -> None:
    message = _load_text(tmp_path, '{"mcpServers": {"s": {"command": "x", ' + entry + "}}}", T="inf")
    assert message.startswith(f"{tmp_path / 'mcp.json'}: server 's'") and expected in message, message
    assert len(message) < 300 and "\n" not in message


def test_only_a_regular_file_of_bounded_size_is_read(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^/dev/zero: not a regular file"):
        load_config(Path("/dev/zero"), environ={})
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # nobody writes it: reading it would wait for ever
    with pytest.raises(ConfigError, match=r"fifo.json: not a regular file"):
        load_config(fifo, environ={})
    big = '{"mcpServers": {}}' + " " * MAX_CONFIG_BYTES
    assert "mcp.json: over 4,194,304 bytes" in _load_text(tmp_path, big)


@pytest.mark.parametrize("args", [["${BIG}" * 130], ["${BIG}"] * 130])
def test_strings_that_expand_past_the_bound_are_refused(tmp_path: Path, args: list[str]) -> None:
    big = "x" * 131072  # the most one environment string may hold on Linux
    assert 130 * len(big) > MAX_EXPANDED_CHARS
    message = _load_text(tmp_path, json.dumps({"mcpServers": {"s": {"command": "x", "args": args}}}), BIG=big)
    assert "server 's', field args." in message and f"expand past {MAX_EXPANDED_CHARS:,} characters" in message


def test_a_server_named_twice_in_one_object_is_refused(tmp_path: Path) -> None:
    message = _load_text(tmp_path, '{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}, '
                                   '"a": {"command": "z"}}}')
    assert message == f"{tmp_path / 'mcp.json'}: server 'a' is defined twice"


def test_comment_markers_inside_strings_are_kept(tmp_path: Path) -> None:
    (tmp_path / "mcp.json").write_text('{"mcpServers": {"a": {"url": "http://h/x//y/*z*/", "headers": {"K": "a,}"}}}}')
    a = load_config(tmp_path / "mcp.json", environ={}).servers["a"]
    assert isinstance(a, HttpServer) and a.url == "http://h/x//y/*z*/" and a.headers == {"K": "a,}"}


# -- public names -------------------------------------------------------------------------------------------------


def test_public_names_keep_the_upstream_name_readable() -> None:
    assert public_tool_name("github", "create_issue") == "github__create_issue"
    weird = public_tool_name("fs", "read file/now")
    assert weird.startswith("fs__read_file_now_") and NAME_RE.fullmatch(weird)
    assert weird != public_tool_name("fs", "read_file_now") and weird != public_tool_name("fs", "read file:now")
    long = public_tool_name("server", "x" * 100)
    assert len(long) == 64 and long.startswith("server__xxx") and long != public_tool_name("server", "x" * 101)
    assert server_prefix("My Server (prod)") == "My_Server_prod" and server_prefix("a__b_") == "a_b"
    assert server_prefix("日本") and NAME_RE.fullmatch(server_prefix("日本"))
    assert len(server_prefix("a-very-long-server-name-indeed-and-more")) <= 24


@given(st.lists(st.tuples(st.text(min_size=1, max_size=40), st.text(min_size=1, max_size=90)), max_size=30))
def test_public_names_are_valid_and_never_collide(pairs: list[tuple[str, str]]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for server, tool in pairs:
        prefix = server_prefix(server)
        assert "__" not in prefix and not prefix.startswith("_") and not prefix.endswith("_")
        name = public_tool_name(prefix, tool)
        assert NAME_RE.fullmatch(name), name
        # The first `__` always ends the prefix, so distinct (prefix, tool) pairs give distinct names.
        assert name.split("__", 1)[0] == prefix
        other = seen.setdefault(name, (prefix, tool))
        assert other == (prefix, tool), (name, other)


def test_readme_section_shows_the_sample_config_and_client_snippets_that_parse() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Fronting your own servers", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```json\n(.*?)```", section, flags=re.S)
    assert (ROOT / "examples" / "mcp.json").read_text() in blocks and len(blocks) == 2  # the config, VS Code
    for block in blocks:
        config = parse_config(json.loads(block), environ={"GITHUB_TOKEN": "t", "HOME": "/home/u"},
                              path=Path("/work/.vscode/mcp.json"))
        assert config.servers


def test_the_quickstart_example_needs_no_account_token_or_variable() -> None:
    """examples/quickstart.json is the config that runs as shipped: npx and uvx servers only, nothing to set; the
    CA bundle a machine may need for PyPI is passed on when it is set, and stays empty (ignored by uv) otherwise."""
    path = ROOT / "examples" / "quickstart.json"
    bare = load_config(path, environ={"HOME": "/home/u"}).servers
    assert sorted(bare) == ["fetch", "filesystem", "memory", "time"]
    servers = [server for server in bare.values() if isinstance(server, StdioServer)]
    assert len(servers) == 4 and {server.command for server in servers} == {"npx", "uvx"}
    assert all(server.args[0] == "-y" for server in servers if server.command == "npx")  # no prompt to install
    assert bare["filesystem"].args[-1] == str(path.parent)  # type: ignore[union-attr]
    assert bare["time"].env == {"SSL_CERT_FILE": ""}  # type: ignore[union-attr]
    given = load_config(path, environ={"HOME": "/home/u", "SSL_CERT_FILE": "/etc/ca.pem"}).servers
    assert given["fetch"].env == {"SSL_CERT_FILE": "/etc/ca.pem"}  # type: ignore[union-attr]


@pytest.mark.parametrize(("server", "field"), [
    ({"url": "http://alice:K1SEC/RET@127.0.0.1:9/mcp"}, "field url: Value error, its host and port do not parse"),
    ({"url": "http://alice:K1SEC@127.0.0.1:K2SEC/mcp"}, "field url: Value error, its host and port do not parse"),
    ({"url": "http://127.0.0.1:9/mcp", "headers": {"K25SECRET:": "v"}}, "field headers: Value error, a header name"),
    ({"url": "http://127.0.0.1:9/mcp", "headers": {"Bad K25SECRET": "v"}}, "field headers: Value error, a header name"),
])
def test_a_url_or_header_name_that_cannot_work_is_refused_without_its_secret(server: dict[str, Any],
                                                                             field: str) -> None:
    # Issue #20, round 2, F3: the HTTP library's refusal ("Invalid port: 'K1SEC'", "Illegal header name
    # b'K25SECRET:'") reached the log at every retry; now the config is refused, naming the server and field only.
    message = error_of({"mcpServers": {"a": server}})
    assert "server 'a': " + field in message, message
    assert "SEC" not in message, message


def test_a_url_that_parses_and_token_header_names_are_kept() -> None:
    config = parse_config({"mcpServers": {"a": {"url": "http://u:p%2Fq@127.0.0.1:9/mcp",
                                                "headers": {"X-Api-Key": "k", "Authorization": "Bearer t"}}}},
                          environ={})
    server = config.servers["a"]
    assert isinstance(server, HttpServer) and server.headers == {"X-Api-Key": "k", "Authorization": "Bearer t"}
