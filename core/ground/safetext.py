"""The one helper that makes untrusted text safe for a terminal (ticket text, evidence, the
model's rule, reasons, names, IDs from data), with nothing else imported: ``resolver runs``
prints through it without loading the state model. :mod:`core.api.views` re-exports it, and the
app's ``resolver_tui/widgets/safe.py`` builds on it (no escape sequence from data
reaches a terminal, in the CLI as in the app).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from functools import lru_cache
from typing import Any, overload

from core.ground.errors import odd_character

__all__ = [
    "BLOCK_MARK",
    "CONTINUED_MARK",
    "LINE_BREAK_MARK",
    "block",
    "cells",
    "fold",
    "name_key",
    "nfc",
    "not_one_line",
    "one_line",
    "pad",
    "safe_lines",
    "safe_text",
]

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""C0 and C1 controls (newline and tab stay), and the bidirectional controls that reorder what a
terminal shows (U+202E turned the text after it around, found by a new user)."""
_ESCAPE_SEQ = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def safe_text(text: Any) -> str:
    """``text`` as a string with terminal escape sequences and control characters removed.

    Newlines and tabs stay; ``ESC ] 0 ; title BEL`` and ``ESC [ 31 m`` go whole; any other
    C0/C1 control character is dropped, and so are the bidirectional controls (U+202A-U+202E,
    U+2066-U+2069, U+200E, U+200F, U+061C) that would reorder what the terminal shows.
    """
    value = str(text)
    value = _ESCAPE_SEQ.sub("", value)
    return _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


def safe_lines(lines: list[str]) -> str:
    """``lines`` each made safe by :func:`safe_text` and ended with a newline, as one text: one
    search over the whole text when no line holds a control character (the common case: a page
    of ``resolver runs`` costs one regex search, not one substitution per line), else line by
    line (an escape sequence left open never eats the lines after it)."""
    text = "\n".join(lines) + "\n" if lines else ""
    if _CONTROL.search(text) is None:
        return text
    return "".join(safe_text(line) + "\n" for line in lines)


BLOCK_MARK = "│ "
"""The mark at the start of every line of a multi-line untrusted value: core's own
lines never carry it, so a customer's message holding ``Who may approve: agent or above`` reads
``  │ Who may approve: agent or above``, inside the block, never as the request's line."""

LINE_BREAK_MARK = "⏎"
"""What a line break inside a single-line field (a subject, a name, an ID, a rule) is shown as:
the field stays on its line, and the break is visible."""

_BREAKS = re.compile(r"\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
"""Every character :meth:`str.splitlines` breaks on."""


def one_line(text: Any) -> str:
    """A single-line field of untrusted text (subject, name, reason, ID, rule) as one line: made
    safe by :func:`safe_text`, each line break (``\\n``, ``\\r``, U+2028 ... every break
    :meth:`str.splitlines` knows) shown as :data:`LINE_BREAK_MARK`. A field never
    starts a line of its own, so it cannot pose as the request's own lines."""
    return safe_text(_BREAKS.sub(LINE_BREAK_MARK, "" if text is None else str(text)))


def block(text: Any, indent: str = "  ") -> list[str]:
    """A multi-line untrusted value (customer message, reply draft, tool output, reason) as
    lines, each ``indent`` + :data:`BLOCK_MARK` + the line (an empty value is one marked empty
    line). The request's own lines never carry the mark, so a value holding
    ``  1. send_reply ...`` cannot pass for one of its actions. ``--json`` keeps plain strings;
    this is for lines on a screen."""
    value = safe_text("" if text is None else text)
    return [(indent + BLOCK_MARK + line).rstrip() for line in value.splitlines() or [""]]


@overload
def nfc(text: str) -> str: ...
@overload
def nfc(text: None) -> None: ...
def nfc(text: str | None) -> str | None:
    """``text`` in Unicode normal form C (None stays None). Names and searches are
    normalised on the way in, so ``Tomás`` typed as ``a`` + U+0301 is the registered ``Tomás``
    and a decomposed ``García`` finds the stored one."""
    return None if text is None else unicodedata.normalize("NFC", text)


def name_key(name: str) -> str:
    """How two names are compared: stripped, NFC, case-folded (``TOMÁS`` is
    ``Tomás``)."""
    return unicodedata.normalize("NFC", name.strip()).casefold()


def not_one_line(value: str | None, what: str) -> str | None:
    """The one sentence both faces refuse a decision's name or reason with when it spans lines
    (``The reason must be one line ...``), else None. A new user's finding: a reason holding
    ``\\nStatus: done`` printed a false status line on every face, so the app refuses a
    pasted two-line reason with this sentence too, never keeping its first line silently."""
    if value and _BREAKS.search(value):
        return f"The {what} must be one line (it holds a line break); nothing was decided."
    return None


def not_plain_name(value: str | None) -> str | None:
    """The one sentence every face refuses a decider's name with when it spans lines
    (:func:`not_one_line`) or holds a control or invisible formatting character (an escape
    sequence, a zero-width space or joiner, a direction mark: Unicode categories Cc and Cf),
    else None. A new user's finding: ``--name $'Gr\\x1b[31mace'`` and ``--name 'Gr\\u200bace'``
    were stored as typed, so the audit held a name that looks like Grace and is not hers."""
    said = not_one_line(value, "name")
    if said or not value:
        return said
    odd = next((ch for ch in value if unicodedata.category(ch) in ("Cc", "Cf")), None)
    if odd is not None:
        return f"The name holds an invisible or control character (U+{ord(odd):04X}); type it as plain text. Nothing was decided."
    return None


RUN_ID_MAX = 200
"""The longest run ID a new run may take, in characters."""


def run_id_problem(run_id: str) -> str | None:
    """Why ``run_id`` cannot name a new run (empty, longer than :data:`RUN_ID_MAX`, or holding
    a space, a line break, a control or an invisible character), else None. A new user's
    finding: the lesson's ``new_state(task, ..., "T-65273\nStatus: done")`` was saved, and every
    face then printed a run ID that broke the line it stood on."""
    if not run_id:
        return "A run ID cannot be empty: use one such as T-65273-crash-1."
    if len(run_id) > RUN_ID_MAX:
        return f"A run ID is at most {RUN_ID_MAX} characters; this one has {len(run_id)}."
    odd = odd_character(run_id)
    if odd is not None:
        return (
            f"A run ID is one word without spaces, line breaks or invisible characters; this one holds U+{ord(odd):04X}. "
            "Use one such as T-65273-crash-1; nothing was saved."
        )
    return None


def cells(text: str) -> int:
    """How many terminal cells ``text`` takes (widths in cells, not characters): a
    wide East Asian character or an emoji two, a combining mark, joiner or variation selector
    none, any other one. The app measures with Rich's ``cell_len``; core keeps Rich out and
    counts with :mod:`unicodedata` the same way for these. ASCII text takes one cell a character
    (the pane folds every line at every key, so this path is kept quick)."""
    if text.isascii():
        return len(text)
    return sum(map(_char_cells, text))


@lru_cache(maxsize=4096)
def _char_cells(ch: str) -> int:
    """The cells of one character (see :func:`cells`), kept per character: the pane folds its
    lines at every key, and a line with one em dash would otherwise be measured a character at a
    time through :mod:`unicodedata`."""
    if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf") or "\ufe00" <= ch <= "\ufe0f":
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def pad(text: str, width: int) -> str:
    """``text`` padded with spaces to ``width`` terminal cells (:func:`cells`), for the command
    line's columns (``approvers list``); a longer text is left whole."""
    return text + " " * max(0, width - cells(text))


CONTINUED_MARK = "↳ "
"""The mark at the start of the continuation of a line too wide for its screen (found
by a new user: a marked block's line wrapped by the terminal or the pane began its second row at
the margin, unmarked, where a customer's ``Who may approve: agent or above`` could stand)."""


def _cut(text: str, width: int) -> int:
    """How many characters of ``text`` fit in ``width`` cells (at least one), never leaving a
    combining mark apart from the character before it."""
    if text.isascii():
        return min(len(text), max(width, 1))
    return _cut_measured(text, width, _char_cells)


def _cut_measured(text: str, width: int, measure: Callable[[str], int]) -> int:
    """:func:`_cut` measuring each character with ``measure`` (its cells)."""
    used = 0
    for i, ch in enumerate(text):
        used += measure(ch)
        if used > width:
            j = max(i, 1)
            while j < len(text) and measure(text[j]) == 0:
                j += 1  # a combining mark stays with its letter
            return j
    return len(text)


def fold(lines: list[str], width: int) -> list[str]:
    """``lines`` folded to ``width`` terminal cells (:func:`cells`) so that no screen row begins
    with text of a line's middle: a line wider than ``width`` breaks at its last space that fits
    (or mid-word when none does), and each following row starts with the line's indentation and
    :data:`BLOCK_MARK` when the line is a block's, else with the indentation, two spaces and
    :data:`CONTINUED_MARK`. Core's own lines never start with either, so untrusted text keeps
    its mark on every row the screen shows. ``width`` under 12 is taken as 12; a
    line that fits is kept as it is."""
    width = max(width, 12)
    out: list[str] = []
    for line in lines:
        if cells(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        rest = line[len(indent) :]
        own = len(indent) + (len(BLOCK_MARK) if rest.startswith(BLOCK_MARK) else 0)  # the line's own start
        lead = indent + BLOCK_MARK if rest.startswith(BLOCK_MARK) else indent + "  " + CONTINUED_MARK
        if cells(lead) > width // 2:
            lead = CONTINUED_MARK
        room = width
        text = line
        while text:
            if cells(text) <= room:
                out.append(text if room == width else lead + text.rstrip(" "))
                break
            n = _cut(text, room)
            space = text.rfind(" ", 0, n + 1)
            if space > (own if room == width else 0):
                n = space  # the last word boundary that fits, as a terminal's word wrap
            head, text = text[:n].rstrip(" "), text[n:].lstrip(" ")
            out.append(head if room == width else lead + head)
            room = width - cells(lead)
    return out
