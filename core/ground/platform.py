"""The machines resolver runs on: POSIX only (Linux, macOS, the BSDs).

Leases check that their holder is alive with ``os.kill(pid, 0)``, which on POSIX only asks and
on Windows ends the process; file modes (0700 home, 0600 files) are POSIX too. So resolver
declares POSIX only (the classifiers in ``pyproject.toml``) and refuses to start on Windows with
one sentence.
"""

from __future__ import annotations

import os

from core.ground.errors import ResolverError


def require_posix(name: str = os.name) -> None:
    """Raise ResolverError on a machine that is not POSIX (``os.name != "posix"``)."""
    if name != "posix":
        raise ResolverError("resolver runs on Linux, macOS and other POSIX systems only; on Windows, use WSL.")
