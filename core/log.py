"""The home's log: a rotating file ``resolver.log`` beside the databases.

Decisions, refusals, executor calls and errors go here, with stack traces; the screen gets one
sentence and never a traceback (issue 13). Every face logs to the logger named ``resolver``:
the CLI through :func:`command_log`, the app through Textual's handler as well (the hook in
``resolver_tui/app.py``). The file is 0600, like every file of the home, and rotates at
:data:`MAX_BYTES` keeping :data:`BACKUPS` old files.
"""

from __future__ import annotations

import hashlib
import io
import logging
import logging.handlers
import os
import re
from pathlib import Path

LOG_NAME = "resolver.log"
MAX_BYTES = 1_000_000
"""Size at which the log rotates (bytes)."""
BACKUPS = 3
"""How many rotated files are kept (``resolver.log.1`` ...)."""

_FORMAT = "%(asctime)s %(levelname)s pid=%(process)d %(name)s: %(message)s"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _EscapingFormatter(logging.Formatter):
    """Writes control characters (escape sequences from a ticket, a reason) as ``\\xNN``, so
    ``cat resolver.log`` in a terminal is as safe as the screen."""

    def format(self, record: logging.LogRecord) -> str:
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", super().format(record))


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """A rotating file handler whose files are made 0600 (the log holds run IDs and reasons),
    opened for each record and closed after it: many homes in one process hold no file open,
    and several processes append to one log."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        return open(fd, "a", encoding=self.encoding, errors=self.errors)

    def emit(self, record: logging.LogRecord) -> None:
        super().emit(record)
        self.acquire()
        try:
            if self.stream is not None:
                self.stream.close()
                self.stream = None
        finally:
            self.release()


def command_log(home_root: Path | str, name: str = "resolver") -> logging.Logger:
    """The logger of the home at ``home_root`` (``name.home.<hash of the path>``), writing to
    ``HOME/resolver.log`` (the handler is added once per home and process).
    Returns the logger; a log that cannot be opened (a read-only folder) leaves it without a
    file handler rather than stopping the command."""
    path = (Path(home_root) / LOG_NAME).absolute()
    logger = logging.getLogger(f"{name}.home.{hashlib.sha256(str(path).encode()).hexdigest()[:16]}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if any(isinstance(h, _PrivateRotatingFileHandler) for h in logger.handlers):
        return logger
    try:
        handler = _PrivateRotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", delay=True)
    except OSError:
        return logger
    handler.setFormatter(_EscapingFormatter(_FORMAT))
    logger.addHandler(handler)
    return logger
