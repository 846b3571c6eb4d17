"""The Larkfield practice world in PostgreSQL: :class:`PostgresWorld`, implementing
:class:`core.contract.world.World`. Its tools and write services are
:class:`core.stores.practice.PracticeWorld`'s, the SQL shared with the SQLite back-end; this
module supplies the connections, builds the world and guards its register.

**The register's order.** Every write service runs in one transaction that first locks the
register's one-row head (``SELECT ... FROM register_head FOR UPDATE``) and holds it until its
commit: the world's writers take turns, as SQLite's ``BEGIN IMMEDIATE`` makes them, so a payment
is never refunded twice by two writers that both read it before either wrote, and the entry's
number (``MAX(seq) + 1``, taken under the lock) follows commit order. A reader's
:meth:`~PracticeWorld.read_tool` reads the tool's result and the register's number in one
``REPEATABLE READ`` snapshot.

The world's tables are made by the schema's migration 3 (:mod:`core.stores.postgres.schema`) and
filled from ``data/`` when the world is first opened (:func:`build`), under an advisory lock so
two processes build it once; ``register_head`` holds its row once it is built. :func:`reset_world`
empties every world table and builds it again; :func:`check_world` refuses a world that was never
built, or was emptied, in a store with history (its register would be lost).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from core.contract.world import WorldMissing
from core.ground.clock import Clock
from core.ground.data import Fault, load_world_data
from core.ground.errors import ResolverError
from core.stores.postgres.database import database
from core.stores.postgres.pool import Database, QmarkConnection
from core.stores.postgres.schema import WORLD_TABLES
from core.stores.practice import PracticeWorld, world_rows


class PostgresWorld(PracticeWorld):
    """The practice world in the PostgreSQL database (and schema) of ``url``, built from
    ``data/`` on first use (see the module's docstring and :class:`PracticeWorld`'s arguments).

    Raises:
        ResolverError: the database cannot be reached (one sentence).
        WorldMissing: the world is gone from a store whose world this process found with history.
    """

    _TIEBREAK = "t.operation_id"

    def __init__(
        self,
        url: str,
        clock: Clock | None = None,
        faults: Iterable[Fault] = (),
        faults_seen: list[str] | None = None,
        actor: str = "manual",
    ) -> None:
        self.db: Database = database(url)
        self.url = url
        super().__init__(self.db.path, clock, faults, faults_seen, actor)

    def _open(self) -> None:
        build(self.db)

    @contextmanager
    def _connect(self) -> Iterator[QmarkConnection]:
        with self.db.read() as conn:
            yield QmarkConnection(conn)

    @contextmanager
    def _immediate(self) -> Iterator[QmarkConnection]:
        with self.db.transaction() as conn:
            conn.execute("SELECT one FROM register_head FOR UPDATE")
            yield QmarkConnection(conn)

    @contextmanager
    def _snapshot(self) -> Iterator[QmarkConnection]:
        with self.db.snapshot() as conn:
            yield QmarkConnection(conn)

    def reset(self) -> None:
        """Build the world again from ``data/`` (every write since is forgotten): :func:`reset_world`."""
        reset_world(self.url)

    def forget_replies(self, operations: list[str]) -> int:
        """Empty the text of the replies made by ``operations`` (the rows and the register stay),
        then ``VACUUM`` the table so the old text's space is marked free. Returns how many."""
        with self.db.transaction() as conn:
            n = conn.execute(
                "UPDATE replies SET text = '' WHERE operation_id = ANY(%s) AND text <> ''", (list(operations),)
            ).rowcount
        with self.db.read() as conn:
            conn.execute("VACUUM replies")
        return n


_no_rebuild: set[str] = set()
"""URLs whose store had history when its world was checked: never built again silently here."""
_built: set[str] = set()
_lock = threading.Lock()


def _is_built(conn: psycopg.Connection[Any]) -> bool:
    return conn.execute("SELECT EXISTS (SELECT 1 FROM register_head)").fetchone()[0] is True  # type: ignore[index]


def _fill(conn: psycopg.Connection[Any]) -> None:
    for table, (rows, _pk) in world_rows(load_world_data()).items():
        if not rows:
            continue
        columns = list(rows[0])
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))})",
                [tuple(r.get(c) for c in columns) for r in rows],
            )
    conn.execute("INSERT INTO register_head VALUES (true)")


def build(db: Database) -> None:
    """Fill the world from ``data/`` unless it is built (once per process and URL, and once
    between processes: under an advisory lock). Raises WorldMissing when this process found the
    store with history and the world has since gone."""
    if db.url in _built:
        return
    with db.read() as conn:  # a built world is only read: no transaction, so a store refusing writes still opens
        built = _is_built(conn)
    if built:
        with _lock:
            _built.add(db.url)
        return
    with db.transaction() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('resolver-world:' || current_schema()))")
        if not _is_built(conn):
            if db.url in _no_rebuild:
                raise WorldMissing(_missing_sentence(db.label, "was emptied"))
            _fill(conn)
    with _lock:
        _built.add(db.url)


def _missing_sentence(label: str, what: str) -> str:
    return (
        f"The practice world in {label} {what}, but the store has runs; building it again would lose its operations "
        "register and a resume could write again. Restore the database from a backup, or start afresh with "
        "`resolver reset --all`."
    )


def check_world(url: str, has_history: bool) -> None:
    """Refuse a practice world that was never built, or was emptied, in a store with history
    (``has_history``: runs or audit rows); once checked with history, this process never builds
    it again silently. Raises WorldMissing with a sentence; ResolverError when unreachable."""
    if not has_history:
        return
    db = database(url)
    with _lock:
        _no_rebuild.add(url)
    with db.read() as conn:
        if not _is_built(conn):
            with _lock:
                _built.discard(url)
            raise WorldMissing(_missing_sentence(db.label, "is missing"))


def reset_world(url: str) -> None:
    """Empty every table of the practice world and build it again from ``data/`` in one
    transaction: every write since is forgotten (``resolver reset --all``)."""
    db = database(url)
    with db.transaction() as conn:
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('resolver-world:' || current_schema()))")
        conn.execute(f"TRUNCATE {', '.join(WORLD_TABLES)}")
        _fill(conn)
    with _lock:
        _no_rebuild.discard(url)
        _built.add(url)


def register_entries(url: str) -> list[dict[str, Any]]:
    """Every entry of the operations register, in commit order: ``{"operation_id", "service",
    "actor", "at", "seq"}``, read in one statement; empty when the world was never built. Raises ValueError when the register
    cannot be read (one sentence)."""

    try:
        db = database(url)
        with db.read() as conn:
            rows = conn.execute("SELECT operation_id, service, actor, at, seq FROM operations ORDER BY seq").fetchall()
    except ResolverError as exc:
        raise ValueError(str(exc)) from None
    return [{"operation_id": r[0], "service": r[1], "actor": r[2], "at": r[3], "seq": r[4]} for r in rows]


__all__ = ["PostgresWorld", "build", "check_world", "register_entries", "reset_world"]
