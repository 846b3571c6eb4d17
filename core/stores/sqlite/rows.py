"""Every row of a SQLite home, table by table: :class:`SqliteRows`, the SQLite
side of :class:`core.contract.store.StoreRows`, what ``resolver store copy`` reads and writes.

A SQLite home keeps its parts in three files of the folder: the runs and the audit in
``runs.sqlite``, the practice world in ``larkfield.sqlite``, the approvers' rows in
``approvers.sqlite``. Each part is read in one read transaction of its file (WAL: one snapshot
while others write) and written in one ``BEGIN IMMEDIATE`` transaction. The target's own
triggers run as the rows go in: the queue's counts (``run_counts``), the search index and the
audit's stored length (``audit_tip``) come out as a save would have left them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path

from core.contract.store import JournalKey, blank_columns
from core.ground.errors import ResolverError
from core.ground.homepath import home_was_used
from core.stores.common import COPY_BATCH, COPY_PARTS, Batch, check_batch, copy_columns, copy_order, refuse_used
from core.stores.sqlite.audit import ensure_columns
from core.stores.sqlite.checkpoint import CheckpointStore
from core.stores.sqlite.database import Database
from core.stores.sqlite.registry import SqliteApproverRows
from core.stores.sqlite.world import _database

RUNS_FILE = "runs.sqlite"
WORLD_FILE = "larkfield.sqlite"
REGISTRY_FILE = "approvers.sqlite"

_FILES = {"runs": RUNS_FILE, "audit": RUNS_FILE, "events": RUNS_FILE, "world": WORLD_FILE, "registry": REGISTRY_FILE}


class SqliteRows:
    """The rows of the SQLite home folder ``root`` (see the module's docstring). Opening it
    creates nothing; a part's file is made (and migrated, as every open does) when it is read
    or written.

    Attributes:
        root: the home folder. label: ``the home folder ROOT``, for sentences.
    """

    def __init__(self, root: Path | str, *, journal_key: JournalKey | None = None) -> None:
        self.root = Path(root)
        self._journal_key = journal_key
        """The home's approval key (:func:`core.stores.folder_journal_key`): an earlier format's
        journal of model calls is sealed with it at its upgrade."""
        self.label = f"the home folder {self.root}"
        self._dbs: dict[str, Database] = {}
        self._new = not (self.root / "runs.sqlite").exists() and not home_was_used(self.root)
        """No store, world or key here when opened: a copy's target, whose ``runs.sqlite`` is made
        after its key (not a lost store in a used home, :class:`CheckpointStore`'s ``afresh``)."""

    # -- the files ------------------------------------------------------------------------------

    def _file(self, part: str) -> Path:
        return self.root / _FILES[part]

    def _database(self, part: str) -> Database:
        """The part's database, opened as the home opens it (made on first use, migrated on open)."""
        key = "runs" if part in ("audit", "events") else part
        if key not in self._dbs:
            self._dbs[key] = self._open(key)
        return self._dbs[key]

    def _open(self, part: str) -> Database:
        if part == "runs":
            return CheckpointStore(self._file(part), summarize=blank_columns, afresh=self._new, journal_key=self._journal_key).db
        if part == "world":
            db = _database(self._file(part))
            db.connection()  # built (or migrated) on first use
            return db
        return SqliteApproverRows(self.root).database()

    def has_part(self, part: str) -> bool:
        """True when the part's file exists and is not empty."""
        path = self._file(part)
        return path.is_file() and path.stat().st_size > 0

    def row_counts(self) -> dict[str, int]:
        """Rows per table of every part (0 for a part whose file is missing)."""
        counts: dict[str, int] = {}
        for part, tables in COPY_PARTS.items():
            if not self.has_part(part):
                counts.update(dict.fromkeys(tables, 0))
                continue
            with self._database(part).read() as conn:
                for table in tables:
                    counts[table] = int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
        return counts

    def recorded_kind(self) -> str | None:
        """None: a SQLite store is its home folder, whose kind ``home.json`` says (:mod:`core.api.homekind`)."""
        return None

    # -- export and import ------------------------------------------------------------------------

    def export_rows(self, part: str) -> Iterator[Batch]:
        """The part's rows in batches, in one read transaction (see :meth:`core.contract.store.StoreRows.export_rows`)."""
        tables = COPY_PARTS[part]
        if not self.has_part(part):
            return
        db = self._database(part)
        if part == "audit":
            _audit_columns(db)
        with db.snapshot() as conn:
            for table in tables:
                columns = copy_columns(table)
                cur = conn.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {copy_order(table, 'rowid')}")
                while rows := cur.fetchmany(COPY_BATCH):
                    yield table, columns, [tuple(r) for r in rows]

    def copied(self) -> None:
        """Nothing: a SQLite store's readers poll (:meth:`core.contract.store.StoreRows.copied`)."""

    def db_users(self) -> tuple[dict[str, str], None]:
        """None: a SQLite store has no database users (:meth:`core.contract.store.StoreRows.db_users`)."""
        return {}, None

    def map_db_users(self, mapping: dict[str, str]) -> int:
        """Refused: a SQLite home has no database users (:meth:`core.contract.store.StoreRows.map_db_users`)."""
        raise ResolverError("A SQLite home has no database users; role separation is for a team store.")

    def import_rows(self, part: str, batches: Iterable[Batch]) -> dict[str, int]:
        """Write the part's rows in one ``BEGIN IMMEDIATE`` transaction (see
        :meth:`core.contract.store.StoreRows.import_rows`). Raises StoreNotEmpty, ResolverError."""
        tables = COPY_PARTS[part]
        written = dict.fromkeys(tables, 0)
        db = self._database(part)
        if part == "audit":
            _audit_columns(db)
        with db.immediate() as conn:
            refuse_used(self.label, {t: int(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in tables})
            if part == "world":
                for table in tables:
                    conn.execute(f"DELETE FROM {table}")
            if part == "events":  # the events the triggers wrote as the copied rows went in: the source's replace them
                conn.execute("DELETE FROM queue_events")
            for batch in batches:
                check_batch(part, batch)
                table, columns, rows = batch
                conn.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})", rows)
                written[table] += len(rows)
        return written


def _audit_columns(db: Database) -> None:
    """Give the audit its chain's columns if it lacks them (a store made before the audit was
    chained or before its rows bound the head, or a new one not yet appended to): :func:`core.stores.sqlite.audit.ensure_columns`."""
    with db.read() as conn:
        have = {r[1] for r in conn.execute("PRAGMA table_info(audit)")}
    if {"prev", "sig", "binds"} <= have:
        return
    with db.immediate() as conn:
        ensure_columns(conn)


def store_format(root: Path | str) -> int | None:
    """The format of ``runs.sqlite`` in the home folder ``root`` (SQLite's ``user_version``; 0
    for release 0.1.0's), read without changing the file; None when there is no store there.
    Raises ResolverError (one sentence) for a file SQLite cannot read."""
    path = Path(root) / RUNS_FILE
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, timeout=5.0)
        try:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ResolverError(f"The checkpoint store {path} cannot be read: {exc}.") from None


__all__ = ["SqliteRows", "store_format"]
