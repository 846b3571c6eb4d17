"""The checkpoint store in PostgreSQL: :class:`PostgresStore`, implementing :class:`core.contract.store.Store`,
for a team whose approvers work one queue from several machines.

The layout is the SQLite store's (:mod:`core.stores.common`: a header row per run beside the
queue's columns, one ``entries`` row per list element, the hash-chained ``audit``, the journal of
model calls), made by the migrations of :mod:`core.stores.postgres.schema`. The rules:

- **Compare-and-set.** A save is ``UPDATE runs ... WHERE run_id = %s AND version = %s`` (and
  ``AND lease_owner = %s`` for the executor); no row updated means someone saved first
  (StaleCheckpoint) or the lease moved (LeaseHeld). A new run is an ``INSERT ... ON CONFLICT DO
  NOTHING`` whose primary key refuses a second maker (RunExists). A decision is single-use the
  same way: it is a save of the waiting run at the version the decider read, so of two deciders
  one writes and one is told.
- **A save is as few round trips as it can be**. A step's
  save is one statement in autocommit, so its own transaction: the header's write and, only if
  it was written, the insert of every new ``entries`` row from six arrays (``unnest``), in one
  CTE; the lease's end is computed in it from the database's ``now()`` (:data:`LEASE_UNTIL`).
  One round trip, all or nothing. A decision adds its audit row in the same transaction, still
  one round trip: ``BEGIN``, the header's statement, ``resolver_append`` (the audit row, written
  only when the header was) and ``COMMIT`` go in one pipeline
  (:meth:`~core.stores.postgres.pool.Database.pipelined`). When the rows stored are not the
  ones this object saw (a new row's key is taken), the statement fails with a unique violation
  and the save is done again in one transaction that deletes the run's rows and writes them all.
- **One lock order.** Every write of a decision locks the run's row first (its compare-and-set)
  and the audit's one-row head last, in the append, the statement before the commit, so two
  deciders never each hold a lock the other waits for, and the head is held for the append
  alone; the counts' triggers only insert (schema migration 19), so they lock nothing another
  writer waits on. The chain never forks (:mod:`core.stores.postgres.audit`).
- **Leases use the database's clock** (``now()``), not the machine's: executors on machines whose
  clocks disagree still agree on when a lease ends. The lease's time is stored as ISO 8601 like
  every other time; the run's row is locked (``FOR UPDATE``) while a lease is taken or cleared.
  Everything else (``updated_at``, evidence and approval expiry) keeps the home's clock, the
  trainer's in a practice store.
- **The queue's counts** are the sums of ``run_counts`` (schema migration 7) and of the deltas
  that triggers on ``runs`` append in every writer's transaction (migration 19; a corrupt run
  counts under ``corrupt``); the search
  is a substring of the casefolded, NFC search fields kept in the ``search`` column at every save
  (Python's ``str.casefold`` on both sides, as the SQLite back-end folds).
- A load is one statement (:data:`_LOAD`: header and rows), so one round trip and one snapshot.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

import psycopg
import psycopg.errors

from core.contract.audit import REGISTRY_PREFIX
from core.contract.store import (
    PAGE_SIZE,
    Lease,
    RunExists,
    RunSummary,
    Summarize,
    crash_point,
    lease_held_by_other,
)
from core.ground.clock import SHOP_TZ, Clock, SystemClock, iso
from core.ground.errors import ApprovalRefused, ResolverError, RunNotFound, StoreBusy
from core.ground.safetext import nfc
from core.ground.state import OPENING_MESSAGES
from core.stores.common import (
    _HEADER_COLS,
    _SUMMARY,
    ENTRY_COLUMNS,
    AuditReads,
    CheckpointRows,
    ModelCallJournal,
    _Parts,
    _Prepared,
    assemble_parts,
    event_dicts,
    refuse_save,
    sort_order,
)
from core.stores.postgres import audit as auditchain
from core.stores.postgres.database import database
from core.stores.postgres.marks import PostgresMarks
from core.stores.postgres.pool import Database, QmarkConnection
from core.stores.postgres.schema import FOLD_AT

if TYPE_CHECKING:
    from core.ground.state import RunView, TaskState

_SEARCHED = ("task_id", "order_id", "customer", "run_id")

LEASE_UNTIL = (
    "(SELECT to_char(t AT TIME ZONE z, 'YYYY-MM-DD\"T\"HH24:MI:SS') || "
    "CASE WHEN o < interval '0' THEN to_char(o, 'HH24:MI') ELSE '+' || to_char(o, 'HH24:MI') END "
    "FROM (SELECT t, z, (t AT TIME ZONE z) - (t AT TIME ZONE 'UTC') AS o "
    f"FROM (SELECT date_trunc('second', now() + make_interval(secs => %s)) AS t, '{SHOP_TZ.key}'::text AS z) a) b)"
)
"""The database's ``now()`` plus ``%s`` seconds as :func:`core.ground.clock.iso` writes a time (ISO 8601
to the second, in the shop's zone, with its offset): a lease's end computed in the statement that
stores it, so no ``SELECT now()`` round trip comes first."""

_ENTRY_ARRAYS = "unnest(%b::int[], %b::text[], %b::int[], %b::text[], %b::text[], %b::int[], %b::bigint[])"
"""The new ``entries`` rows of a save as seven arrays (n, list, seq, body, extra, ref, checksum): one
statement inserts them all, whatever their number. Sent in binary (``%b``): a body goes as its
bytes, never escaped into an array literal."""


_ENTRY_COLS = ", ".join(ENTRY_COLUMNS)


def _write_sql(header: str) -> str:
    """The one statement of a save: the header's write (``header``: an ``INSERT ... ON CONFLICT
    DO NOTHING`` of a new run or the compare-and-set ``UPDATE``) and the insert of the new
    entries, which happens only when the header was written. Returns the number of headers
    written (0: refused, nothing written), and keeps it for the rest of the transaction in the
    setting ``resolver.wrote`` (:data:`_IF_WROTE`), so the statements queued after it in one
    round trip write only when it did. An entry whose key is taken fails the whole statement
    with a unique violation (the rows stored are not the ones the saving object saw)."""
    return (
        f"WITH head AS ({header} RETURNING 1), "
        f"ins AS (INSERT INTO entries ({_ENTRY_COLS}) SELECT %s, * FROM {_ENTRY_ARRAYS} "
        "WHERE EXISTS (SELECT FROM head)) "
        "SELECT set_config('resolver.wrote', count(*)::text, true)::int FROM head"
    )


_IF_WROTE = "current_setting('resolver.wrote', true) = '1'"
"""True in a save's transaction once its header was written (:func:`_write_sql`)."""


_COLS = ", ".join(_HEADER_COLS)
_VALUES = ", ".join("%s" for _ in _HEADER_COLS)
_SET = ", ".join(f"{c} = %s" for c in _HEADER_COLS)
_SAVE_NEW = _write_sql(
    f"INSERT INTO runs (run_id, {_COLS}, state_ok, search) VALUES (%s, {_VALUES}, true, %s) ON CONFLICT (run_id) DO NOTHING"
)
_SAVE_NEW_LEASED = _write_sql(
    f"INSERT INTO runs (run_id, {_COLS}, state_ok, search, lease_owner, lease_expires) "
    f"VALUES (%s, {_VALUES}, true, %s, %s, {LEASE_UNTIL}) ON CONFLICT (run_id) DO NOTHING"
)
_UPDATE = f"UPDATE runs SET {_SET}, state_ok = true, search = %s WHERE run_id = %s AND version = %s"
_UPDATE_LEASED = (
    f"UPDATE runs SET {_SET}, state_ok = true, search = %s, lease_expires = {LEASE_UNTIL} "
    "WHERE run_id = %s AND version = %s AND lease_owner = %s"
)
_UPDATE_RELEASED = (
    f"UPDATE runs SET {_SET}, state_ok = true, search = %s, lease_owner = NULL, lease_expires = NULL "
    "WHERE run_id = %s AND version = %s AND lease_owner = %s"
)
_SAVE, _SAVE_LEASED, _SAVE_RELEASED = (_write_sql(h) for h in (_UPDATE, _UPDATE_LEASED, _UPDATE_RELEASED))
_DELETE_ENTRIES = f"DELETE FROM entries WHERE run_id = %s AND {_IF_WROTE}"
_INSERT_ENTRIES = f"INSERT INTO entries ({_ENTRY_COLS}) SELECT %s, * FROM {_ENTRY_ARRAYS} WHERE {_IF_WROTE}"
_APPEND = f"SELECT resolver_append(%s, %s::jsonb) WHERE {_IF_WROTE}"
_NOTE = f"SELECT resolver_note(%s, %s::jsonb) WHERE {_IF_WROTE}"
"""A save's audit row, appended only when its header was written: by ``resolver_append``
(migration 19), or on a store with role separation ``resolver_note`` (a function of role separation)."""

_LOAD = (
    "SELECT 0 AS k, NULL::text, convert_to(state, 'UTF8'), NULL::bytea, NULL::int, NULL::text, NULL::bigint, version "
    "FROM runs WHERE run_id = %s "
    "UNION ALL SELECT i.n, i.list, convert_to(i.body, 'UTF8'), convert_to(i.extra, 'UTF8'), i.ref, CASE WHEN i.ref IS NOT NULL THEN "
    "(SELECT e.extra FROM entries e WHERE e.run_id = i.run_id AND e.n = i.ref) END, i.checksum, NULL::bigint "
    "FROM entries i WHERE i.run_id = %s ORDER BY k"
)
"""A run's header (``k`` 0, with its version) and its entries (``k`` = n, 1 on, with the text
a tool message refers to looked up only for the rows that refer) in one statement, so one round
trip and one snapshot (a statement sees one state even in autocommit). Read in binary: text
columns come as their bytes, not parsed from the text protocol (a third of a load at step 200).
Each entry comes with its checksum (migration 8). The header, bodies and extras come as their
UTF-8 bytes (``convert_to``, never ``::bytea``, which would read backslashes as escapes), checked,
joined and handed to pydantic as they are: never decoded to ``str`` and encoded back."""

_LOAD_VIEW = _LOAD.replace(" ORDER BY k", " AND (i.list <> 'messages' OR i.seq <= %s) ORDER BY k")
""":data:`_LOAD` for the read side: every evidence and event, the opening
messages only, so the history is never sent by the database."""


COUNTS_SQL = (
    "SELECT status, sum(n), count(*) FILTER (WHERE d) FROM (SELECT status, n, false AS d FROM run_counts "
    "UNION ALL SELECT status, n, true FROM run_count_deltas) c GROUP BY status"
)
"""Runs per status (``run_counts`` and the unfolded deltas) and the number of deltas per status."""


def _entry_arrays(rows: list[tuple]) -> list[list[Any]]:
    """The seven arrays of :data:`_ENTRY_ARRAYS` from ``entries`` rows ``(run_id, n, list, seq,
    body, extra, ref, checksum)`` (:data:`core.stores.common.ENTRY_COLUMNS`)."""
    if not rows:
        return [[] for _ in ENTRY_COLUMNS[1:]]
    return [list(column) for column in list(zip(*rows, strict=True))[1:]]


def search_text(values: dict[str, Any], run_id: str) -> str:
    """The ``search`` column: the search fields, NFC and casefolded, one per line."""
    fields = {**values, "run_id": run_id}
    return "\n".join((nfc(str(fields.get(c) or "")) or "").casefold() for c in _SEARCHED)


class PostgresStore(CheckpointRows, AuditReads, ModelCallJournal, PostgresMarks):
    """The checkpoint store in the PostgreSQL database (and schema) of ``url`` (see the module's
    docstring); the schema is made or upgraded when it is first opened in a process.

    Args:
        url: a libpq URL (:mod:`core.stores.postgres.pool`).
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
        """Check the store's triggers against the schema's (:meth:`Database.check_triggers`): one
        that someone dropped or altered is made again when this user may, and said in
        :attr:`repairs` and :attr:`repaired_triggers` (``resolver audit verify`` reports it); when
        it may not, the store refuses writes naming it, and reads go on."""
        repaired = self.db.check_triggers()
        if not repaired:
            return
        self.repairs.append(
            f"The checkpoint store in {self.db.label} had lost its trigger(s) {', '.join(repaired)}; they were created again."
        )
        self.repaired_triggers.extend(repaired)

    def trigger_lines(self) -> list[tuple[str, str]]:
        """``doctor``'s lines on the store's triggers: a FAIL line naming each trigger still
        missing or altered (every write is refused until it is made again), a warn line for each
        one this open made again, else one ok line."""
        lines = [
            ("FAIL", f"team store: trigger {name} is {why}; every write is refused until the owner of the tables or the "
             "administrator makes it again (any resolver command with their URL)")
            for name, why in self.db.trigger_problems.items()
        ]  # fmt: skip
        lines += [("warn", f"team store: trigger {name} was missing or altered; made again as the schema makes it")
                  for name in self.repaired_triggers]  # fmt: skip
        return lines or [("ok", "team store: every trigger as the schema makes it")]

    # -- save -----------------------------------------------------------------------------------

    def save(
        self,
        state: TaskState,
        *,
        audit: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_ttl_s: float | None = None,
    ) -> TaskState:
        """Write ``state`` as its run's checkpoint (see :meth:`core.contract.store.Store.save`): a
        compare-and-set on ``state.version``, only the rows appended since this object was last
        saved or read, ``audit`` appended in the same transaction.

        Raises:
            RunExists, StaleCheckpoint, LeaseHeld, core.contract.audit.AuditMoved, StoreBusy.
        """
        prep = self._prepare(state)
        run_id = state.run_id
        values = list(prep.values.values())
        search = search_text(prep.values, run_id)
        leased = lease_owner is not None
        if prep.old == 0:
            sql, params = _SAVE_NEW, [run_id, *values, search]
            if leased and lease_ttl_s is not None:  # a new run taken by its maker
                sql, params = _SAVE_NEW_LEASED, [*params, lease_owner, lease_ttl_s]
        elif leased and lease_ttl_s is not None:
            sql, params = _SAVE_LEASED, [*values, search, lease_ttl_s, run_id, prep.old, lease_owner]
        elif leased:
            sql, params = _SAVE_RELEASED, [*values, search, run_id, prep.old, lease_owner]
        else:
            sql, params = _SAVE, [*values, search, run_id, prep.old]
        # The rows go in the header's statement when they are the ones appended since this object
        # was saved or read (or all of a new run's); else all of them again, after a delete.
        all_again = not (prep.appended or prep.old == 0)
        written: int | None = None
        separated = audit is not None and self.db.separated  # rows through the store's functions
        if separated and audit is not None and audit["decision"] in ("approve", "reject"):
            written = self._decide_through_function(state, prep, audit)
        elif separated:
            written = self._save_in_transaction(state, sql, params, prep, all_again, audit, noted=True)
        elif audit is None and not all_again:
            crash_point("row")  # the save is one statement: a kill falls before it or after it
            try:
                with self.db.atomic() as conn:
                    written = conn.execute(sql, [*params, run_id, *_entry_arrays(prep.rows)], binary=True).fetchone()[0]  # type: ignore[index]
            except psycopg.errors.UniqueViolation:  # the rows stored are not the ones this object saw
                all_again = True
        if written is None:
            written = self._save_in_transaction(state, sql, params, prep, all_again, audit)
        if written != 1:
            self._refused(run_id, prep.old, lease_owner)
        state.version = prep.new
        self._remember(state, prep.new, prep.written)
        crash_point("save")
        return state

    def _decide_through_function(self, state: TaskState, prep: _Prepared, audit: dict[str, Any]) -> int:
        """A decision's save on a store with role separation: one call of
        ``resolver_decide`` (:data:`core.stores.postgres.roles.DECIDE`), which checks the caller's
        registry entry, the role the stored proposal needs and the new header, then writes the
        header, the new events and the chained audit row as the tables' owner. Returns 1 when
        written, 0 when the version moved (the caller says who won). Raises ApprovalRefused (the
        function's sentence), AuditMoved."""
        if prep.old == 0 or not prep.appended:
            raise ApprovalRefused(
                f"Run {state.run_id} changed since it was read; read it again, then decide. Nothing was recorded."
            )
        header = {**prep.values, "search": search_text(prep.values, state.run_id)}
        crash_point("row")
        with self.db.atomic() as conn:
            got = conn.execute(
                "SELECT resolver_decide(%s, %s, %s::jsonb, %b::int[], %b::text[], %b::int[], %b::text[], %b::text[], "
                "%b::int[], %b::bigint[], %s::jsonb)",
                [state.run_id, prep.old, json.dumps(header), *_entry_arrays(prep.rows), json.dumps(audit)],
            ).fetchone()
        audit_id = int(got[0]) if got else 0
        return 0 if audit_id == 0 else 1

    def _save_in_transaction(
        self,
        state: TaskState,
        sql: str,
        params: list[Any],
        prep: _Prepared,
        all_again: bool,
        audit: dict[str, Any] | None,
        *,
        noted: bool = False,
    ) -> int:
        """A save that is more than one statement (a decision's audit row, or every row written
        again), as one transaction in one round trip: ``BEGIN``, the header's statement, the
        rows, the audit row and ``COMMIT`` are sent together and waited on once. Every statement
        after the header's writes only when the header was written (:data:`_IF_WROTE`), so a
        refused save commits nothing. The locks are taken in one order by every writer: the run's
        row (the header's compare-and-set), then the audit's head, inside the append, which is
        the last statement before the commit (:mod:`core.stores.postgres.audit`). Returns the
        headers written (0: refused, nothing written). ``noted`` (a store with role separation):
        the audit row goes through ``resolver_note`` (a refresh, or the executor's
        refusal).

        Raises:
            AuditMoved: the audit's signed ``prev`` moved (nothing written); StoreBusy,
            StoreConflict (the database undid it to let another writer through).
        """
        run_id = state.run_id
        for again in (all_again, True):
            rows = self._rows(state, (0, 0, 0)) if again and prep.appended else prep.rows
            crash_point("row")  # one round trip: a kill falls before it or after it
            try:
                with self.db.pipelined() as (conn, _sync):
                    cur = conn.execute(sql, [*params, run_id, *_entry_arrays([] if again else rows)], binary=True)
                    if again:
                        conn.execute(_DELETE_ENTRIES, (run_id,))
                        conn.execute(_INSERT_ENTRIES, [run_id, *_entry_arrays(rows)], binary=True)
                    if audit is not None:
                        conn.execute(_NOTE if noted else _APPEND, (run_id, json.dumps(auditchain.payload(audit))))
                got = cur.fetchone()
                return int(got[0]) if got else 0
            except psycopg.errors.UniqueViolation:  # the rows stored are not the ones this object saw: all again
                if again:
                    raise
        raise AssertionError("unreachable")

    def _refused(self, run_id: str, version: int, lease_owner: str | None) -> NoReturn:
        """Raise why a save wrote nothing: RunExists for a new run, else StaleCheckpoint or LeaseHeld."""
        if version == 0:
            raise RunExists(f"Run {run_id} already exists (another process saved it first); a new run needs a new ID.")
        with self.db.read() as conn:
            self._refuse(conn, run_id, version, lease_owner)

    @staticmethod
    def _refuse(conn: psycopg.Connection[Any], run_id: str, version: int, lease_owner: str | None) -> NoReturn:
        row = conn.execute("SELECT version, lease_owner FROM runs WHERE run_id = %s", (run_id,)).fetchone()
        raise refuse_save(run_id, version, row[0] if row else 0, row[1] if row else None, lease_owner)

    def append_audit(self, audit: dict[str, Any]) -> None:
        """Append one audit row outside any save (a refusal, a registry change), chained. On a
        store with role separation every row but the owner's registry rows goes through
        ``resolver_note`` (:data:`core.stores.postgres.roles.NOTE`)."""
        if self.db.separated and not str(audit.get("decision", "")).startswith(REGISTRY_PREFIX):
            with self.db.atomic() as conn:
                conn.execute("SELECT resolver_note(%s, %s::jsonb)", (audit["run_id"], json.dumps(audit)))
            return
        with self.db.transaction() as conn:
            auditchain.append(conn, audit["run_id"], audit)

    # -- load -----------------------------------------------------------------------------------

    @staticmethod
    def _read(conn: psycopg.Connection[Any], run_id: str, opening: int | None = None) -> _Parts | None:
        """The run's checkpoint as stored, in one statement (:data:`_LOAD`, or :data:`_LOAD_VIEW`
        with the ``opening`` messages only), as :func:`core.stores.common.read_parts` gives it;
        None when there is no run."""
        if opening is None:
            got = conn.execute(_LOAD, (run_id, run_id), binary=True).fetchall()
        else:
            got = conn.execute(_LOAD_VIEW, (run_id, run_id, opening), binary=True).fetchall()
        if not got or got[0][0] != 0:
            return None
        head = got[0]
        # No queue columns: this back-end's save writes them all, it never compares them.
        return assemble_parts(head[2], head[7], (), (r[1:7] for r in got[1:]))

    def load(self, run_id: str) -> TaskState:
        """The run's checkpoint, read in one statement (one round trip, one snapshot). Raises
        RunNotFound, CorruptCheckpoint, UnsupportedSchemaVersion."""
        with self.db.read() as conn:
            parts = self._read(conn, run_id)
        if parts is None:
            raise RunNotFound(run_id)
        return self._build(run_id, parts)

    def load_view(self, run_id: str) -> RunView:
        """The run as the read side shows it (:class:`core.ground.state.RunView`: no message history
        past the opening ones), read in one snapshot; never saved. Raises as :meth:`load`."""

        with self.db.read() as conn:
            parts = self._read(conn, run_id, OPENING_MESSAGES)
        if parts is None:
            raise RunNotFound(run_id)
        return cast("RunView", self._build(run_id, parts, view=True))

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
        """Delete one run, its rows and its journal (its ``lapse`` events and marks by migration
        16's trigger), with ``audit`` appended in the same transaction. Raises RunNotFound."""
        with self.db.transaction() as conn:
            if conn.execute("DELETE FROM runs WHERE run_id = %s", (run_id,)).rowcount == 0:
                raise RunNotFound(run_id)
            conn.execute("DELETE FROM entries WHERE run_id = %s", (run_id,))
            conn.execute("DELETE FROM model_calls WHERE run_id = %s", (run_id,))
            if audit is not None:
                auditchain.append(conn, run_id, audit)

    def reset(self, audit: Callable[[list[str]], dict[str, Any]] | None = None) -> int:
        """Delete every run, its ``lapse`` events and its marks (migration 16's trigger; the audit
        and the other events are kept); ``audit`` makes the row appended under ``*``."""
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
        """One page of the queue, keyset-paginated (see :meth:`core.contract.store.Store.page`).
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
        """Runs per status; runs flagged corrupt count under ``"corrupt"`` instead. The sums of
        ``run_counts`` and of the deltas the triggers append (schema migrations 7 and 19), in one
        statement, so one snapshot: a few hundred rows whatever the number of runs. Past
        :data:`~core.stores.postgres.schema.FOLD_AT` deltas the reader folds them
        (``resolver_run_counts_fold``, which never waits: another fold running, it does nothing)."""
        with self.db.read() as conn:
            rows = conn.execute(COUNTS_SQL).fetchall()
        unfolded = sum(int(r[2]) for r in rows)
        if unfolded > FOLD_AT:
            with suppress(StoreBusy), self.db.atomic() as conn:
                conn.execute("SELECT resolver_run_counts_fold()")
        return {status: int(n) for status, n, _ in rows if n}

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
        with self.db.read() as conn:  # one statement, its own transaction
            sql = f"UPDATE runs SET lease_expires = {LEASE_UNTIL} WHERE run_id = %s AND lease_owner = %s"
            return conn.execute(sql, (ttl_s, run_id, owner)).rowcount == 1

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease back if ``owner`` still holds it."""
        with self.db.transaction() as conn:
            conn.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = %s AND lease_owner = %s", (run_id, owner)
            )

    def expire_lease(self, run_id: str) -> None:
        """Mark the run's lease as expired (a second before the database's now)."""
        with self.db.read() as conn:  # one statement, its own transaction
            conn.execute(f"UPDATE runs SET lease_expires = {LEASE_UNTIL} WHERE run_id = %s", (-1.0, run_id))

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

    # -- the journal of model calls: core.stores.common.ModelCallJournal ---------------------------

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

    _journal_mark = "written_by"

    def _journal_verdicts(self, conn: QmarkConnection, rows: Sequence[Sequence[Any]]) -> list[str | None]:
        """Each row's ``written_by`` (stamped by migration 17's trigger) against the database
        users mapped to an approver's entry (revoked or not): a row one of them wrote was not
        written by the agent's runner. A row from before migration 17 (NULL) is the runner's."""
        mapped = {r[0]: r[1] for r in conn.execute("SELECT db_user, name FROM approvers WHERE db_user IS NOT NULL").fetchall()}
        out: list[str | None] = []
        for r in rows:
            user = r[7]
            out.append(
                None
                if user is None or user not in mapped
                else f"it was written by the database user {user}, approver {mapped[user]}'s"
            )
        return out

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
