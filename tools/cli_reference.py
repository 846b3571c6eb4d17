"""Write ``docs/cli.md``, the reference of the ``resolver`` command line, from the commands
themselves; and ``core/cli/help-78.txt`` and ``help-98.txt``, the top-level ``resolver --help``
as click prints it at those widths (``core/__main__.py`` prints them without loading click).

Every command of the click tree (:func:`core.cli.build_parser`), under the heading its
``resolver --help`` lists it under: its usage, its help, its arguments and options with their
help, and its example; a command with actions (``clock set`` ...) has one entry per action.
Nothing in the page is written by hand, so it says what the commands do; ``tests/cli/test_cli_completion.py``
fails when the page differs from what this tool writes now.

Usage::

    python tools/cli_reference.py           # write docs/cli.md and the written help
    python tools/cli_reference.py --check   # exit 1 when any of them is out of date
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
EVERY = ("--home", "--store", "--json")
"""The options every command takes: said once at the top of the page, not under each command."""


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _option(param: click.Option) -> tuple[str, str]:
    """An option's name column and help, spelled here (not by click's help, whose spelling of
    choices and defaults changes between click's releases): the page is the same on any click."""
    if param.is_flag:
        value = ""
    elif param.metavar:
        value = f" {param.metavar}"
    elif isinstance(param.type, click.Choice):
        value = " {" + "|".join(str(c) for c in param.type.choices) + "}"
    else:
        value = f" {param.type.name.upper()}"
    text = (param.help or "") + (" (required)" if param.required else "") + (" (repeatable)" if param.multiple else "")
    return ", ".join(param.opts) + value, text


def _entry(cmd: click.Command, ctx: click.Context, level: str) -> list[str]:
    from core.cli.tree import Arg, example_line

    lines = [f"{level} `{ctx.command_path}`", ""]
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    lines += ["```", f"usage: {ctx.command_path} {usage}", "```", "", _cell(cmd.help or ""), ""]
    rows = []
    for param in cmd.get_params(ctx):
        if isinstance(param, Arg):
            rows.append((param.human_readable_name, param.help))
        elif isinstance(param, click.Option) and not param.hidden and not set(param.opts) & {*EVERY, "--help"}:
            rows.append(_option(param))
    if rows:
        lines += ["| argument or option | what it does |", "|---|---|"]
        lines += [f"| `{_cell(name)}` | {_cell(text or '')} |" for name, text in rows]
        lines.append("")
    example = example_line(cmd, ctx)
    if example:
        lines += [f"Example: `{example.removeprefix('Example: ')}`", ""]
    return lines


def reference() -> str:
    """The page: every command's entry, under its section's heading, in ``resolver --help``'s order."""
    from core.cli import build_parser
    from core.cli.tree import SECTIONS

    root = build_parser()
    top = click.Context(root, info_name="resolver", terminal_width=100, max_content_width=100)
    lines = [
        "# The `resolver` command line",
        "",
        "<!-- Written by tools/cli_reference.py from the commands themselves: edit the commands, then run",
        "     `python tools/cli_reference.py`. tests/cli/test_cli_completion.py fails when this page is out of date. -->",
        "",
        _cell(root.help or ""),
        "`resolver --help` lists the commands under these headings; `resolver COMMAND --help` shows one of them as below.",
        "Every command also takes `--home DIR` and `--store URL` (before or after its name), and every command",
        "that prints a result takes `--json`:",
        "",
        "| option | what it does |",
        "|---|---|",
    ]
    for param in root.commands["runs"].params:
        if isinstance(param, click.Option) and set(param.opts) & set(EVERY):
            name, text = _option(param)
            lines.append(f"| `{_cell(name)}` | {_cell(text)} |")
    lines.append("")
    for section in SECTIONS:
        lines += [f"## {section}", ""]
        for name, cmd in root.commands.items():
            if getattr(cmd, "section", "") != section:
                continue
            ctx = click.Context(cmd, info_name=name, parent=top)
            lines += _entry(cmd, ctx, "###")
            if isinstance(cmd, click.Group):
                for action_name, action in cmd.commands.items():
                    lines += _entry(action, click.Context(action, info_name=action_name, parent=ctx), "####")
    return "\n".join(lines).rstrip() + "\n"


def written_help() -> dict[Path, str]:
    """The top-level help as click prints it from the tree, by file: one per width of
    ``core.__main__.HELP_WIDTHS`` (the process is run with ``$COLUMNS`` two more than the width,
    so the text is exactly what a user at that width sees)."""
    sys.path.insert(0, str(ROOT))
    from core.__main__ import HELP_FOLDER, HELP_WIDTHS

    drawn = {}
    for width in HELP_WIDTHS:
        env = {**os.environ, "COLUMNS": str(width + 2), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", "from core.cli import entry; entry()", "--help"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        drawn[HELP_FOLDER / f"help-{width}.txt"] = done.stdout
    return drawn


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description="Write docs/cli.md from the resolver command tree.")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when docs/cli.md is out of date")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    files = {PAGE: reference(), **written_help()}
    if args.check:
        stale = [path for path, text in files.items() if not path.exists() or path.read_text(encoding="utf-8") != text]
        for path in stale:
            print(f"{path.relative_to(ROOT)} is out of date: run python tools/cli_reference.py", file=sys.stderr)
        return 1 if stale else 0
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
