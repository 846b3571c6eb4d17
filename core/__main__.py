"""``python -m core`` and the ``resolver`` command: the command line of :mod:`core.cli`.

``resolver --help`` (or ``-h``) alone prints the text ``tools/cli_reference.py`` wrote from the
command tree (``core/cli/help-WIDTH.txt``), without loading click and the command modules: that
is most of the start of a help that is asked for often and changes only with the commands. It is
written at the two widths click draws it at most (``HELP_WIDTHS``): 78 columns, on a terminal of
80 or with no terminal (a pipe), and 98, on a terminal of 100 columns or more (the tree's
``max_content_width`` is 100). At any other width, and for every other command line, click draws
it from the tree. A test runs the command at both widths and compares what click prints with the
written text, so the two never differ.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

HELP_WIDTHS = (78, 98)
"""The widths, in columns, at which the top-level help is written out."""

HELP_FOLDER = Path(__file__).resolve().parent / "cli"
"""Where the written help lies: ``help-78.txt`` and ``help-98.txt``."""


def help_width() -> int:
    """The width click draws help at here: the terminal's columns (``$COLUMNS``, else the
    terminal, else 80) capped at 100, less 2, never under 50 (click's own rule)."""
    return max(min(shutil.get_terminal_size().columns, 100) - 2, 50)


def written_help(argv: Sequence[str]) -> str | None:
    """The written top-level help when ``argv`` asks only for it (``--help`` or ``-h``) and the
    width is one of :data:`HELP_WIDTHS`; None otherwise (or when the file cannot be read: click
    then draws it)."""
    if list(argv) not in (["--help"], ["-h"]):
        return None
    width = help_width()
    if width not in HELP_WIDTHS:
        return None
    try:
        return (HELP_FOLDER / f"help-{width}.txt").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def entry() -> None:
    """Console-script entry point of ``resolver``: the written help, or the command line."""
    text = written_help(sys.argv[1:])
    if text is None:
        from core.cli import entry as command_line  # lazy: the written help needs neither click nor the commands

        command_line()
        return
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `resolver --help | head` ends quietly, as every command does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(0)


if __name__ == "__main__":
    entry()
