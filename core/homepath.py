"""Where the home folder is, with nothing else imported (``resolver runs`` reads it first)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_HOME", "HOME_ENV", "resolve_home"]

HOME_ENV = "RESOLVER_HOME"
DEFAULT_HOME = "work"


def resolve_home(arg: str | os.PathLike | None = None) -> Path:
    """``--home DIR`` if given, else ``$RESOLVER_HOME``, else ``./work``."""
    return Path(arg or os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()
