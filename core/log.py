"""The home's log: a rotating file ``resolver.log`` beside the databases.

Decisions, refusals, executor calls and errors go here, with stack traces; the screen gets one
sentence and never a traceback (issue 13). Every face logs to the logger named ``resolver``:
the CLI through :func:`command_log`, the app through Textual's handler as well (the hook in
``resolver_tui/app.py``). The file is 0600, like every file of the home, and rotates at
:data:`MAX_BYTES` keeping :data:`BACKUPS` old files.
"""

from __future__ import annotations

import io
import logging
import logging.handlers
import os
from pathlib import Path

LOG_NAME = "resolver.log"
MAX_BYTES = 1_000_000
"""Size at which the log rotates (bytes)."""
BACKUPS = 3
"""How many rotated files are kept (``resolver.log.1`` ...)."""

_FORMAT = "%(asctime)s %(levelname)s pid=%(process)d %(name)s: %(message)s"


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler whose files are made 0600 (the log holds run IDs and reasons)."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)


def command_log(home_root: Path | str, name: str = "resolver") -> logging.Logger:
    """The logger ``name`` writing to ``HOME/resolver.log`` (added once per home and process).
    Returns the logger; a log that cannot be opened (a read-only folder) leaves it without a
    file handler rather than stopping the command."""
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    path = Path(home_root) / LOG_NAME
    for handler in logger.handlers:
        if isinstance(handler, logging.handlers.RotatingFileHandler) and Path(handler.baseFilename) == path.absolute():
            return logger
    try:
        handler = _PrivateRotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    except OSError:
        return logger
    handler.setFormatter(logging.Formatter(_FORMAT))
    logger.addHandler(handler)
    return logger
