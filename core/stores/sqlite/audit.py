"""The audit chain's SQL in ``runs.sqlite``: the functions :mod:`core.engine.auditchain`
once held, moved here whole so that no module outside :mod:`core.stores` speaks SQL.

Each runs on a connection of the checkpoint store, inside the caller's transaction where it
writes; the chain's rules (:data:`~core.contract.audit.COLUMNS`, :func:`~core.contract.audit.row_hash`,
:data:`~core.contract.audit.GENESIS`, :class:`~core.contract.audit.AuditMoved`) are the core's.
:class:`SqliteAudit` reads the audit of one connection as :class:`core.contract.store.AuditLog`'s read
side, for ``resolver doctor`` and ``audit verify`` on a store opened read-only.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from core.contract.audit import COLUMNS, GENESIS, TRIGGERS, AuditMoved, as_row, ends_approval_sql, row_hash
from core.stores.common import audit_values


def _columns(conn: sqlite3.Connection) -> set[str]:
    """The audit table's columns: ``PRAGMA table_info`` until all of :data:`COLUMNS` are there,
    then remembered on the connection (:class:`core.stores.sqlite.database.Connection`; a plain
    ``sqlite3`` connection asks every time)."""
    known = getattr(conn, "known", None)
    if known is not None and "audit" in known:
        return known["audit"]
    have = {r[1] for r in conn.execute("PRAGMA table_info(audit)")}
    if known is not None and have >= set(COLUMNS):
        known["audit"] = have
    return have


def ensure_columns(conn: sqlite3.Connection) -> None:
    """Add ``prev`` and ``sig`` (a store made before the audit was chained) and ``binds`` (before the
    head was signed into each row) to the audit table if it lacks them: the migration of those
    columns, made at the first audit read or write.

    Runs inside the caller's transaction; existing rows keep NULL (the unchained prefix, rows
    signed over the chain's hash alone). A file its owner left read-only is read as it is."""
    have = _columns(conn)
    if not have:
        return
    for name in ("prev", "sig", "binds"):
        if name not in have:
            try:
                conn.execute(f"ALTER TABLE audit ADD COLUMN {name} TEXT")
            except sqlite3.OperationalError as exc:
                if "readonly" not in str(exc):
                    raise
                return  # read as it is, see _select


def _select(conn: sqlite3.Connection) -> str:
    """``SELECT`` of :data:`~core.contract.audit.COLUMNS` from the audit, with NULL for a column an
    older store lacks (only when that store could not be given it: a read-only file)."""
    have = _columns(conn)
    if have >= _ALL:
        return _SELECT_ALL
    return f"SELECT {', '.join(c if c in have else f'NULL AS {c}' for c in COLUMNS)} FROM audit"


_ALL = frozenset(COLUMNS)
_SELECT_ALL = f"SELECT {', '.join(COLUMNS)} FROM audit"
"""The select of a store with every column (built once, not at every decision)."""


def last_hash(conn: sqlite3.Connection) -> tuple[str, int]:
    """``(hash of the newest row, number of rows)``; ``(GENESIS, 0)`` for an empty audit.

    The newest row by its key and the length from ``audit_tip`` (kept by a
    trigger in the transaction of every insert), never a count of the table, so a decision costs
    the same at any length of the audit. Only a store not given ``audit_tip`` yet (one made
    before it, read from a file opened read-only) is counted."""
    ensure_columns(conn)
    # the newest row by its key (a SEARCH in the plan; "ORDER BY id DESC LIMIT 1" reads one row
    # too, but its plan says SCAN, which the test of a decision's queries refuses)
    select = _select(conn)
    if select is _SELECT_ALL:  # and the stored length beside it, in the same statement
        try:
            row = conn.execute(_NEWEST_AND_LENGTH).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" not in str(exc):
                raise
        else:
            if row is None:
                return GENESIS, 0
            if row[-1] is not None:
                return row_hash(row[:-1]), int(row[-1])
    row = conn.execute(select + " WHERE id = (SELECT MAX(id) FROM audit)").fetchone()
    if row is None:
        return GENESIS, 0
    return row_hash(row), length(conn)


_NEWEST_AND_LENGTH = (
    f"SELECT {', '.join(COLUMNS)}, (SELECT length FROM audit_tip WHERE only = 1) FROM audit "
    "WHERE id = (SELECT MAX(id) FROM audit)"
)
"""The newest audit row and ``audit_tip``'s length in one statement (a
decision would otherwise ask twice); a store without ``audit_tip`` (read-only, older) takes the two."""


def length(conn: sqlite3.Connection) -> int:
    """The number of audit rows: ``audit_tip``'s stored length, or a count where the store has
    no ``audit_tip`` yet."""
    try:
        stored = conn.execute("SELECT length FROM audit_tip WHERE only = 1").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" not in str(exc):
            raise
        stored = None
    if stored is not None:
        return int(stored[0])
    return int(conn.execute("SELECT COUNT(*) FROM audit").fetchone()[0])


def append(conn: sqlite3.Connection, run_id: str, audit: dict[str, Any], *, hashed: bool = True) -> dict[str, Any]:
    """Append one audit row, chained to the row before it, inside the caller's transaction.

    ``audit`` holds ``decision``, ``role``, ``name``, ``digest``, ``at`` and optionally
    ``detail``, ``run_uid``, ``sig``, ``binds`` and ``prev``: a signed decision names the
    ``prev`` it signed, and if another row was appended since, the save is refused. Returns the row as
    written (``id`` and ``prev`` included) with the chain's new ``length`` and, unless ``hashed``
    is False, its ``hash`` (a caller that drops the row skips hashing it: a
    decision's save would hash the long request text of its own row for nothing).

    Raises:
        AuditMoved: ``audit["prev"]`` is no longer the newest row's hash (another decision
            was recorded meanwhile); nothing is written.
    """
    prev, n = last_hash(conn)
    if audit.get("prev") is not None and audit["prev"] != prev:
        raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
    values = audit_values(run_id, audit, prev)
    cur = conn.execute(f"INSERT INTO audit ({', '.join(COLUMNS[1:])}) VALUES ({', '.join('?' * len(values))})", values)
    row = dict(zip(COLUMNS, (cur.lastrowid, *values), strict=True))
    if hashed:
        row["hash"] = row_hash(row)
    row["length"] = n + 1
    return row


def rows(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Every audit row, oldest first, as dicts of :data:`COLUMNS`."""
    ensure_columns(conn)
    return [as_row(r) for r in conn.execute(_select(conn) + " ORDER BY id")]


def find_row(conn: sqlite3.Connection, run_id: str, decision: str, sig: str) -> dict[str, Any] | None:
    """The audit row of ``run_id`` recording ``decision`` with signature ``sig``, or None."""
    ensure_columns(conn)
    row = conn.execute(
        _select(conn) + " WHERE run_id = ? AND decision = ? AND sig = ? ORDER BY id DESC LIMIT 1", (run_id, decision, sig)
    ).fetchone()
    return as_row(row) if row else None


def later_ending(conn: sqlite3.Connection, run_uid: str, after_id: int) -> dict[str, Any] | None:
    """The first row of the run ``run_uid`` after the audit row ``after_id`` that ends the
    approval recorded there (:func:`core.contract.audit.ends_approval`: a later decision, refresh
    or any ``refused...`` row), or None.

    An approval with such a row after it was lapsed, refused, rejected, refreshed or decided
    again: its run was set back to an older state if it still holds it, and it never
    executes. (A refresh voids earlier approvals the same way.)"""
    ensure_columns(conn)
    ends, params = ends_approval_sql()
    row = conn.execute(
        _select(conn) + f" WHERE run_uid = ? AND id > ? AND {ends} ORDER BY id LIMIT 1",
        (run_uid, after_id, *params),
    ).fetchone()
    return as_row(row) if row else None


def signed_approvals(conn: sqlite3.Connection, prefix: str) -> list[tuple[str, str]]:
    """``(run_id, header JSON)`` of every run whose header holds an approval signature starting
    with ``prefix`` (a LIKE over the header, then the caller reads the JSON)."""
    return conn.execute("SELECT run_id, state FROM runs WHERE state LIKE ?", (f'%"signature":"{prefix}%',)).fetchall()


def triggers(conn: sqlite3.Connection) -> set[str]:
    """The audit's append-only triggers present now (of :data:`~core.contract.audit.TRIGGERS`)."""
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'audit'")}
    return names & set(TRIGGERS)


class SqliteAudit:
    """The read side of :class:`core.contract.store.AuditLog` over one SQLite connection ``conn`` (a store
    opened read-only by ``resolver doctor``); the caller closes the connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def audit_rows(self) -> list[dict[str, Any]]:
        """Every audit row, oldest first (:func:`rows`)."""
        return rows(self.conn)

    def chain_tip(self) -> tuple[str, int]:
        """``(newest hash, rows)`` (:func:`last_hash`)."""
        return last_hash(self.conn)

    def find_audit_row(self, run_id: str, decision: str, sig: str) -> dict[str, Any] | None:
        """The row recording ``decision`` of ``run_id`` with ``sig`` (:func:`find_row`)."""
        return find_row(self.conn, run_id, decision, sig)

    def later_ending(self, run_uid: str, after_id: int) -> dict[str, Any] | None:
        """The first row that ends the approval of ``run_uid`` at row ``after_id`` (:func:`later_ending`)."""
        return later_ending(self.conn, run_uid, after_id)

    def audit_triggers(self) -> set[str]:
        """The append-only triggers present (:func:`triggers`)."""
        return triggers(self.conn)

    def signed_approvals(self, prefix: str) -> list[tuple[str, str]]:
        """Runs holding an approval signed with ``prefix`` (:func:`signed_approvals`)."""
        return signed_approvals(self.conn, prefix)
