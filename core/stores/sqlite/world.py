"""The Larkfield practice world in SQLite: ``larkfield.sqlite``, its read-only tools and write services.

The SQLite implementation of the world's contract (:class:`core.contract.world.World`); the
tools' names, the register's call shapes and the services' errors are :mod:`core.contract.world`'s.

The world is built on first use from ``data/world.json``. It holds customers, catalog, orders,
payments and shipments, what the write services did (refunds, reshipments, return labels,
replies) and the **operations register**: for each operation ID, the service, its arguments and
its result. The register is what the executor reconciles with after a crash (seed 000, "What
survives a crash").

Write services take an operation ID as their idempotency key: a second call with the same ID
changes nothing and returns the first result. Each checks its own invariants at the moment of
the write and raises :class:`ServiceRefused` with the service's sentence, for instance
``PAY-507862-2 is not a captured charge of LK-507862``. Simulated faults raise
:class:`TransientServiceError` once each and are recorded in the caller's ``faults_seen``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sqlite_utils

from core.contract.world import (
    WorldMissing,
)
from core.ground.data import load_world_data
from core.stores.practice import EFFECT_TABLES_COLUMNS, PracticeWorld, world_rows
from core.stores.sqlite.database import Database
from core.stores.sqlite.files import forget_replies, scrub


class SqliteWorld(PracticeWorld):
    """The practice world in ``path`` (``larkfield.sqlite``), built from ``data/`` on first use;
    its tools and services are :class:`core.stores.practice.PracticeWorld`'s.

    Args:
        path: the database file.
        clock: stamps the writes.
        faults: simulated faults of this ticket (``data/tickets``), met once each.
        faults_seen: the run's list of faults already met; appended to in place.
        actor: who writes (a run ID, or ``manual`` for the weekend phone call).
    """

    def _open(self) -> None:
        """Open the world file, built on first use; one this process checked with history
        (:func:`check_world_file`) and now missing is refused before SQLite makes an empty file
        in its place (a trial: ``resolver show`` with ``larkfield.sqlite`` moved away left a
        4 KB world that every later command took for an emptied one). Raises WorldMissing."""
        if self.path.resolve() in _no_rebuild and not self.path.exists():
            raise WorldMissing(_missing_sentence(self.path, "is missing"))
        self.db = _database(self.path)
        self.db.connection()  # built on first use

    # -- connections and building ---------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        with self.db.read() as conn:
            yield conn

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        with self.db.immediate() as conn:
            yield conn

    @contextmanager
    def _snapshot(self) -> Iterator[sqlite3.Connection]:
        with self.db.snapshot() as conn:  # one snapshot for the result and the number (WAL)
            yield conn

    @staticmethod
    def _ensure_built(conn: sqlite3.Connection, key: Path | None = None) -> None:
        """Build the world in a new (or rebuilt) file; another process building it at the same
        moment is waited for, and the tables are made once. A file whose home has history
        (:func:`check_world_file`) is never rebuilt here: its register would be lost."""
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'operations'").fetchone():
            SqliteWorld._migrate(conn)
            return
        if key is not None and key in _no_rebuild:
            raise WorldMissing(_missing_sentence(key, "lost its tables"))
        SqliteWorld._build(conn)

    @staticmethod
    def _build(conn: sqlite3.Connection) -> None:
        data = load_world_data()
        db = sqlite_utils.Database(conn)
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'operations'").fetchone():
                conn.execute("ROLLBACK")
                return
            for table, (rows, pk) in world_rows(data).items():
                db.table(table).insert_all(rows, pk=pk)
            db.table("payments").create_index(["order_id"])
            db.table("shipments").create_index(["order_id"])
            for table, columns in EFFECT_TABLES_COLUMNS.items():
                db.table(table).create(dict(columns), pk=columns[0][0])
            db.table("return_labels").create_index(["order_id", "sku"], unique=True)
            conn.execute("CREATE UNIQUE INDEX operations_seq ON operations (seq)")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @staticmethod
    def _migrate(conn: sqlite3.Connection) -> None:
        """Give a register made before its entries were numbered its ``seq`` column: each entry's number in commit
        order. Entries were only ever appended, one write transaction at a time, and never
        deleted, so their rowid order is the order in which they were committed. Another process
        migrating at the same moment is waited for; the column is added once."""
        if _has_seq(conn):
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            if not _has_seq(conn):
                conn.execute("ALTER TABLE operations ADD COLUMN seq INTEGER")
                conn.execute("UPDATE operations SET seq = rowid")
                conn.execute("CREATE UNIQUE INDEX IF NOT EXISTS operations_seq ON operations (seq)")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def reset(self) -> None:
        """Rebuild the world from ``data/`` (every write since is forgotten): :func:`reset_world`."""
        reset_world(self.path)

    def forget_replies(self, operations: list[str]) -> int:
        """Empty the text of the replies made by ``operations`` with SQLite's ``secure_delete``
        on and the WAL truncated after (:func:`core.stores.sqlite.files.scrub`); the reply rows
        and the register stay. Returns how many replies were emptied."""

        emptied: list[int] = []
        scrub(self.db, lambda conn: emptied.append(forget_replies(conn, operations)))
        return emptied[0]


def _has_seq(conn: sqlite3.Connection) -> bool:
    return any(r[1] == "seq" for r in conn.execute("PRAGMA table_info(operations)"))


_no_rebuild: set[Path] = set()
"""World files (resolved) of homes with history: never built again silently in this process."""


def _missing_sentence(path: Path, what: str) -> str:
    return (
        f"The practice world {path} {what}, but this home has runs; rebuilding it would lose its operations "
        "register and a resume could write again. Restore larkfield.sqlite from a backup (`resolver restore`), "
        "or start afresh with `resolver reset --all`."
    )


def check_world_file(path: Path | str, has_history: bool) -> None:
    """Refuse a practice world that cannot be used as it is.

    A directory in its place is refused always; a missing or zero-length file only when the home
    has history (``has_history``: runs or audit rows), since building it again would forget
    which operations were done. A fresh home builds it. Once checked with history, this process
    never rebuilds the file silently (a file deleted later is refused the same way).

    Raises:
        WorldMissing: with a sentence saying how to restore or reset.
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        raise WorldMissing(
            f"The practice world {path} is not a file; move it away, then restore larkfield.sqlite from a backup "
            "or start afresh with `resolver reset --all`."
        )
    if not has_history:
        return
    _no_rebuild.add(path.resolve())
    if not path.exists():
        raise WorldMissing(_missing_sentence(path, "is missing"))
    if path.stat().st_size == 0:
        raise WorldMissing(_missing_sentence(path, "is empty"))


def reset_world(path: Path | str) -> None:
    """Delete the practice world in ``path`` (with its WAL and SHM) and build it again from
    ``data/``: every write since is forgotten (``resolver reset --all``). Works on a missing,
    empty or damaged file too. Raises WorldMissing when a directory is in its place."""
    path = Path(path)
    if path.exists() and not path.is_file():
        check_world_file(path, False)
    db = _database(path)
    db.close()
    _no_rebuild.discard(path.resolve())
    path.unlink(missing_ok=True)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    db.made_again()
    db.connection()  # a new file: built again by the first connection


_databases: dict[Path, Database] = {}
_databases_lock = threading.Lock()


def register_entries(path: Path | str) -> list[dict[str, Any]]:
    """:func:`core.stores.register_entries` on a SQLite world file, opened read only (``mode=ro``).

    Raises:
        ValueError: the file is not a database, its register cannot be read (a column renamed),
            or its ``operations`` table is gone while the writes' own tables remain.
    """
    path = Path(path)
    if not path.is_file():
        return []
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "operations" not in tables:
                if tables & {"refunds", "reshipments", "return_labels", "replies"}:
                    raise ValueError("the world holds writes but no operations register")
                return []
            order = "seq" if _has_seq(conn) else "rowid"
            rows = conn.execute(f"SELECT operation_id, service, actor, at, {order} FROM operations ORDER BY {order}").fetchall()
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ValueError(str(exc)) from None
    return [{"operation_id": r[0], "service": r[1], "actor": r[2], "at": r[3], "seq": r[4]} for r in rows]


def _database(path: Path) -> Database:
    """The one :class:`~core.stores.sqlite.database.Database` of a world file in this process: every World on
    the same file shares its per-thread connections."""
    key = path.resolve()
    with _databases_lock:
        db = _databases.get(key)
        if db is None:
            db = _databases[key] = Database(
                path,
                label="the practice world",
                on_open=lambda conn: SqliteWorld._ensure_built(conn, key),
                row_factory=sqlite3.Row,
            )
        return db
