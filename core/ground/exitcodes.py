"""The exit codes of resolver's commands (the ``resolver`` command line and the ``resolver-tui``
app) and the check every face makes of its arguments before reading them.

They live below both faces, so the app and the command line say the same codes and refuse the
same arguments without one importing the other. The README's "Exit codes" table lists them.
"""

from __future__ import annotations

from collections.abc import Sequence

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_CRASH = 3
EXIT_REFUSED = 4
EXIT_HANDED = 5
EXIT_INTERRUPTED = 130
"""Ctrl-C: the last checkpoint is saved (the shell's own code for SIGINT, 128 + 2)."""

EXIT_CODES = {
    EXIT_OK: "done: the command did what it was asked (an approve or resume whose run is done)",
    EXIT_ERROR: "error: one sentence on stderr (unknown run, damaged file, locked database ...)",
    EXIT_USAGE: "the command line could not be read (a bad option or value, text that is not UTF-8)",
    EXIT_CRASH: "a simulated crash (--interrupt): resume the run",
    EXIT_REFUSED: "refused: the rulebook, the approval checks, a lease, a shop home or a separated team store said no; nothing changed",
    EXIT_HANDED: "handed to a person: an approve or resume ended with the run handed_to_person",
}
"""The ``resolver`` command's exit codes (README, "Exit codes")."""


def not_utf8(argv: Sequence[str]) -> str | None:
    """The first argument holding bytes that are not UTF-8 (Python keeps them as lone
    surrogates), shown with those bytes escaped; None when every argument is text."""
    for arg in argv:
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            return ascii(arg.encode("utf-8", "surrogateescape"))[1:]
    return None
