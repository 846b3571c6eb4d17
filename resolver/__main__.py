"""``python -m resolver``: the ``resolver`` command, as seed 000 types it.

``main(argv=None)`` is the command line (:func:`core.cli.main`), with ``Next:`` and
``Resume with:`` lines naming ``python -m resolver``. It returns the exit code (0 ok, 1 an
expected error, 3 a simulated crash) and never exits the process, so the lesson's test file can
call ``main(["run", "T-90104", "--variant", "agent", "--repeat", "1"])``.
"""

from __future__ import annotations

from collections.abc import Sequence

from core.cli import entry
from core.cli import main as _main

PROG = "python -m resolver"
"""How the lesson invokes the command."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``resolver`` command line with ``argv`` (default ``sys.argv[1:]``); returns the exit code."""
    return _main(argv, prog=PROG)


if __name__ == "__main__":
    entry(PROG)
