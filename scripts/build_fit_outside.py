"""Build lazytools/search/data/fit_outside.json: tools of other catalogs, for "nothing fits" (`search/fit.py`).

Not part of the package and not run by the tests. It reads public tool collections (licensed for reuse) and
writes each tool's text as search embeds it (`documents.embedding_text`: name and description); the tests and the
server read only the file it writes.

    python scripts/build_fit_outside.py TRAIN_DATA_DIR

TRAIN_DATA_DIR holds copies of:

- TaskBench (microsoft/JARVIS, `taskbench/*_tool_desc.json`, MIT): daily-life, multimedia and model tools;
- API-Bank (AlibabaResearch/DAMO-ConvAI, `api-bank/apis/*.py`, Apache-2.0): assistant APIs (alarms, bookings,
  bank accounts, health records);
- StableToolBench (THUNLP-MT/StableToolBench, `data_example/G1_tool.json`, Apache-2.0): RapidAPI endpoints of
  thirty categories.

None of them is an evaluation set of this project (not ToolAlpaca, MetaTool, RestBench, LiveMCPBench or BFCL).
Each tool is kept once by its text; the order is the sources' own, so a rerun writes the same file.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
from pathlib import Path

from lazytools.entry import ToolEntry
from lazytools.search.documents import embedding_text

OUT = Path(__file__).resolve().parent.parent / "lazytools" / "search" / "data" / "fit_outside.json"
ABOUT = ("Tools of other catalogs for search/fit.py's outside evidence: a request much nearer one of these than to "
         "any tool of the catalog searched asks for something that exists elsewhere, not here. Each text is the "
         "tool as search embeds it (name: description). Written by scripts/build_fit_outside.py from TaskBench "
         "(microsoft/JARVIS, MIT), API-Bank (AlibabaResearch/DAMO-ConvAI, Apache-2.0) and StableToolBench "
         "(THUNLP-MT/StableToolBench, Apache-2.0); none is an evaluation set of this project. Change them and the "
         "thresholds in FitConfig must be measured again (python -m benchmarks.nothingfits --semantic).")


def _name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")[:60] or "tool"


def _taskbench(root: Path) -> list[tuple[str, str]]:
    found = []
    for domain in ("dailylifeapis", "multimedia", "huggingface"):
        nodes = json.loads((root / "taskbench" / f"{domain}_tool_desc.json").read_text(encoding="utf-8"))["nodes"]
        found += [(str(node["id"]), str(node["desc"])) for node in nodes]
    return found


def _apibank(root: Path) -> list[tuple[str, str]]:
    found = []
    for path in sorted((root / "apibank" / "api-bank" / "apis").glob("*.py")):
        if path.stem in ("__init__", "api", "tool_search"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "description"
                                                     for t in node.targets)
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                found.append((path.stem, node.value.value))
                break
    return found


def _stabletoolbench(root: Path) -> list[tuple[str, str]]:
    found = []
    for tool in json.loads((root / "stb" / "G1_tool.json").read_text(encoding="utf-8")):
        for api in tool["api_list"]:
            found.append((str(api["api_name"]), str(api.get("api_description") or "").strip() or str(api["api_name"])))
    return found


async def _never(arguments: object) -> object:
    raise NotImplementedError("a text, not a tool to call")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the folder holding taskbench/, apibank/ and stb/")
    args = parser.parse_args(argv)
    texts: dict[str, None] = {}
    for name, description in _taskbench(args.root) + _apibank(args.root) + _stabletoolbench(args.root):
        entry = ToolEntry(name=_name(name), group="outside", description=" ".join(description.split()),
                          input_schema={}, call=_never)
        texts.setdefault(embedding_text(entry), None)
    OUT.write_text(json.dumps({"_about": ABOUT, "tools": list(texts)}, ensure_ascii=False, indent=0) + "\n",
                   encoding="utf-8")
    print(f"{len(texts)} tools -> {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
