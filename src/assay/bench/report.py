"""Writing a bench report: report.json (every number), report.md, and the terminal table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from assay.bench.metrics import DEFINITIONS

_COLUMNS = (
    ("FN rate", "fn_rate"),
    ("FP rate", "fp_rate"),
    ("accuracy", "accuracy"),
    ("FN", "fn"),
    ("FP", "fp"),
    ("timeout", "timeout"),
    ("error", "error"),
    ("invalid", "invalid"),
    ("p50 ms", "p50"),
    ("p99 ms", "p99"),
    ("items/s", "items_per_s"),
)


def _cell(summary: Mapping[str, Any], key: str) -> str:
    value = summary["latency_ms"][key] if key in ("p50", "p99") else summary[key]
    if value is None:
        return "-"
    if key in ("fn_rate", "fp_rate", "accuracy"):
        return f"{100 * value:.1f}%"
    if isinstance(value, float):
        return f"{value:.3g}" if value < 100 else f"{value:.0f}"
    return str(value)


def table_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """Header plus one row per verifier, as text cells."""
    out = [["verifier", *(title for title, _ in _COLUMNS)]]
    for name, summary in report["verifiers"].items():
        out.append([name, *(_cell(summary, key) for _, key in _COLUMNS)])
    return out


def plain_table(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _markdown_table(rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return lines


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def markdown(report: Mapping[str, Any]) -> str:
    """report.md: the table, per-category FN/FP, the error ids, the problems and the definitions."""
    lines = [f"# assay bench: {report['file']} (task {report['task']})", ""]
    lines += [
        f"{report['items']} rows: {report['labelled_true']} labelled true, "
        f"{report['labelled_false']} labelled false, {report['unlabelled']} unlabelled, "
        f"{len(report['problems'])} that could not become items.",
        "",
    ]
    lines += [*_markdown_table(table_rows(report)), ""]
    lines += ["## By category (FN rate / FP rate)", ""]
    names = list(report["verifiers"])
    categories = sorted({c for s in report["verifiers"].values() for c in s["by_category"]})
    cat_rows = [["category", "true", "false", *names]]
    for category in categories:
        first = report["verifiers"][names[0]]["by_category"][category]
        cells = [
            f"{_pct(s['by_category'][category]['fn_rate'])} / {_pct(s['by_category'][category]['fp_rate'])}"
            for s in report["verifiers"].values()
        ]
        cat_rows.append([category, str(first["positives"]), str(first["negatives"]), *cells])
    lines += [*_markdown_table(cat_rows), ""]
    lines += ["## Errors by verifier", ""]
    for name, summary in report["verifiers"].items():
        lines.append(
            f"- **{name}**: false negatives {', '.join(summary['false_negatives']) or 'none'}; "
            f"false positives {', '.join(summary['false_positives']) or 'none'}"
        )
    if report["problems"]:
        lines += ["", "## Rows that could not become items (scored as invalid)", ""]
        lines += [f"- `{p['id']}` (row {p['index']}): {p['problem']}" for p in report["problems"]]
    lines += ["", "## Definitions", ""]
    lines += [f"- {key}: {text}" for key, text in DEFINITIONS.items()]
    return "\n".join(lines) + "\n"


def write(report: Mapping[str, Any], out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / "report.json", out / "report.md"
    json_path.write_text(json.dumps(report, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown(report), encoding="utf-8")
    return [json_path, md_path]
