"""Tests for lazytools_examples.files: every tool, plus refusal of paths escaping the root."""

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from lazytools_examples import _regex_runner
from lazytools_examples.files import make_file_tools

Tools = dict[str, Callable[..., Any]]


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    base = tmp_path / "root"
    (base / "sub" / "deep").mkdir(parents=True)
    (base / "a.txt").write_text("line one\nline two\nline three\n")
    (base / "sub" / "b.py").write_text("print('hello')\n# TODO fix this\n")
    (base / "sub" / "deep" / "c.py").write_text("x = 1\n")
    (base / ".hidden").write_text("hidden todo\n")
    (base / "blob.bin").write_bytes(b"\x00\x01todo\x02")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP SECRET todo\n")
    os.symlink(outside / "secret.txt", base / "link_out.txt")
    os.symlink(outside, base / "dir_out")
    os.symlink(base / "a.txt", base / "link_in.txt")
    return base


@pytest.fixture()
def tools(root: Path) -> Tools:
    return {fn.__name__: fn for fn in make_file_tools(root)}


def test_factory_builds_named_documented_closures(tools: Tools) -> None:
    assert len(tools) == 8
    for name, fn in tools.items():
        assert fn.__name__ == name and fn.__doc__ and fn.__annotations__
    with pytest.raises(ValueError, match="does not exist"):
        make_file_tools(Path("/nonexistent/lazytools/root"))


def test_list_directory(tools: Tools) -> None:
    listing = tools["list_directory"]()
    names = [e["name"] for e in listing["entries"]]
    assert names[0] == "sub" and "a.txt" in names and "link_in.txt" in names
    assert ".hidden" not in names and "link_out.txt" not in names and "dir_out" not in names
    assert next(e for e in listing["entries"] if e["name"] == "a.txt")["size"] == 29
    assert ".hidden" in [e["name"] for e in tools["list_directory"](".", include_hidden=True)["entries"]]
    with pytest.raises(ValueError, match="not a directory"):
        tools["list_directory"]("a.txt")


def test_read_text_file(tools: Tools) -> None:
    result = tools["read_text_file"]("a.txt", start_line=2, end_line=3)
    assert result["content"] == "line two\nline three" and result["total_lines"] == 3
    assert tools["read_text_file"]("sub/../a.txt")["content"].startswith("line one")
    assert tools["read_text_file"]("link_in.txt")["path"] == "a.txt"
    with pytest.raises(ValueError, match="binary"):
        tools["read_text_file"]("blob.bin")
    with pytest.raises(ValueError, match="does not exist"):
        tools["read_text_file"]("missing.txt")
    with pytest.raises(ValueError, match="start_line"):
        tools["read_text_file"]("a.txt", start_line=3, end_line=2)


def test_get_file_info(tools: Tools) -> None:
    info = tools["get_file_info"]("sub/b.py")
    assert info["type"] == "file" and info["size_bytes"] == 31 and info["extension"] == ".py"
    assert info["permissions"].startswith("-r")
    assert tools["get_file_info"]("sub")["type"] == "directory"
    assert tools["get_file_info"]("link_in.txt")["is_symlink"] is True


@pytest.mark.process
def test_search_in_files(tools: Tools) -> None:
    result = tools["search_in_files"]("todo")
    assert result["matches"] == [{"file": "sub/b.py", "line": 2, "text": "# TODO fix this"}]
    assert tools["search_in_files"]("todo", file_glob="*.txt")["matches"] == []
    assert tools["search_in_files"](r"print\(", regex=True)["matches"][0]["file"] == "sub/b.py"
    assert tools["search_in_files"]("TODO", case_sensitive=True, include_hidden=True)["matches"][0]["line"] == 2
    assert tools["search_in_files"]("line", max_results=2)["truncated"] is True
    with pytest.raises(ValueError, match="invalid regular expression"):
        tools["search_in_files"]("(unclosed", regex=True)


@pytest.mark.process
def test_search_in_files_stops_runaway_regex(tools: Tools, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (root / "long.txt").write_text("a" * 5000 + "\n")
    monkeypatch.setattr(_regex_runner, "DEFAULT_TIMEOUT_SECONDS", 0.2)
    with pytest.raises(ValueError, match="took longer than"):
        tools["search_in_files"]("a*a*a*a*b", regex=True, file_glob="long.txt")


def test_find_files(tools: Tools) -> None:
    assert tools["find_files"]("*.py")["files"] == ["sub/b.py", "sub/deep/c.py"]
    assert tools["find_files"]("deep/*.py", path="sub")["files"] == ["sub/deep/c.py"]
    assert tools["find_files"]("**/*.py", path="sub/deep")["files"] == ["sub/deep/c.py"]
    assert tools["find_files"]("*.txt")["files"] == ["a.txt", "link_in.txt"]


def test_count_file_lines(tools: Tools) -> None:
    counts = tools["count_file_lines"]()
    assert counts["by_extension"][".py"] == {"files": 2, "lines": 3}
    assert counts["skipped_files"] == 1  # blob.bin is binary
    assert tools["count_file_lines"]("a.txt")["total_lines"] == 3


def test_directory_tree(tools: Tools) -> None:
    tree = tools["directory_tree"]()
    assert tree.splitlines()[0] == "./"
    assert "├── sub/" in tree and "│   ├── deep/" in tree and "c.py" in tree
    assert "link_out" not in tree and "dir_out" not in tree
    assert "c.py" not in tools["directory_tree"](max_depth=1)


def test_file_checksum(tools: Tools, root: Path) -> None:
    result = tools["file_checksum"]("a.txt")
    assert result["hex"] == hashlib.sha256((root / "a.txt").read_bytes()).hexdigest()
    assert tools["file_checksum"]("a.txt", algorithm="md5")["hex"] == hashlib.md5((root / "a.txt").read_bytes()).hexdigest()
    with pytest.raises(ValueError, match="not a file"):
        tools["file_checksum"]("sub")


@pytest.mark.parametrize("escape", ["..", "../outside/secret.txt", "sub/../../outside", "link_out.txt", "dir_out", "dir_out/secret.txt"])
def test_paths_escaping_the_root_are_refused(tools: Tools, escape: str) -> None:
    for name in ("list_directory", "read_text_file", "get_file_info", "find_files", "count_file_lines", "directory_tree", "file_checksum"):
        with pytest.raises(ValueError, match="outside the allowed root"):
            if name == "find_files":
                tools[name]("*", path=escape)
            else:
                tools[name](escape)
    with pytest.raises(ValueError, match="outside the allowed root"):
        tools["search_in_files"]("secret", path=escape)


def test_absolute_paths_outside_are_refused_but_inside_allowed(tools: Tools, root: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="outside the allowed root"):
        tools["read_text_file"](str(tmp_path / "outside" / "secret.txt"))
    with pytest.raises(ValueError, match="outside the allowed root"):
        tools["read_text_file"]("/etc/passwd")
    assert tools["read_text_file"](str(root / "a.txt"))["total_lines"] == 3


def test_walks_do_not_leak_through_symlinks(tools: Tools) -> None:
    assert tools["search_in_files"]("SECRET", include_hidden=True)["matches"] == []
    assert all("secret" not in f for f in tools["find_files"]("*", include_hidden=True)["files"])
