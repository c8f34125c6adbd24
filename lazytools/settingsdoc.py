"""The settings' documentation, made from their fields: `.env.example`, `docs/settings.md` and flag names.

Run from a clone after adding or changing a setting (tests/test_settings.py fails until the files are regenerated):

    python -m lazytools.settingsdoc          # rewrite .env.example and docs/settings.md
    python -m lazytools.settingsdoc --check  # exit 1 when either file differs from the fields

Nothing at run time imports this module except the CLI, for flag names.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, get_args

from pydantic import SecretStr
from pydantic.fields import FieldInfo

from .settings import NAMED_ONLY, Settings

__all__ = ["default_text", "env_example", "env_name", "flag_name", "is_secret", "settings_markdown"]

PREFIX = str(Settings.model_config.get("env_prefix", ""))
ENV_EXAMPLE = Path(".env.example")
SETTINGS_MD = Path("docs") / "settings.md"


def env_name(name: str) -> str:
    return f"{PREFIX}{name}".upper()


def flag_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def is_secret(field: FieldInfo) -> bool:
    """Secrets have no flag: a command line is visible to every user of the machine."""
    return SecretStr in (field.annotation, *get_args(field.annotation))


def default_text(name: str) -> str:
    """The default as it is written in an environment variable ("" for none)."""
    field = Settings.model_fields[name]
    value: Any = field.get_default(call_default_factory=True)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value)
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, Enum):
        return str(value.value)
    return str(value)


def _description(name: str) -> str:
    description = Settings.model_fields[name].description
    if not description:
        raise ValueError(f"setting {name!r} has no description: add Field(description=...) in lazytools/settings.py")
    return description


def env_example() -> str:
    lines = [
        "# lazytools settings: every variable with its default. Copy to .env (read from the working directory) or",
        "# export. Command-line flags of the same name override these (lazytools --help; docs/settings.md).",
        "# A .env found in the working directory may not set the settings that choose commands, files, addresses or",
        "# trust (docs/settings.md lists them); name such a file with --env-file, or export them.",
        "# Generated from lazytools/settings.py by `python -m lazytools.settingsdoc`: edit the fields, not this file.",
    ]
    for name in Settings.model_fields:
        lines.append("")
        lines.extend(textwrap.wrap(_description(name), width=118, initial_indent="# ", subsequent_indent="# "))
        lines.append(f"{env_name(name)}={default_text(name)}")
    return "\n".join(lines) + "\n"


def settings_markdown() -> str:
    lines = [
        "# Settings",
        "",
        "Flags override environment variables, which override `.env` in the working directory (`--env-file` names",
        "another). Every setting but the secrets (the flag column says `(none)`: environment or env file only, so they",
        "never show in a process list) is also a flag of the same name (`LAZYTOOLS_SEARCH_LIMIT` is `--search-limit`),",
        "given before or after the command; true/false settings take `--name` / `--no-name`. [.env.example](../.env.example)",
        "lists them all with their defaults. `--env-file` must name a file that exists; `.env` is read only when it",
        "is there. A `LAZYTOOLS_*` name that is no setting (a typo) is warned about on stderr, with the closest one.",
        "",
        *textwrap.wrap(
            "A `.env` that lazytools finds in the working directory (clients start servers in the open project, and "
            "a project can come from anyone) may tune the search and the limits, but not choose the commands "
            "lazytools runs, the files it reads or writes, the addresses it reaches or listens on, or whom it "
            "trusts: a found `.env` that sets any of " + ", ".join(f"`{env_name(name)}`" for name in sorted(NAMED_ONLY))
            + " or any `LAZYTOOLS_AUTH_*` to another value than it has without that file stops the start with an "
            "error naming them (so a copy of .env.example, which gives every default, is read). The environment, a "
            "flag, or a file named with `--env-file` may set them.", width=116),
        "",
        "Generated from the fields of `lazytools/settings.py` by `python -m lazytools.settingsdoc`; a test fails when",
        "this file and the fields differ.",
        "",
        "| variable | flag | default | meaning |",
        "|---|---|---|---|",
    ]
    for name, field in Settings.model_fields.items():
        default = default_text(name)
        flag = "(none)" if is_secret(field) else f"`{flag_name(name)}`"
        meaning = _description(name).replace("|", "\\|")
        lines.append(f"| `{env_name(name)}` | {flag} | {f'`{default}`' if default else '(empty)'} | {meaning} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lazytools.settingsdoc", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when a file differs")
    parser.add_argument("--root", type=Path, default=Path("."), help="the clone's top folder (default: .)")
    args = parser.parse_args(argv)
    stale: list[str] = []
    for relative, text in ((ENV_EXAMPLE, env_example()), (SETTINGS_MD, settings_markdown())):
        target = args.root / relative
        if target.exists() and target.read_text() == text:
            continue
        stale.append(str(relative))
        if not args.check:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)} (run python -m lazytools.settingsdoc)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
