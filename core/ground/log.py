"""The home's log: a rotating file ``resolver.log`` beside the databases.

Decisions, refusals, executor calls and errors go here, with stack traces; the screen gets one
sentence and never a traceback. Every face logs to the logger named ``resolver``:
the CLI through :func:`command_log`, the app through Textual's handler as well (the hook in
``resolver_tui/app.py``). The file is 0600, like every file of the home, and rotates at
:data:`MAX_BYTES` keeping :data:`BACKUPS` old files.

Several processes write one log (the app, a command line, a second approver's app), so rotation
is done by ``concurrent-log-handler``: every record is written, and every rotation
made, under an exclusive lock on the lock file ``.__resolver.lock`` beside the log, so a record
is never lost and a kept old file never overwritten by another process's rotation. The standard
library's ``RotatingFileHandler`` is safe within one process only. No file stays open between
records (many homes in one process hold no file open). Nothing of the log is ever printed on
the terminal: a record that cannot be written (a full disk, a folder in the log's place) is
dropped silently instead of logging's ``--- Logging error ---`` traceback on stderr.

The libraries' own loggers (:data:`LIBRARY_LOGGERS`: psycopg and its pool, which warn
``discarding closed connection: <psycopg.Connection [BAD] ...>`` when the server ends a
connection) write to the first home's log of the process and never reach the terminal: without
a handler, logging's last resort would print their warnings on stderr, between the sentences
of a watcher or over the app's screen.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sys
from contextlib import suppress
from pathlib import Path

from concurrent_log_handler import ConcurrentRotatingFileHandler

from core.ground.masking import mask_text

LOG_NAME = "resolver.log"
LOCK_NAME = ".__resolver.lock"
"""The lock file ``concurrent-log-handler`` keeps beside the log (its name for ``resolver.log``)."""
MAX_BYTES = 1_000_000
"""Size at which the log rotates (bytes); a record is never split, so a file may pass it by one
record, and by a few when several processes write at once."""
BACKUPS = 3
"""How many rotated files are kept (``resolver.log.1`` ...)."""
FILE_MODE = 0o600
"""Mode of the log, its old files and its lock file: the log holds run IDs and reasons."""

LIBRARY_LOGGERS = ("psycopg",)
"""Loggers of the libraries resolver uses that warn on their own (``psycopg.pool`` is a child of
``psycopg``): kept off the terminal, in the home's log (:func:`command_log`)."""

_FORMAT = "%(asctime)s %(levelname)s pid=%(process)d %(name)s: %(message)s"


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _EscapingFormatter(logging.Formatter):
    """Writes control characters (escape sequences from a ticket, a reason) as ``\\xNN``, so
    ``cat resolver.log`` in a terminal is as safe as the screen, and masks every password
    (:func:`core.ground.masking.mask_text`): a record quotes command lines, URLs and libraries' errors,
    and the log is kept for months where a password must never be."""

    def format(self, record: logging.LogRecord) -> str:
        text = mask_text(super().format(record))
        return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _create_private(path: Path | str) -> None:
    """Make ``path`` empty with mode 0600 if it does not exist; an existing file keeps its mode
    (resolver never changes the mode of a file it did not make). Never raises."""
    with suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))


class _HomeLogHandler(ConcurrentRotatingFileHandler):
    """``concurrent-log-handler``'s rotating handler, safe across processes, with the home's
    rules: files made 0600 (by :func:`_create_private`, never by a chmod of an existing file:
    the handler is given no ``chmod``), none kept open between records, and never a word on
    the terminal."""

    def doRollover(self) -> None:
        """Rotate, then make the new log 0600 before anyone writes it."""
        super().doRollover()
        _create_private(self.baseFilename)

    problem: str | None = None
    """Why the first record that could not be written failed (None while every record was)."""

    def handleError(self, record: logging.LogRecord) -> None:
        """A record that cannot be written is dropped: the log never prints on the terminal
        (logging's default prints a traceback on stderr), and the command goes on. The first
        failure is kept in :attr:`problem` for :func:`log_problem`."""
        if self.problem is None:
            exc = sys.exc_info()[1]
            self.problem = (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__) if exc else "unknown"


def log_problem(logger: logging.Logger) -> str | None:
    """One sentence when the home's log of ``logger`` could not be written (said once
    by the command line, never a traceback), else None. The first failure is kept, so the
    sentence is the same however many records were dropped."""
    for handler in logger.handlers:
        if isinstance(handler, _HomeLogHandler) and handler.problem:
            return f"The home's log {handler.baseFilename} cannot be written ({handler.problem}); the command went on without it."
    return None


def command_log(home_root: Path | str, name: str = "resolver") -> logging.Logger:
    """The logger of the home at ``home_root`` (``name.home.<hash of the path>``), writing to
    ``HOME/resolver.log`` (the handler is added once per home and process).

    Returns the logger. A log that cannot be opened (a read-only folder, a file in the home's
    place) leaves it with a handler that drops every record, never stopping the command and
    never falling back to logging's last-resort handler on stderr.
    """
    path = (Path(home_root) / LOG_NAME).absolute()
    logger = logging.getLogger(f"{name}.home.{hashlib.sha256(str(path).encode()).hexdigest()[:16]}")
    logger.setLevel(logging.INFO)
    logger.propagate = False
    if any(isinstance(h, (_HomeLogHandler, logging.NullHandler)) for h in logger.handlers):
        return logger
    _create_private(path)
    _create_private(path.with_name(LOCK_NAME))
    try:
        handler: logging.Handler = _HomeLogHandler(
            str(path), maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8", keep_file_open=False
        )
    except OSError:
        handler = logging.NullHandler()
    handler.setFormatter(_EscapingFormatter(_FORMAT))
    logger.addHandler(handler)
    _libraries_to(handler)
    return logger


def _libraries_to(handler: logging.Handler) -> None:
    """Send :data:`LIBRARY_LOGGERS` to ``handler`` (the first home's log of the process; a later
    home's log gets only resolver's own records) and never to the terminal: they stop
    propagating to the root logger, whose last resort prints on stderr."""
    for name in LIBRARY_LOGGERS:
        library = logging.getLogger(name)
        library.propagate = False
        if not library.handlers:
            library.addHandler(handler)
