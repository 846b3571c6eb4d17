"""The audit chain's SQL in PostgreSQL: as :mod:`core.stores.sqlite.audit`, the chain's
rules (:data:`~core.contract.audit.COLUMNS`, :func:`~core.contract.audit.row_hash`,
:data:`~core.contract.audit.GENESIS`, :class:`~core.contract.audit.AuditMoved`) are the core's.

**One appender at a time.** :func:`append` first locks the audit's one-row head
(``SELECT ... FROM audit_head FOR UPDATE``), then reads the newest row and writes the next one,
in the caller's transaction. Under ``READ COMMITTED`` each statement after the lock sees every
row committed before it was granted, so the second of two deciders chains to the first's row, or,
when it signed a ``prev`` that moved, is refused with AuditMoved: the chain never forks. The lock
is held until the caller's commit, so rows are numbered (``id`` 1, 2, ...) in commit order.

**The head last.** A decision's save locks its run's row first (the header's compare-and-set)
and the audit's head last, in ``resolver_append`` (:data:`APPEND_FUNCTION`, schema migration 19),
sent in the same round trip as the header and the ``COMMIT``: the head is held from the append to
the commit and no longer, and two savers never hold one lock each while waiting for the other's.
"""

from __future__ import annotations

from typing import Any

import psycopg

from core.contract.audit import COLUMNS, GENESIS, TRIGGERS, AuditMoved, as_row, ends_approval_sql, row_hash
from core.stores.common import audit_values

_SELECT = f"SELECT {', '.join(COLUMNS)} FROM audit"


_NEWEST = f"SELECT {', '.join(COLUMNS)}, (SELECT COUNT(*) FROM audit) FROM audit ORDER BY id DESC LIMIT 1"
"""The newest row and the number of rows, in one statement (one snapshot, so they agree)."""


CHAIN_TIP = """
    PERFORM one FROM audit_head FOR UPDATE;
    SELECT * INTO tip FROM audit ORDER BY id DESC LIMIT 1;
    IF tip.id IS NULL THEN
        prev := repeat('0', 64);
        next_id := 1;
    ELSE
        prev := resolver_row_hash(tip);
        next_id := tip.id + 1;
    END IF;
    IF p_audit->>'prev' IS NOT NULL AND p_audit->>'prev' <> prev THEN
        RAISE EXCEPTION 'Another decision was recorded while this one was signed; decide again.' USING ERRCODE = 'RS409';
    END IF;"""
"""The chain's tip in PL/pgSQL, for a function that appends one audit row (its variables ``tip``,
``prev``, ``next_id``, its argument ``p_audit``): the head's lock, the newest row, the next row's
``prev`` (its hash, :func:`core.contract.audit.row_hash` in SQL) and ``id``, and SQLSTATE ``RS409``
when the row was signed over a ``prev`` that moved. Shared by ``resolver_append`` and the
functions of a store with role separation (:mod:`core.stores.postgres.roles`)."""

APPEND_FUNCTION = f"""CREATE OR REPLACE FUNCTION resolver_append(p_run_id text, p_audit jsonb) RETURNS bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    tip audit;
    prev text;
    next_id bigint;
BEGIN{CHAIN_TIP}
    INSERT INTO audit ({", ".join(COLUMNS)}) VALUES (
        next_id, p_run_id, p_audit->>'decision', p_audit->>'role', p_audit->>'name', p_audit->>'digest', p_audit->>'at',
        p_audit->>'detail', p_audit->>'run_uid', prev, p_audit->>'sig', p_audit->>'binds');
    RETURN next_id;
END
$$"""
"""One audit row appended in the caller's transaction, chained to the real newest row under the
head's lock (see the module's docstring), with the caller's rights (a store with role separation
gives its approvers no ``INSERT`` on the audit: they append through ``resolver_decide`` and
``resolver_note``). ``p_audit`` as :func:`payload` gives it. Returns the new row's ``id``.
Raises SQLSTATE ``RS409`` (AuditMoved) when the audit's ``prev`` is set and is no longer the
newest row's hash. The search path is the one the migration ran under, so a caller's own
``search_path`` cannot put another ``audit`` table in its place."""


def payload(audit: dict[str, Any]) -> dict[str, Any]:
    """``audit`` (as :meth:`core.contract.store.AuditLog.append_audit` takes it) as ``resolver_append``
    reads it: every column's value as :func:`core.stores.common.audit_values` gives it (an absent
    ``detail`` is ``""``, an empty ``sig`` is ``""``), so the row is the one the Python append
    writes."""
    return {
        "decision": audit["decision"],
        "role": audit["role"],
        "name": audit["name"],
        "digest": audit["digest"],
        "at": audit["at"],
        "detail": audit.get("detail", ""),
        "run_uid": audit.get("run_uid"),
        "sig": audit.get("sig") or "",
        "binds": audit.get("binds"),
        "prev": audit.get("prev"),
    }


def last_hash(conn: psycopg.Connection[Any]) -> tuple[str, int]:
    """``(hash of the newest row, number of rows)``; ``(GENESIS, 0)`` for an empty audit."""
    return _tip(conn.execute(_NEWEST).fetchone())


def _tip(row: Any) -> tuple[str, int]:
    if row is None:
        return GENESIS, 0
    return row_hash(tuple(row[:-1])), int(row[-1])


def lock(conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
    """Take the lock on the audit's head and ask for the newest row, in the caller's transaction;
    returns the cursor to hand to :func:`append`. In pipeline mode
    (:meth:`core.stores.postgres.pool.Database.pipelined`) both statements are only queued,
    so a save sends them with its own and waits once. The newest row is read by a statement
    after the lock's, so under ``READ COMMITTED`` it sees every row committed before the lock
    was granted."""
    conn.execute("SELECT one FROM audit_head FOR UPDATE")
    return conn.execute(_NEWEST)


def append(
    conn: psycopg.Connection[Any], run_id: str, audit: dict[str, Any], locked: psycopg.Cursor[Any] | None = None
) -> dict[str, Any]:
    """Append one audit row, chained to the row before it, inside the caller's transaction, under
    the lock on the audit's head (see the module's docstring; ``locked``: the cursor of
    :func:`lock` when the caller already took it, else it is taken here). ``audit`` as
    :func:`core.stores.sqlite.audit.append`'s. Returns the row as written with its ``hash`` and
    the chain's new ``length``.

    Raises:
        AuditMoved: ``audit["prev"]`` is no longer the newest row's hash; nothing is written.
    """
    newest_row = (locked if locked is not None else lock(conn)).fetchone()
    prev, n = _tip(newest_row)
    if audit.get("prev") is not None and audit["prev"] != prev:
        raise AuditMoved("Another decision was recorded while this one was signed; decide again.")
    newest = int(newest_row[0]) if newest_row is not None else 0  # COLUMNS starts with id
    values = (newest + 1, *audit_values(run_id, audit, prev))
    conn.execute(f"INSERT INTO audit ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(values))})", values)
    row = dict(zip(COLUMNS, values, strict=True))
    row["hash"] = row_hash(row)
    row["length"] = n + 1
    return row


def rows(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
    """Every audit row, oldest first, as dicts of :data:`COLUMNS`."""
    return [as_row(r) for r in conn.execute(_SELECT + " ORDER BY id")]


def find_row(conn: psycopg.Connection[Any], run_id: str, decision: str, sig: str) -> dict[str, Any] | None:
    """The newest audit row of ``run_id`` recording ``decision`` with signature ``sig``, or None."""
    row = conn.execute(
        _SELECT + " WHERE run_id = %s AND decision = %s AND sig = %s ORDER BY id DESC LIMIT 1", (run_id, decision, sig)
    ).fetchone()
    return as_row(row) if row else None


def later_ending(conn: psycopg.Connection[Any], run_uid: str, after_id: int) -> dict[str, Any] | None:
    """The first row of the run ``run_uid`` after row ``after_id`` that ends the approval recorded
    there (:func:`core.contract.audit.ends_approval`), or None."""
    ends, params = ends_approval_sql("%s")
    row = conn.execute(
        _SELECT + f" WHERE run_uid = %s AND id > %s AND {ends} ORDER BY id LIMIT 1",
        (run_uid, after_id, *params),
    ).fetchone()
    return as_row(row) if row else None


def signed_approvals(conn: psycopg.Connection[Any], prefix: str) -> list[tuple[str, str]]:
    """``(run_id, header JSON)`` of every run whose header holds an approval signature starting
    with ``prefix``."""
    pattern = '%"signature":"' + prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return [(r[0], r[1]) for r in conn.execute("SELECT run_id, state FROM runs WHERE state LIKE %s", (pattern,))]


def triggers(conn: psycopg.Connection[Any]) -> set[str]:
    """The audit's append-only triggers present now (of :data:`~core.contract.audit.TRIGGERS`)."""
    names = {r[0] for r in conn.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit'::regclass AND NOT tgisinternal")}
    return names & set(TRIGGERS)
