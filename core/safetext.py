"""The one helper that makes untrusted text safe for a terminal (ticket text, evidence, the
model's rule, reasons, names, IDs from data), with nothing else imported: ``resolver runs``
prints through it without loading the state model. :mod:`core.views` re-exports it, and the
app's ``resolver_tui/widgets/safe.py`` builds on it (issue 13: no escape sequence from data
reaches a terminal, in the CLI as in the app).
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["safe_text"]

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
