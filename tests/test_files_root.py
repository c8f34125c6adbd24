"""Which folder the bundled file tools may read: the one given, else the working directory, unless that is the
filesystem's root or the home folder (or above it), which nobody granted by starting lazytools there."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from lazytools.app import granted_files_root

from .conftest import make_settings, text_of

REFUSED = "No folder was granted to the file tools"


async def _read(cwd: Path | str, *args: str, home: Path | None = None) -> str:
    """What `read_text_file` of `path` answers in a real stdio process started in `cwd`."""
    env = {"HOME": str(home)} if home is not None else {}
    params = StdioServerParameters(command=sys.executable, args=["-m", "lazytools", "--no-learn", *args],
                                   cwd=str(cwd), env=env)
    async with Client(params, mode="legacy") as client:
        result = await client.call_tool("invoke_tool", {"tool_name": "read_text_file",
                                                        "arguments": {"path": "etc/hostname"}})
        return ("error: " if result.is_error else "") + text_of(result)


@pytest.mark.process
async def test_started_in_the_filesystems_root_the_file_tools_read_nothing_unless_it_is_given() -> None:
    # Claude Desktop starts its servers in /: a config without --files-root served /etc/passwd and every other file
    # the user may read (found by a README-only review).
    refused = await _read("/")
    assert refused.startswith("error: ") and REFUSED in refused and "--files-root" in refused
    given = await _read("/", "--files-root", "/")
    assert REFUSED not in given


@pytest.mark.process
async def test_started_in_the_home_folder_the_file_tools_read_nothing_but_a_folder_below_it_is_fine(
        tmp_path: Path) -> None:
    project = tmp_path / "project" / "etc"
    project.mkdir(parents=True)
    (project / "hostname").write_text("box\n")
    assert REFUSED in await _read(tmp_path, home=tmp_path)
    assert '"content": "box"' in await _read(tmp_path / "project", home=tmp_path)


def test_a_root_set_in_the_environment_is_granted_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAZYTOOLS_FILES_ROOT", "/")
    assert granted_files_root(make_settings()) == (Path("/"), "")


@pytest.mark.parametrize("home", ["", "/nonexistent-home"])
def test_started_in_the_users_home_with_home_empty_or_elsewhere_the_file_tools_read_nothing(
        monkeypatch: pytest.MonkeyPatch, home: str) -> None:
    # HOME="" makes Path.home() "/", and a HOME pointing elsewhere (a client's sandbox) named another folder: started
    # in the user's own home folder, the file tools read all of it unasked. The user database names it too.
    import pwd

    real = Path(pwd.getpwuid(os.getuid()).pw_dir)
    monkeypatch.setenv("HOME", home)
    monkeypatch.chdir(real)
    assert granted_files_root(make_settings())[0] is None
