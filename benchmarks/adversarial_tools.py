"""Time the bundled example tools on hostile inputs: the cases of issue #12, then every tool in the catalog.

    nice python benchmarks/adversarial_tools.py            # the issue's cases, then the worst case of each tool
    nice python benchmarks/adversarial_tools.py --issue    # only the issue's cases
    nice python benchmarks/adversarial_tools.py --top 15   # how many of the slowest tools to print

Each case runs in a child process (one at a time) with an address-space limit (--memory-mb, default 3072), so a
case that blows up is reported as such instead of taking the machine down. For each call it prints the wall time,
the peak resident memory of the child, and the size of the result as JSON (or the error the tool raised).
The figures are per call, in process, without the MCP server around it (that is measured end to end elsewhere).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# (label, tool name, keyword arguments): the cases reported in issue #12, as written there.
ISSUE_CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("csv_to_json one 20 KB cell", "csv_to_json", {"csv_text": "a\n" + "1" * 20_000 + "x"}),
    ("count_text_stats '.'*40000+'x'", "count_text_stats", {"text": "." * 40_000 + "x"}),
    ("extract_emails 'a.'*30000", "extract_emails", {"text": "a." * 30_000}),
    ("json_get_path 20,000-char path", "json_get_path", {"data": {"a": 1}, "path": "['" * 10_000}),
    ("json_get_path 10,000-char path (the new cap)", "json_get_path", {"data": {"a": 1}, "path": "['" * 5_000}),
    ("evaluate_expression 2**99999", "evaluate_expression", {"expression": "2**99999"}),
    ("evaluate_expression inf-inf (NaN)", "evaluate_expression", {"expression": "inf - inf"}),
    ("format_json lone surrogate", "format_json", {"json_text": '"\\ud800"'}),
    ("flatten_json 1 MB separator", "flatten_json", {"data": {"k": list(range(400))}, "separator": "s" * 1_000_000}),
    ("flatten_json 100-char separator, 100k leaves", "flatten_json",
     {"data": {"k": list(range(100_000))}, "separator": "s" * 100}),
    ("regex_find_all (?=(.*)) on 20 KB", "regex_find_all",
     {"pattern": "(?=(.*))", "text": "x" * 20_000, "max_matches": 10_000}),
    ("json_to_csv 200k keys + 9,999 empty", "json_to_csv",
     {"records": [{f"k{i}": 1 for i in range(200_000)}] + [{} for _ in range(9_999)]}),
]


def _jwt(payload: str) -> str:
    import base64

    def seg(text: str) -> str:
        return base64.urlsafe_b64encode(text.encode("utf-8", "surrogatepass")).decode().rstrip("=")

    header = seg('{"alg":"none"}')
    return f"{header}.{seg(payload)}.sig"


ISSUE_CASES += [
    ("decode_jwt payload nested 950 deep", "decode_jwt_unverified", {"token": _jwt('{"a":' + "[" * 950 + "]" * 950 + "}")}),
    ("decode_jwt payload with a lone surrogate", "decode_jwt_unverified", {"token": _jwt('{"a":"\\ud800"}')}),
]


def _measure(tool: str, kwargs: dict[str, Any], files_root: str) -> dict[str, Any]:
    """Run one call in this process (the child) and describe what happened."""
    from lazytools_examples import build_catalog

    tools = {fn.__name__: fn for fns in build_catalog(Path(files_root)).values() for fn in fns}
    started = time.perf_counter()
    try:
        value = tools[tool](**kwargs)
    except Exception as exc:  # noqa: BLE001 - a tool's error is a result here
        elapsed = time.perf_counter() - started
        return {"seconds": elapsed, "error": f"{type(exc).__name__}: {str(exc)[:120]}"}
    elapsed = time.perf_counter() - started
    try:
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, allow_nan=False)
        size = len(text.encode("utf-8"))
        note = ""
    except (ValueError, RecursionError) as exc:  # not JSON (NaN, too deep, huge int) or not UTF-8 (surrogates)
        size, note = -1, f"result not serialisable: {type(exc).__name__}: {str(exc)[:80]}"
    return {"seconds": elapsed, "bytes": size, "note": note}


def _child(spec: str, memory_mb: int, timeout: float = 300.0) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", spec, "--memory-mb", str(memory_mb)]
    started = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": time.perf_counter() - started, "error": f"still running after {timeout:g} s (stopped)"}
    if proc.returncode != 0 or not proc.stdout.strip():
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:120]
        return {"seconds": time.perf_counter() - started, "error": f"child died ({proc.returncode}): {tail}"}
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _row(label: str, result: dict[str, Any]) -> str:
    peak = f"{result.get('peak_mb', 0):>7.0f} MB"
    if "error" in result:
        outcome = "error: " + result["error"]
    elif result.get("note"):
        outcome = result["note"]
    else:
        outcome = f"{result['bytes']:,} bytes"
    return f"{label[:44]:<44} {result['seconds']:>9.3f} s {peak}  {outcome}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issue", action="store_true", help="only the cases reported in issue #12")
    parser.add_argument("--top", type=int, default=10, help="print this many of the slowest tools")
    parser.add_argument("--memory-mb", type=int, default=3072, help="address-space limit of each child")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.child:
        limit = args.memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        spec = json.loads(args.child)
        if "case" in spec:
            label, tool, kwargs = ISSUE_CASES[spec["case"]]
            result = _measure(tool, kwargs, spec["root"])
        else:
            sys.path.insert(0, str(ROOT))
            from tests.examples.adversarial_inputs import adversarial_calls

            worst: dict[str, Any] = {"seconds": -1.0}
            calls = 0
            for label, kwargs in adversarial_calls(spec["tool"], spec["root"]):
                got = _measure(spec["tool"], kwargs, spec["root"])
                calls += 1
                if got["seconds"] > worst["seconds"]:
                    worst = {**got, "case": label}
            result = {**worst, "calls": calls}
        result["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(result))
        return 0

    with tempfile.TemporaryDirectory() as root:
        print(f"{'case':<44} {'time':>11} {'peak RSS':>10}  result")
        for index, (label, _tool, _kwargs) in enumerate(ISSUE_CASES):
            print(_row(label, _child(json.dumps({"case": index, "root": root}), args.memory_mb)), flush=True)
        if args.issue:
            return 0
        sys.path.insert(0, str(ROOT))
        from lazytools_examples import build_catalog

        from tests.examples.adversarial_inputs import make_adversarial_root

        make_adversarial_root(Path(root))
        names = [fn.__name__ for fns in build_catalog(Path(root)).values() for fn in fns]
        rows = []
        for name in names:
            got = _child(json.dumps({"tool": name, "root": root}), args.memory_mb)
            rows.append((name, got))
        rows.sort(key=lambda r: -r[1]["seconds"])
        total = sum(r[1].get("calls", 0) for r in rows)
        print(f"\nall {len(rows)} tools, {total} adversarial calls; the {args.top} slowest (worst call of each):")
        for name, got in rows[: args.top]:
            print(_row(f"{name} [{got.get('case', '?')}]", got))
        biggest = max(rows, key=lambda r: r[1].get("bytes", 0))
        print(f"largest result: {biggest[0]} {biggest[1].get('bytes', 0):,} bytes; "
              f"median worst time {statistics.median(r[1]['seconds'] for r in rows):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
