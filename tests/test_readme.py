"""The README's snippets are the files in examples/, and its quick-start commands are the ones CI runs."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from .conftest import text_of

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
ENVREPORT = ROOT / "tests" / "upstreams" / "envreport.py"


def _json_blocks() -> list[str]:
    return re.findall(r"```json\n(.*?)```", README, flags=re.S)


@pytest.mark.parametrize("example", ["vscode-mcp.json", "claude_desktop_config.json"])
def test_client_snippets_are_the_example_files(example: str) -> None:
    text = (ROOT / "examples" / example).read_text()
    assert text in _json_blocks()
    config = json.loads(text)
    (server,) = (config.get("servers") or config["mcpServers"]).values()
    assert server["command"].endswith("/.venv/bin/lazytools")


def test_ci_runs_the_readme_test_command() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, flags=re.S)
    (test_command,) = [c for c in commands if "pytest" in c and "pip install" in c]  # one line: install and test
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_quick_start_installs_without_the_test_extras() -> None:
    commands = re.findall(r"```sh\n(.*?)\n```", README, flags=re.S)
    run = next(c for c in commands if "pip install" in c and ".venv/bin/lazytools" in c and "pytest" not in c)
    assert "pip install -q -e '.[semantic]' " in run and "[test]" not in run


def test_readme_is_short() -> None:
    assert len(README.splitlines()) <= 250  # the rest lives in docs/ (docs/layout.md maps every module)


def test_readme_links_resolve() -> None:
    for document in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", document.read_text()):
            if "://" not in target:
                assert (document.parent / target).exists(), (document.name, target)


def test_author_snippet_matches_the_example() -> None:
    example = (ROOT / "examples" / "my_server.py").read_text()
    for line in ("@inventory.tool", "catalog.add(inventory)", "anyio.run(serve_stdio, build_server(catalog, Settings()))"):
        assert line in example and line in README


def test_the_fuller_sample_is_examples_mcp_json() -> None:
    fuller = README[README.index("A fuller sample"):]
    block = re.search(r"```json\n(.*?)```", fuller, flags=re.S)
    assert block is not None
    assert json.loads(block.group(1)) == json.loads((ROOT / "examples" / "mcp.json").read_text())


@pytest.mark.process
@pytest.mark.parametrize("example", ["mcp.json", "quickstart.json"])
async def test_every_uvx_server_of_the_examples_gets_ssl_cert_file(example: str, tmp_path: Path) -> None:
    """Before: examples/mcp.json (and the README's copy of it) did not pass SSL_CERT_FILE on to uvx, which then
    failed with `invalid peer certificate` where TLS needs a CA bundle of its own. Each uvx entry runs as written
    but for its command (a server that reports its environment, instead of a download from PyPI), under a real
    `lazytools --config` process, through a real client."""
    servers = json.loads("\n".join(line for line in (ROOT / "examples" / example).read_text().splitlines()
                                   if not line.startswith("//")))["mcpServers"]
    uvx = {name: entry for name, entry in servers.items() if entry.get("command") == "uvx"}
    assert uvx, example
    config = {name: {**entry, "command": sys.executable, "args": [str(ENVREPORT)]} for name, entry in uvx.items()}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": config}))
    bundle = tmp_path / "corporate-ca.pem"
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAZYTOOLS_")}
    env["SSL_CERT_FILE"] = str(bundle)
    server = StdioServerParameters(command=sys.executable, args=["-m", "lazytools", "--config", str(path)],
                                   cwd=str(tmp_path), env=env)
    async with Client(server, mode="legacy", client_info=types.Implementation(name="mcp", version="1")) as client:
        for name in uvx:
            result = await client.call_tool("invoke_tool", {"tool_name": f"{name}__env",
                                                            "arguments": {"name": "SSL_CERT_FILE"}})
            assert not result.is_error and text_of(result) == str(bundle), (name, text_of(result))
