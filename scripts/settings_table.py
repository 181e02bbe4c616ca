"""The settings table of docs/configuration.md from `Settings`: `--write` updates it in place."""

from __future__ import annotations

import sys
from pathlib import Path

from pydantic import BaseModel

from assay.settings import Settings, _default_workers


def rows(model: type[BaseModel], prefix: str) -> list[str]:
    out = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            out.extend(rows(annotation, f"{prefix}{name.upper()}__"))
            continue
        if field.default_factory is _default_workers:
            default = "(CPU count)"
        else:
            value = field.default_factory() if field.default_factory is not None else field.default  # type: ignore[call-arg]
            # repr() for strings with control characters ("\n\n" must not break the Markdown row)
            plain = isinstance(value, str) and value.isprintable()
            default = "" if value is None else value if plain else repr(value)
        description = (field.description or "").replace("|", "\\|")
        out.append(f"| `{prefix}{name.upper()}` | `{default}` | {description} |")
    return out


START, END = "<!-- settings-table:start -->", "<!-- settings-table:end -->"


def table() -> str:
    return "\n".join(["| Variable | Default | Meaning |", "|---|---|---|", *rows(Settings, "ASSAY_")])


def write_readme(path: Path) -> None:
    text = path.read_text()
    head, _, rest = text.partition(START)
    _, _, tail = rest.partition(END)
    path.write_text(f"{head}{START}\n{table()}\n{END}{tail}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_readme(Path(__file__).resolve().parents[1] / "docs" / "configuration.md")
    else:
        print(table())
