"""The checkpoint store in PostgreSQL: :class:`PostgresStore`, implementing :class:`core.store.Store`
(issue 23), for a team whose approvers work one queue from several machines.

The layout is the SQLite store's (:mod:`core.stores.common`: a header row per run beside the
queue's columns, one ``entries`` row per list element, the hash-chained ``audit``, the journal of
model calls), made by the migrations of :mod:`core.stores.postgres.schema`. The rules:

- **Compare-and-set.** A save is ``UPDATE runs ... WHERE run_id = %s AND version = %s`` (and
  ``AND lease_owner = %s`` for the executor); no row updated means someone saved first
  (StaleCheckpoint) or the lease moved (LeaseHeld). A new run is an ``INSERT`` whose primary key
  refuses a second maker (RunExists). A decision is single-use the same way: it is a save of the
  waiting run at the version the decider read, so of two deciders one writes and one is told.
- **The audit** is appended in the save's transaction under a row lock on its one-row head
  (:mod:`core.stores.postgres.audit`), so two deciders never fork the chain.
- **Leases use the database's clock** (``now()``), not the machine's: executors on machines whose
  clocks disagree still agree on when a lease ends. The lease's time is stored as ISO 8601 like
  every other time; the run's row is locked (``FOR UPDATE``) while a lease is taken or cleared.
  Everything else (``updated_at``, evidence and approval expiry) keeps the home's clock, the
  trainer's in a practice store.
- **The queue's counts** are a ``GROUP BY`` over the status index (a corrupt run counts under
  ``corrupt``); the search is a substring of the casefolded, NFC search fields kept in the
  ``search`` column at every save (Python's ``str.casefold`` on both sides, as the SQLite
  back-end folds).
- A load reads header and rows in one ``REPEATABLE READ`` snapshot.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import psycopg
import psycopg.errors

from core.clock import Clock, SystemClock, iso
from core.errors import ResolverError, RunNotFound
from core.safetext import nfc
from core.store import (
    PAGE_SIZE,
    Lease,
    RunExists,
    RunSummary,
    Summarize,
    crash_point,
    lease_held_by_other,
)
from core.stores.common import (
    _HEADER_COLS,
    _SUMMARY,
    AuditReads,
    CheckpointRows,
    ModelCallJournal,
    _Parts,
    event_dicts,
    read_parts,
    refuse_save,
    sort_order,
)
from core.stores.postgres import audit as auditchain
from core.stores.postgres.database import Database, QmarkConnection, database
from core.stores.postgres.marks import PostgresMarks

if TYPE_CHECKING:
    from core.state import TaskState

_SEARCHED = ("task_id", "order_id", "customer", "run_id")
_INSERT_RUN = (
    f"INSERT INTO runs (run_id, {', '.join(_HEADER_COLS)}, state_ok, search) "
    f"VALUES (%s, {', '.join('%s' for _ in _HEADER_COLS)}, true, %s)"
)
_UPDATE_RUN = f"UPDATE runs SET {', '.join(f'{c} = %s' for c in _HEADER_COLS)}, state_ok = true, search = %s"
_INSERT_ENTRY = "INSERT INTO entries (run_id, n, list, seq, body, extra, ref) VALUES (%s, %s, %s, %s, %s, %s, %s)"


def search_text(values: dict[str, Any], run_id: str) -> str:
    """The ``search`` column: the search fields, NFC and casefolded, one per line."""
    fields = {**values, "run_id": run_id}
    return "\n".join((nfc(str(fields.get(c) or "")) or "").casefold() for c in _SEARCHED)


def _db_now(conn: psycopg.Connection[Any]) -> datetime:
    """The database's clock (the transaction's start), timezone-aware."""
    return conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]


class PostgresStore(CheckpointRows, AuditReads, ModelCallJournal, PostgresMarks):
    """The checkpoint store in the PostgreSQL database (and schema) of ``url`` (see the module's
    docstring); the schema is made or upgraded when it is first opened in a process.

    Args:
        url: a libpq URL (:mod:`core.stores.postgres.database`).
        clock: stamps ``updated_at`` at every save (default: real time); leases use the database's.
        summarize: gives the queue's columns of a state, called inside every save.

    Raises:
        ResolverError: the database cannot be reached or its schema made (one sentence).
        UnsupportedStoreFormat: the schema was written by a newer resolver.
    """

    def __init__(self, url: str, clock: Clock | None = None, *, summarize: Summarize) -> None:
        self.db: Database = database(url)
        self._audit_sql = auditchain
        self.url = url
        self.path: Path = self.db.path
        self.clock = clock or SystemClock()
        self.summarize = summarize
        self.repairs: list[str] = []
        self.repaired_triggers: list[str] = []
        self._init_rows()
        self._repair_triggers()

    def _repair_triggers(self) -> None:
        """Create again an append-only guard of the audit that someone dropped, and say so in
        :attr:`repairs` and :attr:`repaired_triggers` (``resolver audit verify`` reports it)."""
        from core.auditchain import TRIGGERS
        from core.stores.postgres.schema import audit_trigger

        with self.db.read() as conn:
            missing = sorted(set(TRIGGERS) - auditchain.triggers(conn))
        if not missing:
            return
        with self.db.transaction() as conn:
            for name in missing:
                conn.execute(f"DROP TRIGGER IF EXISTS {name} ON audit")
                conn.execute(audit_trigger(name))
        self.repairs.append(
            f"The checkpoint store in {self.db.label} had lost its trigger(s) {', '.join(missing)}; they were created again."
        )
        self.repaired_triggers.extend(missing)

    # -- save -----------------------------------------------------------------------------------

    def save(
        self,
        state: TaskState,
        *,
        audit: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_ttl_s: float | None = None,
    ) -> TaskState:
        """Write ``state`` as its run's checkpoint (see :meth:`core.store.Store.save`): a
        compare-and-set on ``state.version``, only the rows appended since this object was last
        saved or read, ``audit`` appended in the same transaction.

        Raises:
            RunExists, StaleCheckpoint, LeaseHeld, core.auditchain.AuditMoved, StoreBusy.
        """
        prep = self._prepare(state)
        run_id = state.run_id
        values = prep.values
        search = search_text(values, run_id)
        with self.db.transaction() as conn:
            if prep.old == 0:
                try:
                    with conn.transaction():
                        conn.execute(_INSERT_RUN, (run_id, *values.values(), search))
                except psycopg.errors.UniqueViolation:
                    raise RunExists(
                        f"Run {run_id} already exists (another process saved it first); a new run needs a new ID."
                    ) from None
                if lease_owner is not None and lease_ttl_s is not None:  # a new run taken by its maker
                    until = iso(_db_now(conn) + timedelta(seconds=lease_ttl_s))
                    conn.execute(
                        "UPDATE runs SET lease_owner = %s, lease_expires = %s WHERE run_id = %s", (lease_owner, until, run_id)
                    )
            else:
                sql = _UPDATE_RUN
                params: list[Any] = [*values.values(), search]
                if lease_owner is not None:
                    until_s = iso(_db_now(conn) + timedelta(seconds=lease_ttl_s)) if lease_ttl_s is not None else None
                    sql += ", lease_owner = %s, lease_expires = %s WHERE run_id = %s AND version = %s AND lease_owner = %s"
                    params += [lease_owner if until_s else None, until_s, run_id, prep.old, lease_owner]
                else:
                    sql += " WHERE run_id = %s AND version = %s"
                    params += [run_id, prep.old]
                if conn.execute(sql, params).rowcount != 1:
                    self._refuse(conn, run_id, prep.old, lease_owner)
            crash_point("row")
            if not prep.appended:
                conn.execute("DELETE FROM entries WHERE run_id = %s", (run_id,))
                crash_point("row")
            try:
                with conn.transaction():
                    for r in prep.rows:
                        conn.execute(_INSERT_ENTRY, r)
                        crash_point("row")
            except psycopg.errors.UniqueViolation:  # the rows stored are not the ones this object saw: all again
                conn.execute("DELETE FROM entries WHERE run_id = %s", (run_id,))
                for r in self._rows(state, (0, 0, 0)):
                    conn.execute(_INSERT_ENTRY, r)
            if audit is not None:
                auditchain.append(conn, run_id, audit)
                crash_point("row")
        state.version = prep.new
        self._remember(state, prep.new, prep.written)
        crash_point("save")
        return state

    @staticmethod
    def _refuse(conn: psycopg.Connection[Any], run_id: str, version: int, lease_owner: str | None) -> NoReturn:
        row = conn.execute("SELECT version, lease_owner FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        raise refuse_save(run_id, version, row[0] if row else 0, row[1] if row else None, lease_owner)

    def append_audit(self, audit: dict[str, Any]) -> None:
        """Append one audit row outside any save (a refusal, a registry change), chained."""
        with self.db.transaction() as conn:
            auditchain.append(conn, audit["run_id"], audit)

    # -- load -----------------------------------------------------------------------------------

    @staticmethod
    def _read(conn: psycopg.Connection[Any], run_id: str) -> _Parts | None:
        return read_parts(QmarkConnection(conn), run_id)

    def load(self, run_id: str) -> TaskState:
        """The run's checkpoint, read in one snapshot. Raises RunNotFound, CorruptCheckpoint,
        UnsupportedSchemaVersion."""
        with self.db.snapshot() as conn:
            parts = self._read(conn, run_id)
        if parts is None:
            raise RunNotFound(run_id)
        return self._build(run_id, parts)

    def _mark_corrupt(self, run_id: str) -> None:
        try:
            with self.db.read() as conn:
                conn.execute("UPDATE runs SET state_ok = false WHERE run_id = %s AND state_ok", (run_id,))
        except ResolverError:
            pass

    def latest(self, task_id: str) -> TaskState | None:
        """The most recently created run of ``task_id``, loaded; None if the ticket has none."""
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT run_id FROM runs WHERE task_id = %s ORDER BY created_ts DESC, n DESC LIMIT 1", (task_id,)
            ).fetchone()
        return self.load(row[0]) if row else None

    def runs_of_task(self, task_id: str) -> list[RunSummary]:
        """Every run of one ticket, oldest first."""
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {_SUMMARY} FROM runs WHERE task_id = %s ORDER BY created_ts, run_id", (task_id,)
            ).fetchall()
        return [self._summary(r) for r in rows]

    def run_ids(self, prefix: str) -> list[str]:
        """Run IDs starting with ``prefix``."""
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE starts_with(run_id, %s)", (prefix,))]

    def exists(self, run_id: str) -> bool:
        """True when a row for ``run_id`` exists (corrupt or not)."""
        with self.db.read() as conn:
            return conn.execute("SELECT 1 FROM runs WHERE run_id = %s", (run_id,)).fetchone() is not None

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's trace, in order. Raises RunNotFound."""
        with self.db.snapshot() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = %s", (run_id,)).fetchone() is None:
                raise RunNotFound(run_id)
            rows = conn.execute(
                "SELECT extra, body, seq FROM entries WHERE run_id = %s AND list = 'events' ORDER BY n", (run_id,)
            ).fetchall()
        return event_dicts(run_id, rows)

    def delete(self, run_id: str, audit: dict[str, Any] | None = None) -> None:
        """Delete one run, its rows and its journal, with ``audit`` appended in the same
        transaction. Raises RunNotFound."""
        with self.db.transaction() as conn:
            if conn.execute("DELETE FROM runs WHERE run_id = %s", (run_id,)).rowcount == 0:
                raise RunNotFound(run_id)
            conn.execute("DELETE FROM entries WHERE run_id = %s", (run_id,))
            conn.execute("DELETE FROM model_calls WHERE run_id = %s", (run_id,))
            if audit is not None:
                auditchain.append(conn, run_id, audit)

    def reset(self, audit: Callable[[list[str]], dict[str, Any]] | None = None) -> int:
        """Delete every run (the audit is kept); ``audit`` makes the row appended under ``*``."""
        with self.db.transaction() as conn:
            ids = [r[0] for r in conn.execute("DELETE FROM runs RETURNING run_id")]
            conn.execute("DELETE FROM entries")
            conn.execute("DELETE FROM model_calls")
            if audit is not None:
                auditchain.append(conn, "*", audit(sorted(ids)))
        return len(ids)

    # -- the queue ------------------------------------------------------------------------------

    def page(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: RunSummary | tuple[Any, str] | None = None,
        limit: int = PAGE_SIZE,
        max_role_rank: int | None = None,
    ) -> list[RunSummary]:
        """One page of the queue, keyset-paginated (see :meth:`core.store.Store.page`).
        Raises ResolverError for an unknown sort."""
        search = nfc(search)
        sort, column, ascending = sort_order(status, sort)
        where: list[str] = []
        params: list[Any] = []
        if status:
            where.append("status = %s")
            params.append(status)
        if search:
            term = search.strip() if len(search.strip()) >= 3 else search
            folded = term.casefold()
            where.append("search LIKE %s")
            params.append("%" + folded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%")
        if max_role_rank is not None:
            where.append("role_rank BETWEEN 0 AND %s AND state_ok")
            params.append(max_role_rank)
        if after is not None:
            key, last_id = after.cursor(sort) if isinstance(after, RunSummary) else after
            where.append(f"({column}, run_id) {'>' if ascending else '<'} (%s, %s)")
            params.extend([key, last_id])
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        direction = "ASC" if ascending else "DESC"
        sql = f"SELECT {_SUMMARY} FROM runs {clause} ORDER BY {column} {direction}, run_id {direction} LIMIT %s"
        with self.db.read() as conn:
            rows = conn.execute(sql, (*params, limit)).fetchall()
        return [self._summary(r) for r in rows]

    def counts(self) -> dict[str, int]:
        """Runs per status; runs flagged corrupt count under ``"corrupt"`` instead."""
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT CASE WHEN state_ok THEN status ELSE 'corrupt' END, COUNT(*) FROM runs GROUP BY 1"
            ).fetchall()
        return {status: int(n) for status, n in rows}

    def summary(self, run_id: str) -> RunSummary:
        """The queue row of one run. Raises RunNotFound."""
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_SUMMARY} FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        return self._summary(row)

    # -- leases (the database's clock) ----------------------------------------------------------

    def _take_lease(self, conn: psycopg.Connection[Any], run_id: str, owner: str, ttl_s: float) -> datetime:
        row = conn.execute(
            "SELECT lease_owner, lease_expires, now() FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)
        ).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        held = lease_held_by_other(run_id, row[0], row[1], owner, row[2])
        if held is not None:
            raise held
        expires: datetime = row[2] + timedelta(seconds=ttl_s)
        conn.execute("UPDATE runs SET lease_owner = %s, lease_expires = %s WHERE run_id = %s", (owner, iso(expires), run_id))
        return expires

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float = 60.0) -> Lease:
        """Take the run's lease for ``ttl_s`` seconds of the database's clock. Raises LeaseHeld, RunNotFound."""
        with self.db.transaction() as conn:
            expires = self._take_lease(conn, run_id, owner, ttl_s)
        return Lease(owner, expires)

    def claim(self, run_id: str, owner: str, ttl_s: float = 60.0) -> TaskState:
        """Take the lease and load the run in one transaction. Raises LeaseHeld, RunNotFound,
        CorruptCheckpoint (the lease given back)."""
        with self.db.transaction() as conn:
            self._take_lease(conn, run_id, owner, ttl_s)
            parts = self._read(conn, run_id)
        assert parts is not None
        try:
            return self._build(run_id, parts)
        except ResolverError:
            self.release_lease(run_id, owner)
            raise

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Extend ``owner``'s lease to the database's now + ``ttl_s``; False when it no longer holds it."""
        with self.db.transaction() as conn:
            until = iso(_db_now(conn) + timedelta(seconds=ttl_s))
            return (
                conn.execute(
                    "UPDATE runs SET lease_expires = %s WHERE run_id = %s AND lease_owner = %s", (until, run_id, owner)
                ).rowcount
                == 1
            )

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease back if ``owner`` still holds it."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = %s AND lease_owner = %s", (run_id, owner)
            )

    def expire_lease(self, run_id: str) -> None:
        """Mark the run's lease as expired (a second before the database's now)."""
        with self.db.transaction() as conn:
            until = iso(_db_now(conn) - timedelta(seconds=1))
            conn.execute("UPDATE runs SET lease_expires = %s WHERE run_id = %s", (until, run_id))

    def clear_dead_lease(self, run_id: str) -> bool:
        """Remove a lease whose holder is gone (expired by the database's clock, or a dead process
        of this host); True if one was removed."""
        with self.db.transaction() as conn:
            row = conn.execute(
                "SELECT lease_owner, lease_expires, now() FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)
            ).fetchone()
            if row is None or (row[0] is None and row[1] is None):
                return False
            if lease_held_by_other(run_id, row[0], row[1], "", row[2]) is not None:
                return False
            conn.execute("UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = %s", (run_id,))
            return True

    # -- the journal of model calls (issue 26): core.stores.common.ModelCallJournal ----------------

    @contextmanager
    def _journal_write(self) -> Iterator[QmarkConnection]:
        with self.db.transaction() as conn:
            yield QmarkConnection(conn)

    @contextmanager
    def _journal_read(self) -> Iterator[QmarkConnection]:
        with self.db.read() as conn:
            yield QmarkConnection(conn)

    def _journal_lock(self, conn: QmarkConnection, run_id: str) -> None:
        """Attempts of one run are numbered one writer at a time (a transaction-level advisory lock)."""
        conn.execute("SELECT pg_advisory_xact_lock(hashtext('resolver-model-calls:' || current_schema() || ?))", (run_id,))

    # -- the audit ------------------------------------------------------------------------------

    def audit(self, run_id: str | None = None, *, name: str | None = None) -> list[dict[str, Any]]:
        """Rows of the audit (oldest first), of one run or all, and with ``name`` one approver's."""
        keys = ("run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid")
        sql = f"SELECT {', '.join(keys)} FROM audit"
        where, params = [], []
        if run_id:
            where.append("run_id = %s")
            params.append(run_id)
        if name is not None:
            where.append("name = %s")
            params.append(name)
        if where:
            sql += " WHERE " + " AND ".join(where)
        with self.db.read() as conn:
            return [dict(zip(keys, r, strict=True)) for r in conn.execute(sql + " ORDER BY id", params)]

    # -- housekeeping ---------------------------------------------------------------------------

    def has_history(self) -> bool:
        """True when the store holds any run or audit row."""
        with self.db.read() as conn:
            return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM runs) OR EXISTS (SELECT 1 FROM audit)").fetchone()[0])  # type: ignore[index]

    def approvals_in_flight(self) -> int:
        """Runs ``executing`` whose approval this home signed (an ``approve`` audit row)."""
        with self.db.read() as conn:
            return int(
                conn.execute(
                    "SELECT COUNT(*) FROM runs WHERE status = 'executing' AND EXISTS "
                    "(SELECT 1 FROM audit WHERE audit.run_id = runs.run_id AND audit.decision = 'approve')"
                ).fetchone()[0]  # type: ignore[index]
            )

    def backup(self, target: Path) -> None:
        """Write every table of the store, read in one snapshot, to the new file ``target`` (mode
        0600) as JSON lines: ``{"table": name, "row": {...}}``. Raises ResolverError with one
        sentence. (An operator's backup of the database itself is ``pg_dump``'s.)"""
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as exc:
            raise ResolverError(f"Cannot write the backup {target}: {exc.strerror or exc}. Nothing was written.") from None
        with os.fdopen(fd, "w", encoding="utf-8") as out, self.db.snapshot() as conn:
            for table, order in (
                ("runs", "run_id"),
                ("entries", "run_id, n"),
                ("audit", "id"),
                ("model_calls", "run_id, step, attempt"),
            ):
                cur = conn.execute(f"SELECT * FROM {table} ORDER BY {order}")
                names = [c.name for c in cur.description or ()]
                for r in cur:
                    out.write(json.dumps({"table": table, "row": dict(zip(names, r, strict=True))}, ensure_ascii=False) + "\n")

    def scrubbed(self, work: Callable[[], object]) -> None:
        """Run ``work`` (deletes through this store), then ``VACUUM`` the tables it deletes from,
        so the deleted rows' space is marked free for reuse (PostgreSQL keeps no journal of them
        the store could truncate; its write-ahead log is the server's)."""
        work()
        with self.db.read() as conn:
            for table in ("runs", "entries", "model_calls"):
                conn.execute(f"VACUUM {table}")

    def end_thread(self) -> None:
        """Nothing to give back: a pooled connection returns to the pool after each use."""

    def overwrite_checkpoint(self, run_id: str, change: Callable[[str], str]) -> None:
        """Replace the stored header text of ``run_id`` by ``change(text)`` (the lesson's damaged
        checkpoints); a text that is not JSON flags the row corrupt. Raises RunNotFound."""
        with self.db.transaction() as conn:
            row = conn.execute("SELECT state FROM runs WHERE run_id = %s FOR UPDATE", (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            text = change(row[0])
            try:
                json.loads(text)
                valid = True
            except (ValueError, RecursionError):
                valid = False
            conn.execute("UPDATE runs SET state = %s, state_ok = state_ok AND %s WHERE run_id = %s", (text, valid, run_id))
