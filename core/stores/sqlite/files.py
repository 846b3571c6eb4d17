"""The SQLite files of a home, read or copied as files: what ``resolver doctor``,
``backup``, ``restore``, the home's kind and the listing's fast path once opened with
``sqlite3`` themselves. Each opens its own short-lived connection, read-only unless it copies
into a file, and closes it before it returns; none creates a database.

The functions of :mod:`core.ops.maintenance` that were here (``_online_backup``, ``_integrity``,
``_newest``, ``_saved_after``, ``scrub``, ``forget_replies``) moved whole; the probes of :mod:`core.ops.doctor`,
:mod:`core.api.homekind` and :mod:`core.api.listing` are their SQL, unchanged.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.ground.errors import ResolverError
from core.stores.common import JOURNAL_ROW
from core.stores.sqlite.audit import SqliteAudit
from core.stores.sqlite.database import Database

SQLITE_VERSION = sqlite3.sqlite_version
"""The SQLite library's version, for ``resolver doctor``."""

ENGINE_VERSION = SQLITE_VERSION
"""SQLite's version, by :class:`core.contract.backend.FolderFiles`' name for it."""

STORE_FORMAT = 7
"""The layout of ``runs.sqlite`` (SQLite ``user_version``): 1 (release 0.1.0, shown as 0: one
row per run with the whole state as JSON), 2 (header and rows), 3 (and the ``model_calls``
journal), 4 (and each entry's ``checksum``), 5 (and ``run_marks`` and
``queue_events``: :mod:`core.stores.sqlite.marks`), 6 (and the trigger that makes a
refreshed request a new request event), 7 (and ``model_calls.seal``: each journal row
sealed with the home's key). Formats 1 to 6 are migrated on open (:class:`core.stores.sqlite.checkpoint.CheckpointStore`)."""

DatabaseError = sqlite3.DatabaseError
"""What a read of a damaged or foreign file raises (callers outside :mod:`core.stores` catch it
by this name)."""


def _read_only(path: Path, timeout: float = 5.0) -> sqlite3.Connection:
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=timeout)


def online_backup(source: Path, target: Path, failure: str) -> None:
    """Copy the SQLite database ``source`` into ``target`` in one step by the online backup API:
    consistent while other connections write, and a live ``target`` keeps its WAL right. Raises
    ResolverError with the sentence ``failure``, the error in place of its ``{exc}``."""
    src = sqlite3.connect(f"{source.absolute().as_uri()}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(target, timeout=30)
    try:
        src.backup(dst)
    except sqlite3.Error as exc:
        raise ResolverError(failure.format(exc=exc)) from None
    finally:
        dst.close()
        src.close()


def integrity(path: Path) -> str | None:
    """None when ``PRAGMA integrity_check`` of the file at ``path`` passes, else its first
    problem (or the error that stopped the check)."""
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        try:
            result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    return None if result == ["ok"] else result[0]


def newest(path: Path) -> float:
    """The newest ``updated_ts`` of the runs in the store at ``path`` (0 without runs), read-only."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return float(conn.execute("SELECT MAX(updated_ts) FROM runs").fetchone()[0] or 0)
    except sqlite3.Error:
        return 0.0
    finally:
        conn.close()


def saved_after(path: Path, since: float) -> list[str]:
    """The runs of the store at ``path`` saved after ``since`` (``updated_ts``), newest first: a
    new run or a decision, a step or a write made after the backup."""
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT run_id FROM runs WHERE updated_ts > ? ORDER BY updated_ts DESC", (since,)).fetchall()
    except sqlite3.Error:
        return []
    finally:
        conn.close()
    return [str(r[0]) for r in rows]


def database_check(path: Path) -> tuple[list[str], int, set[str]]:
    """``resolver doctor``'s look at a database file, read-only: ``(PRAGMA integrity_check``'s
    lines (``["ok"]`` when whole), the format (``user_version``), the triggers present)``.

    Raises:
        DatabaseError: the file cannot be read as a database."""
    conn = _read_only(path)
    try:
        result = [r[0] for r in conn.execute("PRAGMA integrity_check")]
        fmt = conn.execute("PRAGMA user_version").fetchone()[0]
        found = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    finally:
        conn.close()
    return result, fmt, found


@contextmanager
def read_only_audit(path: Path) -> Iterator[tuple[set[str], SqliteAudit]]:
    """The audit of the store at ``path`` opened read-only for ``resolver doctor``: ``(the audit
    table's columns (empty when it has none), its reader)``; the connection closes at the end.

    Raises:
        ResolverError: the file cannot be read (SQLite's error in the sentence)."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        raise ResolverError(str(exc)) from exc
    try:
        try:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(audit)")}
        except sqlite3.Error as exc:
            raise ResolverError(str(exc)) from exc
        yield columns, SqliteAudit(conn)
    except sqlite3.Error as exc:
        raise ResolverError(str(exc)) from exc
    finally:
        conn.close()


def read_only_journal(path: Path) -> list[tuple[Any, ...]] | None:
    """Every row of the journal of model calls of the store at ``path``, opened read-only for
    ``resolver doctor``: :data:`core.stores.common.JOURNAL_ROW`'s values then the seal, by run,
    step and attempt; None when the store has no sealed journal yet (no ``model_calls`` table,
    or an earlier format whose rows are sealed at its upgrade). Raises ResolverError (SQLite's
    error in the sentence)."""

    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            if "seal" not in {r[1] for r in conn.execute("PRAGMA table_info(model_calls)")}:
                return None
            return [
                tuple(r)
                for r in conn.execute(f"SELECT {', '.join(JOURNAL_ROW)}, seal FROM model_calls ORDER BY run_id, step, attempt")
            ]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ResolverError(str(exc)) from exc


def has_signed_rows(path: Path, looked_at: int) -> bool:
    """Whether one of the newest ``looked_at`` audit rows of the store at ``path`` carries a
    signature (``sig``); False for a store that cannot be read, or without an audit table or
    ``sig`` column yet (older stores). Never raises."""
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            row = conn.execute(
                "SELECT 1 FROM (SELECT sig FROM audit ORDER BY id DESC LIMIT ?) WHERE sig IS NOT NULL AND sig != '' LIMIT 1",
                (looked_at,),
            ).fetchone()
        finally:
            conn.close()
    except sqlite3.Error:
        return False
    return row is not None


def store_format(path: Path) -> int | None:
    """The format (``user_version``) of the database at ``path``, read-only; None when SQLite
    cannot read it."""
    try:
        probe = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return int(probe.execute("PRAGMA user_version").fetchone()[0])
        finally:
            probe.close()
    except sqlite3.Error:
        return None


def scrub(db: Database, work: Callable[[sqlite3.Connection], object]) -> None:
    """Run ``work`` with SQLite's ``secure_delete`` on, then fold the write-ahead log into the
    database and truncate it: what ``work`` deletes is overwritten with zeros in the database
    file and gone from its ``-wal``, whatever the SQLite build's defaults are
    (https://sqlite.org/pragma.html#pragma_secure_delete). Raises StoreBusy when another
    connection holds the write lock past the busy timeout."""
    conn = db.connection()
    conn.execute("PRAGMA secure_delete = ON")
    try:
        work(conn)
    finally:
        conn.execute("PRAGMA secure_delete = OFF")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def forget_replies(conn: sqlite3.Connection, operations: list[str]) -> int:
    """Empty the text of the practice world's replies made by ``operations`` (a pruned run's):
    the customer's words go, while the reply row and the operations register's entry, which one
    effect per ticket and reconciliation read, stay. Returns how many replies were emptied."""
    emptied = 0
    with conn:
        for start in range(0, len(operations), 500):
            chunk = operations[start : start + 500]
            marks = ", ".join("?" * len(chunk))
            emptied += conn.execute(f"UPDATE replies SET text = '' WHERE operation_id IN ({marks})", chunk).rowcount
    return emptied


class FolderParts:
    """The per-shop parts of a SQLite home (:class:`core.contract.store.ShopParts`): the files
    ``approvers.json``, ``audit.head``, ``approval.key`` and ``clock.json`` in the home folder
    ``root``, as they always were: each written to a private temporary file (mode 0600) and
    renamed into place, so a reader sees the old file or the new one."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def label(self, name: str) -> str:
        """The file's path."""
        return str(self.root / name)

    def read(self, name: str) -> bytes | None:
        """The file's bytes, None when absent. Raises OSError (a folder in its place, no permission)."""
        try:
            return (self.root / name).read_bytes()
        except FileNotFoundError:
            return None

    def write(self, name: str, data: bytes) -> None:
        """Write the file atomically (mode 0600). Raises OSError; no temporary file is left."""
        path = self.root / name
        tmp = path.with_name(f".{name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    def create(self, name: str, data: bytes) -> bytes:
        """Link a private temporary file holding ``data`` into place unless the file exists
        (the first process to link wins); returns the file as it is then. Raises OSError."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
        return path.read_bytes()

    def remove(self, name: str) -> None:
        """Remove the file (nothing when absent). Raises OSError (IsADirectoryError for a folder)."""
        (self.root / name).unlink(missing_ok=True)
