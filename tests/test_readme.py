"""The README's snippets are the files in examples/, and its quick-start commands are the ones CI runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


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
    assert len(README.splitlines()) <= 280  # the rest lives in docs/ (the Layout map names every module)


def test_readme_links_resolve() -> None:
    for document in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#]+?)(?:#[^)]*)?\)", document.read_text()):
            if "://" not in target:
                assert (document.parent / target).exists(), (document.name, target)


def test_author_snippet_matches_the_example() -> None:
    example = (ROOT / "examples" / "my_server.py").read_text()
    for line in ("@inventory.tool", "catalog.add(inventory)", "anyio.run(serve_stdio, build_server(catalog, Settings()))"):
        assert line in example and line in README
