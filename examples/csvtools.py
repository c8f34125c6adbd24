"""CSV and tabular tools: CSV <-> JSON records, column statistics, Markdown tables."""

import csv
import io
import json
import math
import re
import statistics
from collections import Counter
from typing import Annotated, Any

from pydantic import Field

from ._common import MAX_RESULT_BYTES, ensure_max_items, ensure_max_length, ensure_result_size, result_too_large

__all__ = ["csv_to_json", "json_to_csv", "csv_column_stats", "records_to_markdown_table"]

CsvText = Annotated[str, Field(description="CSV data as text, with a header row.")]
Delimiter = Annotated[str, Field(description="Field separator such as ',' ';' or '\\t'. Empty means auto-detect.")]
Records = Annotated[list[dict[str, Any]], Field(description="List of objects (rows) sharing the same keys (columns).")]
_MAX_ROWS = 50_000
# csv.Sniffer's own regexes are quadratic in the sample (10,000 characters of ',"' took 0.5 s); a few lines do.
_SNIFF_CHARS = 2_000
# "\d+\.?\d*" splits a run of digits between its two loops in every possible way before failing, quadratic on a
# 20 KB cell ("1"*20000 + "x" took 6.8 s); "\d+(?:\.\d*)?" has one way to read each input.
_NUMBER_RE = re.compile(r"[+-]?(?:\d++(?:\.\d*+)?|\.\d++)(?:[eE][+-]?\d++)?")
# Longer cells stay text: they are codes or identifiers, and int() refuses more than 4300 digits anyway.
MAX_NUMBER_CHARS = 100


def _read_rows(csv_text: str, delimiter: str) -> tuple[list[str], list[list[str]]]:
    ensure_max_length(csv_text, "csv_text")
    if not csv_text.strip():
        raise ValueError("csv_text is empty")
    if len(delimiter) > 1:
        raise ValueError("delimiter must be a single character")
    if not delimiter:
        try:
            delimiter = csv.Sniffer().sniff(csv_text[:_SNIFF_CHARS], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    rows: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(csv_text), delimiter=delimiter):
            if row:
                rows.append(row)
                if len(rows) > _MAX_ROWS + 1:  # stop reading as soon as the limit is passed
                    raise ValueError(f"too many rows (limit is {_MAX_ROWS})")
    except csv.Error as exc:
        raise ValueError(f"malformed CSV: {exc}") from None
    header = [h.strip() for h in rows[0]]
    if len(set(header)) != len(header):
        raise ValueError(f"duplicate column names in header: {header}")
    return header, rows[1:]


def _convert(cell: str) -> Any:
    # Only plain decimal numbers are converted; codes like '007' or 'nan' stay text.
    text = cell.strip()
    if len(text) > MAX_NUMBER_CHARS or not _NUMBER_RE.fullmatch(text) or re.match(r"[+-]?0\d", text):
        return cell
    if text.lstrip("+-").isdigit():
        return int(text)
    number = float(text)
    return number if math.isfinite(number) else cell  # "1e999" stays text rather than become Infinity


def csv_to_json(
    csv_text: CsvText,
    delimiter: Delimiter = "",
    convert_numbers: Annotated[bool, Field(description="Turn numeric cells into numbers instead of strings.")] = True,
) -> dict[str, Any]:
    """Convert CSV text into a list of JSON records (one object per row, keyed by the header)."""
    header, rows = _read_rows(csv_text, delimiter)
    records = []
    # Every record repeats the header's names: a wide header over many short rows multiplies the input.
    per_record = sum(len(h) + 6 for h in header) + 2
    size = per_record
    for line_no, row in enumerate(rows, start=2):
        if len(row) > len(header):
            raise ValueError(f"row {line_no} has {len(row)} fields but the header has {len(header)}")
        size += per_record + sum(len(c) for c in row)
        if size > MAX_RESULT_BYTES:
            raise result_too_large(what="the JSON records")
        padded = row + [""] * (len(header) - len(row))
        records.append({h: (_convert(c) if convert_numbers else c) for h, c in zip(header, padded)})
    return {"columns": header, "row_count": len(records), "records": records}


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _columns(records: list[dict[str, Any]], columns: list[str] | None) -> list[str]:
    if columns:
        return columns
    seen: dict[str, None] = {}
    for record in records:
        seen.update(dict.fromkeys(record))
    return list(seen)


def json_to_csv(
    records: Records,
    columns: Annotated[list[str] | None, Field(description="Column order; defaults to all keys in first-seen order.")] = None,
    delimiter: Annotated[str, Field(description="Field separator character.", min_length=1, max_length=1)] = ",",
) -> str:
    """Convert a list of JSON objects (records) into CSV text with a header row; nested values are JSON-encoded."""
    ensure_max_items(records, "records", _MAX_ROWS)
    if len(delimiter) != 1:
        raise ValueError("delimiter must be a single character")
    if not records:
        raise ValueError("records must contain at least one object")
    cols = _columns(records, columns)
    # Every row has a delimiter per column, even an empty one: one wide record makes every row wide.
    ensure_result_size(len(records) * len(cols) + sum(len(c) + 1 for c in cols), "the CSV text")
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerow(cols)
    for record in records:
        writer.writerow([_cell(record.get(c)) for c in cols])
        if buffer.tell() > MAX_RESULT_BYTES:
            raise result_too_large(what="the CSV text")
    return buffer.getvalue()


def csv_column_stats(csv_text: CsvText, delimiter: Delimiter = "") -> dict[str, Any]:
    """Summarize each CSV column: counts, empty cells, distinct and most common values, min/max/mean/median of numbers."""
    header, rows = _read_rows(csv_text, delimiter)
    stats: dict[str, Any] = {}
    for index, name in enumerate(header):
        cells = [row[index].strip() if index < len(row) else "" for row in rows]
        filled = [c for c in cells if c]
        numbers = [v for v in (_convert(c) for c in filled) if isinstance(v, (int, float))]
        column: dict[str, Any] = {
            "count": len(cells),
            "empty": len(cells) - len(filled),
            "distinct": len(set(filled)),
            "most_common": [{"value": v, "count": n} for v, n in Counter(filled).most_common(3)],
            "numeric": bool(filled) and len(numbers) == len(filled),
        }
        if column["numeric"]:
            column.update(
                min=min(numbers), max=max(numbers), mean=statistics.fmean(numbers),
                median=statistics.median(numbers), sum=sum(numbers),
            )
        stats[name] = column
    return {"row_count": len(rows), "columns": stats}


def records_to_markdown_table(
    records: Records,
    columns: Annotated[list[str] | None, Field(description="Column order; defaults to all keys in first-seen order.")] = None,
    align_numbers_right: Annotated[bool, Field(description="Right-align columns whose values are all numbers.")] = True,
) -> str:
    """Render a list of JSON objects (records) as a Markdown table."""
    ensure_max_items(records, "records", 10_000)
    if not records:
        raise ValueError("records must contain at least one object")
    cols = _columns(records, columns)

    def esc(value: Any) -> str:
        # Pipes and newlines would break the table layout.
        return _cell(value).replace("|", "\\|").replace("\n", " ")

    ensure_result_size(len(records) * len(cols) * 3, "the table")
    headers = [esc(c) for c in cols]
    rows = [[esc(r.get(c)) for c in cols] for r in records]
    widths = [max(3, len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(headers)]
    # Cells are padded to their column's width: one long cell widens every row. Check before padding.
    ensure_result_size((len(rows) + 2) * (sum(widths) + 3 * len(widths) + 2), "the table")
    numeric = [
        align_numbers_right
        and all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in records)
        for c in cols
    ]
    head = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths)) + " |"
    rule = "| " + " | ".join(("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric)) + " |"
    body = [
        "| " + " | ".join(cell.rjust(w) if num else cell.ljust(w) for cell, w, num in zip(row, widths, numeric)) + " |"
        for row in rows
    ]
    return "\n".join([head, rule, *body])
