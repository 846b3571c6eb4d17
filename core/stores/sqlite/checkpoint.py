"""The checkpoint store: a run saved after every step, in rows proportional to what changed.

``runs.sqlite`` in the home folder (store format :data:`~core.stores.sqlite.files.STORE_FORMAT`, kept in SQLite's
``user_version``) holds:

- ``runs``: one row per run. The **header** is the whole ``TaskState`` minus its append-only
  lists (``messages``, ``evidence``, ``events``) as JSON in ``state``, generic over the model's
  fields; beside it the queue's columns (run, ticket, status, times, version, customer, order,
  total CAD, role needed, actions, lease) with an index for every filter and sort the queue
  offers, and ``state_ok`` (0 once the row is known to be corrupt).
- ``entries``: one row per element of those lists, keyed by run and ``n`` (the order the rows
  were written: 1, 2, ...), with ``list`` (which list), ``seq`` (its place in that list, from 1)
  and ``body`` (the element's own JSON). A step **appends** its new rows and rewrites the small
  header, so a save costs what the step added, not the whole history; the table is ``WITHOUT
  ROWID``, so a step's rows sit side by side in one B-tree page. A tool output is stored once:
  an evidence row keeps its result in ``extra``, and the tool message that repeats it refers to
  that row (``ref``) instead of holding a second copy. An event keeps its time (ISO 8601, to the
  second) in ``extra`` for the trace. ``checksum`` (format 4) is the CRC-32 of ``body``
  and ``extra`` (:func:`core.stores.common.entry_checksum`): a row is validated when written and
  checked by it when read back; a format-3 store gets the column when opened, its rows NULL.
- ``audit``: append-only record of every decision (see :mod:`core.engine.approval`); triggers refuse
  any UPDATE or DELETE of its rows. ``run_uid`` names the run's identity when the caller gives it.
- ``audit_tip``: one row, the audit chain's length (its number of rows), kept by a trigger in the
  same transaction as every audit insert, so a decision reads the chain's length and tip at the
  same cost at 1,000,000 audit rows as at 10 (never a count of the table). A
  store made before it gets it, counted once, when a connection first opens it.
- ``run_counts``: runs per status, kept by triggers in the same transaction as every save, so
  the queue's counts cost the same at 1,000,000 runs as at 10; its ``corrupt:<status>`` rows count
  the runs flagged corrupt apart (:meth:`CheckpointStore.counts`: a corrupt run is not waiting).
- ``model_calls``: the journal of live model calls, one row per attempt keyed by run, step and
  attempt: written before the request is sent, its raw answer and usage (tokens) added before the
  runner acts on it. Format 3; a format-2 store gets the table when opened. ``seal`` (format 7) is
  an HMAC-SHA256 of the row's run, step, attempt, route, answer and tokens under a key derived
  from the home's ``approval.key`` (:func:`core.stores.common.journal_seal`), written with the
  row and again with its answer: a resume takes an answer only when its seal verifies, so a row
  planted with SQL by someone without the key never becomes a proposal
  (:class:`~core.ground.errors.JournalUntrusted`). See :meth:`CheckpointStore._seal_journal` for the rows
  already there when a store of an earlier format is upgraded.

A save is one ``BEGIN IMMEDIATE`` transaction (one fsync: see :mod:`core.stores.sqlite.database`) with a
compare-and-set on ``version``: a writer holding a stale copy gets
:class:`~core.ground.errors.StaleCheckpoint` instead of overwriting newer work. A SIGKILL between any
two row writes of a save leaves the previous whole checkpoint (the transaction never commits).
A step's save is the header's compare-and-set (one UPDATE) plus one multi-row INSERT of the
step's entries. A load reads header and rows in one read transaction as
their stored UTF-8 bytes (``CAST AS BLOB``: never decoded to ``str`` and encoded back), checks
each row's checksum, joins them into one JSON text and validates it once
(``TaskState.model_validate_json``, a time's range checked in pydantic's Rust, not in Python:
:class:`core.ground.state._Supported`); ``load_view`` reads only what the read side shows; anything unusual (an older schema, a
corrupt row, a header in release 0.1.0's whole-state form) takes the careful path with its own
clear error.

The store knows no policy: the queue's columns come from the ``summarize`` function it is
handed when it is made (:func:`core.api.queue.queue_columns`), called inside every save
(never optional, so a run saved through the lesson's Python API shows in the queue like any).

This is the SQLite implementation of :class:`core.contract.store.Store`; the contract's value
types, sorts and lease rules are in :mod:`core.contract.store`.
"""

from __future__ import annotations

import functools
import json
import operator
import sqlite3
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, suppress
from datetime import datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, cast

from core.contract.store import (
    PAGE_SIZE,
    SORTS,
    JournalKey,
    Lease,
    RunExists,
    RunSummary,
    Summarize,
    UnsupportedStoreFormat,
    blank_columns,
    crash_point,
    lease_held_by_other,
)
from core.ground.clock import Clock, SystemClock, iso, parse_time
from core.ground.errors import (
    ResolverError,
    RunNotFound,
)
from core.ground.homepath import home_was_used
from core.ground.safetext import nfc
from core.stores.common import (
    _ALWAYS_ORDER,
    _HEADER_COLS,
    _HEADER_EXCLUDE,
    _SOMETIMES,
    _SUMMARY,
    ENTRY_COLUMNS,
    LISTS,
    AuditReads,
    CheckpointRows,
    ModelCallJournal,
    _Parts,
    event_dicts,
    journal_key,
    journal_seal,
    read_parts,
    refuse_save,
    seal_verdict,
    sort_order,
)
from core.stores.sqlite import audit as auditchain
from core.stores.sqlite.database import Counters, Database
from core.stores.sqlite.files import STORE_FORMAT, online_backup, scrub
from core.stores.sqlite.marks import SqliteMarks, add_run_marks

if TYPE_CHECKING:  # pydantic, the model and sqlite-utils are imported where they are used, so a
    # listing (``resolver runs``) reads its pages without importing them, and start-up stays fast
    import sqlite_utils

    from core.ground.state import RunView, TaskState

__all__ = ["CheckpointStore"]

_pick_always = operator.itemgetter(*_ALWAYS_ORDER)
"""The values of :data:`_ALWAYS_ORDER` from a save's column values (by name), in that order."""
_READ_HEAD = f"SELECT version, lease_owner, {', '.join(_SOMETIMES)} FROM runs WHERE run_id = ?"
_TEXT = "CAST(? AS TEXT)"
"""The placeholder of a JSON text bound as its UTF-8 bytes (:attr:`CheckpointRows._raw_text`): SQLite
reads a BLOB cast to TEXT as text in the database's encoding (UTF-8), byte for byte, so the column
holds the same TEXT value a ``str`` would have given, without a decode and an encode back."""
_INSERT_RUN = (
    f"INSERT INTO runs (run_id, {', '.join(_HEADER_COLS)}, state_ok) "
    f"VALUES (?, {', '.join(_TEXT if c == 'state' else '?' for c in _HEADER_COLS)}, 1)"
)


@lru_cache(maxsize=256)
def _update_sql(changed: tuple[str, ...], lease: bool) -> str:
    """``UPDATE runs SET`` the columns that change at every save, plus ``changed`` (and the lease),
    with the compare-and-set on version. Cached, so each variant is prepared once."""
    sets = [f"{c} = {_TEXT if c == 'state' else '?'}" for c in (*_ALWAYS_ORDER, *changed)]
    sets.append("state_ok = 1")
    if lease:
        sets += ["lease_owner = ?", "lease_expires = ?"]
    where = "run_id = ? AND version = ? AND lease_owner = ?" if lease else "run_id = ? AND version = ?"
    return f"UPDATE runs SET {', '.join(sets)} WHERE {where}"


_ENTRY_VALUES = (
    f"(?, ?, ?, ?, {_TEXT}, {_TEXT}, ?, ?)",
    f"(?, ?, ?, ?, {_TEXT}, NULL, ?, ?)",
    f"(?, ?, ?, ?, {_TEXT}, {_TEXT}, NULL, ?)",
    f"(?, ?, ?, ?, {_TEXT}, NULL, NULL, ?)",
)
"""An entry's row of values by its shape (:func:`_shape`): 1 when its ``extra`` is None, plus 2
when its ``ref`` is. A NULL is written in the SQL, not bound: the driver binds None through its
adapter lookup (a failed attribute lookup and its error text, about 1,100 instructions each)."""
_INSERT_ENTRY = f"INSERT INTO entries ({', '.join(ENTRY_COLUMNS)}) VALUES "
_INSERT_UNCHECKED_ENTRY = "INSERT INTO entries (run_id, n, list, seq, body, extra, ref) VALUES (?, ?, ?, ?, ?, ?, ?)"
"""A row of release 0.1.0's whole state split at migration: never validated as written, so
without a checksum (validated in full when read)."""
_ENTRY_BATCH = 120
"""Rows per multi-row INSERT of entries: 8 parameters each, 960 a statement, under SQLite's
oldest limit of 999 variables (32,766 since 3.32); a step adds 2 to 6 rows, so one statement,
and a whole rewrite of a 300-step run takes ten."""


@lru_cache(maxsize=256)
def _insert_entries_sql(shapes: tuple[int, ...]) -> str:
    """``INSERT INTO entries`` of one row per shape (:data:`_ENTRY_VALUES`) in one statement
    (so that a step's save is the header's compare-and-set plus one insert). Cached,
    so each sequence of shapes is prepared once (a step's rows have the same shapes every step)."""
    return _INSERT_ENTRY + ", ".join(_ENTRY_VALUES[shape] for shape in shapes)


def _insert_entries(conn: sqlite3.Connection, rows: list[tuple]) -> None:
    """Insert ``rows`` (:data:`ENTRY_COLUMNS` each; only ``extra`` and ``ref`` may be None) in
    one statement per :data:`_ENTRY_BATCH` rows, their NULLs written in the SQL, reaching the
    crash point ``row`` after each statement (before the commit). A None in another column
    leaves the statement a value short: the driver refuses it ("Incorrect number of bindings"),
    nothing is written in the wrong column."""
    for i in range(0, len(rows), _ENTRY_BATCH):
        batch = rows[i : i + _ENTRY_BATCH]
        shapes = tuple([(r[5] is None) + 2 * (r[6] is None) for r in batch])
        conn.execute(_insert_entries_sql(shapes), [v for r in batch for v in r if v is not None])
        crash_point("row")


_READ_ENTRIES = (
    "SELECT i.list, i.body, i.extra, i.ref, e.extra FROM entries i LEFT JOIN entries e "
    "ON i.ref IS NOT NULL AND e.run_id = i.run_id AND e.n = i.ref WHERE i.run_id = ? ORDER BY i.n"
)
_CREATE_MODEL_CALLS = (
    "CREATE TABLE IF NOT EXISTS model_calls (run_id TEXT NOT NULL, step INTEGER NOT NULL, attempt INTEGER NOT NULL, "
    "route TEXT NOT NULL, sent_at TEXT NOT NULL, answer TEXT, tokens_in INTEGER, tokens_out INTEGER, answered_at TEXT, "
    "seal TEXT, PRIMARY KEY (run_id, step, attempt)) WITHOUT ROWID"
)
_IN_FLIGHT = (
    "SELECT COUNT(*) FROM runs WHERE status = 'executing' AND EXISTS "
    "(SELECT 1 FROM audit WHERE audit.run_id = runs.run_id AND audit.decision = 'approve')"
)
"""Runs executing under an approval this home signed: while there are any, a missing
``approval.key`` is not made again (:func:`core.contract.approval_key.load_key`)."""
_CREATE_ENTRIES = (
    "CREATE TABLE IF NOT EXISTS entries (run_id TEXT NOT NULL, n INTEGER NOT NULL, list TEXT NOT NULL, "
    "seq INTEGER NOT NULL, body TEXT NOT NULL, extra TEXT, ref INTEGER, checksum INTEGER, PRIMARY KEY (run_id, n)) "
    "WITHOUT ROWID"
)
_ADD_CHECKSUM = "ALTER TABLE entries ADD COLUMN checksum INTEGER"
"""Store format 4: each entry's checksum; the rows already there keep NULL and
are validated in full when read, as before (a migration that checksummed them would vouch for
bytes no save validated)."""


class CheckpointStore(CheckpointRows, AuditReads, ModelCallJournal, SqliteMarks):
    """SQLite checkpoint store at ``path`` (``runs.sqlite`` in the home folder).

    Args:
        path: the database file; created with its tables on first use, migrated from release
            0.1.0's format on open.
        clock: stamps ``updated_at`` at every save (default: real time).
        summarize: gives the queue's columns of a state, called inside every save (the product
            hands :func:`core.api.queue.queue_columns`; required: a store that wrote blank
            columns would leave a run out of the queue's totals and every approver's "mine").
        journal_key: where the home's approval key comes from (:data:`core.contract.store.JournalKey`),
            asked once, when a journal row is first sealed or checked (or the upgrade to format
            7 finds rows to seal); the journal's seals are made under a key derived from it
            (:func:`core.stores.common.journal_key`). :class:`core.api.home.Home` passes its
            ``approval.key``. A store opened without one (None: the lesson's Python API, which
            only replays recordings, tests, the listing) keeps working for every run, but its
            journal can be neither written nor trusted: :meth:`journal_attempt` and
            :meth:`journal_answer` refuse with one sentence before anything is sent,
            :meth:`journal_answered` and :meth:`journal_problems` refuse when there are rows,
            :meth:`model_calls` reports ``trusted`` None, and opening a format-6 store whose
            journal holds rows is refused (they would stay unsealed for good) until resolver
            opens the home once.

    Attributes:
        counters: transactions and commits of this store (:class:`core.stores.sqlite.database.Counters`); one
            commit is one fsync of the WAL.

    Raises:
        UnsupportedStoreFormat: the file was written by a newer resolver, or its tables are not a
            checkpoint store's, or it is of format 6 or older with journal rows to seal and no
            ``journal_key``.
        ApprovalKeyError: the upgrade to format 7 needs the home's key and it cannot be had
            (damaged, or missing while approvals are in flight); nothing was changed.
    """

    _raw_text = True
    _journal_mark = "seal"  # JSON texts bound as their UTF-8 bytes, stored as TEXT (_TEXT)

    def __init__(
        self,
        path: Path | str,
        clock: Clock | None = None,
        *,
        summarize: Summarize,
        afresh: bool = False,
        journal_key: JournalKey | None = None,
    ) -> None:
        self.path = Path(path)
        self._journal_key_of = journal_key
        self._sealing: bytes | None = None
        self.clock = clock or SystemClock()
        self.summarize: Summarize = summarize
        self.repairs: list[str] = []
        self.repaired_triggers: list[str] = []
        """The triggers found missing and created again when this store opened (``audit verify``
        reports the audit's own: a dropped trigger means rows may have been changed)."""
        """Sentences about what opening the store repaired (missing triggers), for ``doctor``."""
        try:  # missing or empty: a lost store unless the caller makes it again (`reset --all`, `restore`)
            self._was_lost = not afresh and (not self.path.exists() or (self.path.is_file() and self.path.stat().st_size == 0))
        except OSError:
            self._was_lost = False
        if self.path.exists() and not self.path.is_file():
            raise UnsupportedStoreFormat(
                f"The checkpoint store {self.path} is not a file; move it away, then restore runs.sqlite from a "
                "backup or choose another home."
            )
        if self._was_lost and home_was_used(self.path.parent):
            # refused before any connection: opening it would write SQLite's header and the next
            # open would take the lost store for a new one (a second refund, found by a new user)
            raise UnsupportedStoreFormat(_EMPTY_BUT_USED.format(path=self.path, lost=_lost(self.path)))
        self.db = Database(self.path, label="the checkpoint store", on_open=self._on_open, keep_file=True)
        self._audit_sql = auditchain
        self._init_rows()
        self.db.connection()

    @property
    def counters(self) -> Counters:
        """Transactions and commits so far (see :class:`core.stores.sqlite.database.Counters`)."""
        return self.db.counters

    # -- schema and migration -------------------------------------------------------------------

    def _on_open(self, conn: sqlite3.Connection) -> None:
        self._check_application(conn)
        if conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT:
            self._repair_triggers(conn)
            return
        conn.execute("BEGIN IMMEDIATE")
        try:
            import sqlite_utils  # lazy: only to build a store's tables, so a listing never pays for the import

            fmt = conn.execute("PRAGMA user_version").fetchone()[0]
            db = sqlite_utils.Database(conn)
            tables = set(db.table_names())
            if fmt == STORE_FORMAT:
                pass
            elif fmt == 0 and tables and "runs" not in tables:
                raise UnsupportedStoreFormat(
                    f"{self.path} is not a resolver checkpoint store (it holds the tables "
                    f"{', '.join(sorted(tables)[:5])}); nothing was changed. Move it away, or choose another home."
                )
            elif fmt == 0 and not tables and self._was_lost and home_was_used(self.path.parent):
                raise UnsupportedStoreFormat(_EMPTY_BUT_USED.format(path=self.path, lost="is empty"))
            elif fmt > STORE_FORMAT:
                raise UnsupportedStoreFormat(
                    f"The checkpoint store {self.path} has format {fmt}, written by a newer resolver; this resolver "
                    f"reads formats 1 to {STORE_FORMAT}. Upgrade resolver, or move the file away to start afresh."
                )
            elif fmt == 6:
                self._seal_journal(conn)  # format 7: each journal row sealed with the home's key
            elif fmt == 5:
                add_run_marks(conn)  # format 6: a refreshed request's event (the tables are there)
                self._seal_journal(conn)
            elif fmt in (2, 3, 4):
                conn.execute(_CREATE_MODEL_CALLS)  # format 3: the journal of model calls
                if "checksum" not in {r[1] for r in conn.execute("PRAGMA table_info(entries)")}:
                    conn.execute(_ADD_CHECKSUM)  # format 4: each entry's checksum
                add_run_marks(conn)  # formats 5 and 6: the marks and the queue's events
                self._add_listing_indexes(conn)  # and format 5's covering indexes
                self._seal_journal(conn)
            elif "runs" in tables:
                self._migrate_from_0_1_0(conn, db, tables)  # its journal is made new, with the seal column
            else:
                self._create(conn, db)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {STORE_FORMAT}")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._repair_triggers(conn)  # what a store of an older format lacks besides (audit_tip)

    def _seal_journal(self, conn: sqlite3.Connection) -> None:
        """The step to format 7, inside the migration's transaction: give ``model_calls`` its
        ``seal`` column and seal every row already there that has none with the home's key.

        Why those rows are sealed, not left unsealed: a run that crashed between "answer
        journaled" and "step saved" under the earlier release resumes from that answer (no second
        call, no second charge); an unsealed row would refuse its resume for good. The upgrade
        cannot tell a row its runner wrote from one planted by SQL before it, so it vouches for
        every row present at that moment (trust on first upgrade), then no row written without
        the key is ever trusted again. What remains: someone who can write SQL into
        ``runs.sqlite`` can set the store's format back (``PRAGMA user_version``), plant a row
        without a seal, and have the next open seal it as an earlier release's; the README's
        threat model says so. A row that already holds a seal is never sealed again.

        Raises:
            UnsupportedStoreFormat: there are rows to seal and the store was opened without a
                ``journal_key``; nothing was changed (the migration rolls back).
        """
        if "seal" not in {r[1] for r in conn.execute("PRAGMA table_info(model_calls)")}:
            conn.execute("ALTER TABLE model_calls ADD COLUMN seal TEXT")
        rows = conn.execute(
            "SELECT run_id, step, attempt, route, answer, tokens_in, tokens_out FROM model_calls WHERE seal IS NULL"
        ).fetchall()
        if not rows:
            return
        if self._journal_key_of is None:
            raise UnsupportedStoreFormat(
                f"The checkpoint store {self.path} holds {len(rows)} journaled model call(s) of an earlier release, which are "
                "sealed with the home's key when it is upgraded; open the home once with resolver (`resolver runs`, for "
                "one) first. Nothing was changed."
            )
        key = self._sealing_key(lambda: int(conn.execute(_IN_FLIGHT).fetchone()[0]))
        conn.executemany(
            "UPDATE model_calls SET seal = ? WHERE run_id = ? AND step = ? AND attempt = ?",
            [(journal_seal(key, *r), r[0], r[1], r[2]) for r in rows],
        )

    def seal_copied_journal(self) -> int:
        """Seal, with this home's key, every journal row that has no seal: only ``resolver store
        copy`` calls it, on its target, once every part and the target's ``approval.key`` are in
        place (the target was empty, so its unsealed rows are the copied ones, and the copy
        refused a source whose journal held a row its runner did not write). Returns the rows
        sealed. Raises ResolverError without ``journal_key``, ApprovalKeyError."""
        unsealed = "SELECT run_id, step, attempt, route, answer, tokens_in, tokens_out FROM model_calls WHERE seal IS NULL"
        with self.db.read() as conn:
            if conn.execute(unsealed + " LIMIT 1").fetchone() is None:
                return 0  # no key asked for (a shop home copied without live runs makes no approval.key)
        sealer = self._journal_sealer()
        with self.db.immediate() as conn:
            rows = conn.execute(unsealed).fetchall()
            conn.executemany(
                "UPDATE model_calls SET seal = ? WHERE run_id = ? AND step = ? AND attempt = ?",
                [(sealer(*r), r[0], r[1], r[2]) for r in rows],
            )
        return len(rows)

    def _sealing_key(self, in_flight: Callable[[], int]) -> bytes:
        """The journal's sealing key (:func:`core.stores.common.journal_key` of the home's
        approval key), asked of ``journal_key`` once and kept. ``in_flight`` counts the approvals
        in flight (asked only when the home's key must be made). Raises ApprovalKeyError."""
        if self._sealing is None:
            assert self._journal_key_of is not None
            self._sealing = journal_key(self._journal_key_of(in_flight))
        return self._sealing

    def _check_application(self, conn: sqlite3.Connection) -> None:
        """Refuse a SQLite file that another application marked as its own."""
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if app not in (0, APPLICATION_ID):
            raise UnsupportedStoreFormat(
                f"{self.path} is another application's database (application_id {app}), not a resolver checkpoint "
                "store; nothing was changed. Move it away, or choose another home."
            )

    def _repair_triggers(self, conn: sqlite3.Connection) -> None:
        """Create again the triggers that guard the audit, the counts and the search index when any
        is missing (someone dropped them), and note it in :attr:`repairs`."""
        have = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
        missing = sorted(TRIGGERS - have)
        if not missing:
            return
        import sqlite_utils  # lazy: only when a trigger was dropped, so a listing never pays for the import

        conn.execute("BEGIN IMMEDIATE")
        try:
            db = sqlite_utils.Database(conn)
            self._create_side_tables(conn, db, set(db.table_names()))
            self._create_indexes_and_triggers(conn, db)
            if ({"runs_count_insert", "runs_count_delete", "runs_count_status"} | NEW_TRIGGERS) & set(missing):
                conn.execute("DELETE FROM run_counts")
                conn.execute("INSERT INTO run_counts (status, n) SELECT status, COUNT(*) FROM runs GROUP BY status")
                conn.execute(_RECOUNT_CORRUPT)
            if "audit_tip_insert" in missing:  # a store made before audit_tip, or its trigger dropped: count once
                conn.execute("DELETE FROM audit_tip")
                conn.execute(_COUNT_AUDIT_TIP)
            if {"runs_search_insert", "runs_search_delete", "runs_search_update"} & set(missing):
                conn.execute("INSERT INTO runs_search (runs_search) VALUES ('rebuild')")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        missing = [t for t in missing if t not in NEW_TRIGGERS]  # not lost: the store predates them
        if not missing:
            return
        note = f"The checkpoint store {self.path} had lost its trigger(s) {', '.join(missing)}; they were created again."
        if note not in self.repairs:
            self.repairs.append(note)
            self.repaired_triggers.extend(t for t in missing if t not in self.repaired_triggers)

    @staticmethod
    def _add_listing_indexes(conn: sqlite3.Connection) -> None:
        """Give a store of format 2 to 4 the covering indexes of ``resolver runs``
        (:data:`_LISTING_INDEXES`) in place of the narrow ones they replace, inside the migration
        to format 5 (its transaction): once, the first time the store is opened for writing
        (36 s at 1,000,000 runs on a loaded 2-core machine). A store of format 5 was made with
        them (:meth:`_create_indexes_and_triggers`). On a store of :data:`LONG_INDEX_BUILD_RUNS`
        runs or more, :data:`LONG_INDEX_BUILD_LINE` is said on stderr first (``MAX(rowid)``: no
        count of the whole table before the build)."""
        runs = conn.execute("SELECT MAX(rowid) FROM runs").fetchone()[0] or 0
        if runs >= LONG_INDEX_BUILD_RUNS:
            _say_long_build(LONG_INDEX_BUILD_LINE)
        for statement in _LISTING_INDEXES:
            conn.execute(statement)
        for old in _NARROW_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {old}")

    @staticmethod
    def _create_side_tables(conn: sqlite3.Connection, db: sqlite_utils.Database, tables: set[str]) -> None:
        conn.execute(_CREATE_MODEL_CALLS)
        conn.execute(_CREATE_ENTRIES)  # WITHOUT ROWID (sqlite-utils cannot say so): one B-tree, a step's rows side by side
        if "audit" not in tables:
            db.table("audit").create(
                {
                    "id": int,
                    "run_id": str,
                    "decision": str,
                    "role": str,
                    "name": str,
                    "digest": str,
                    "at": str,
                    "detail": str,
                    "run_uid": str,
                },
                pk="id",
            )
            db.table("audit").create_index(["run_id"], if_not_exists=True)
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit "
            "BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
        )
        conn.execute(
            "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit "
            "BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
        )
        conn.execute(_CREATE_AUDIT_TIP)
        conn.execute(_COUNT_AUDIT_TIP.replace("INSERT", "INSERT OR IGNORE", 1))
        conn.execute(_AUDIT_TIP_TRIGGER)
        if "run_counts" not in tables:
            db.table("run_counts").create({"status": str, "n": int}, pk="status", not_null={"n"})
        if "runs" in tables or "runs" in db.table_names():
            add_run_marks(conn)  # the marks and the queue's events (format 4)

    @staticmethod
    def _create_indexes_and_triggers(conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
        runs = db.table("runs")
        for column, _asc in {v for v in SORTS.values()}:
            if column == LISTED_SORT:  # the covering indexes below serve this sort
                continue
            runs.create_index(["status", column, "run_id"], if_not_exists=True)
            runs.create_index([column, "run_id"], if_not_exists=True)
        for statement in _LISTING_INDEXES:
            conn.execute(statement)
        runs.create_index(["task_id", "created_ts"], if_not_exists=True)
        for old in ("idx_runs_status_updated_ts", "idx_runs_task_id_updated_ts", *_NARROW_INDEXES):
            conn.execute(f"DROP INDEX IF EXISTS {old}")
        upsert = "INSERT INTO run_counts (status, n) VALUES (NEW.status, 1) ON CONFLICT(status) DO UPDATE SET n = n + 1;"
        for statement in _split_triggers(upsert):
            conn.execute(statement)
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs_search'").fetchone():
            conn.execute(_CREATE_SEARCH)
            conn.execute("INSERT INTO runs_search (runs_search) VALUES ('rebuild')")
        for statement in _SEARCH_TRIGGERS:
            conn.execute(statement)

    def _create(self, conn: sqlite3.Connection, db: sqlite_utils.Database) -> None:
        db.table("runs").create(
            {
                "run_id": str,
                "task_id": str,
                "variant": str,
                "model": str,
                "status": str,
                "created_at": str,
                "updated_at": str,
                "created_ts": float,
                "updated_ts": float,
                "version": int,
                "customer": str,
                "order_id": str,
                "total_amount": str,
                "amount_cents": int,
                "required_role": str,
                "role_rank": int,
                "actions": str,
                "lease_owner": str,
                "lease_expires": str,
                "state": str,
                "state_ok": int,
            },
            pk="run_id",
            not_null={
                "task_id",
                "status",
                "updated_at",
                "version",
                "state",
                "state_ok",
                "created_ts",
                "updated_ts",
                "amount_cents",
                "role_rank",
            },
            defaults={"state_ok": 1, "created_ts": 0.0, "updated_ts": 0.0, "amount_cents": 0, "role_rank": -1},
        )
        self._create_side_tables(conn, db, set(db.table_names()))
        self._create_indexes_and_triggers(conn, db)

    def _migrate_from_0_1_0(self, conn: sqlite3.Connection, db: sqlite_utils.Database, tables: set[str]) -> None:
        """Release 0.1.0 kept the whole state as JSON in ``runs.state`` and each event's message
        and data in ``events``. Split every state into header and rows, add the sort columns,
        the counts and ``audit.run_uid``, in the one transaction of :meth:`_on_open`."""
        runs_cols = set(db.table("runs").columns_dict)
        needed = {"run_id", "task_id", "status", "updated_at", "version", "state"}
        if not needed <= runs_cols:
            raise UnsupportedStoreFormat(
                f"The checkpoint store {self.path} has a runs table without {', '.join(sorted(needed - runs_cols))}; "
                "it is not a resolver checkpoint store this release can migrate. Move it away to start afresh."
            )
        for name, kind, default in (
            ("created_ts", float, 0.0),
            ("amount_cents", int, 0),
            ("role_rank", int, -1),
            ("state_ok", int, 1),
            ("updated_ts", float, 0.0),
        ):
            if name not in runs_cols:
                db.table("runs").add_column(name, kind, not_null_default=default)
        conn.execute("UPDATE runs SET updated_ts = 0 WHERE updated_ts IS NULL")
        self._create_side_tables(conn, db, tables)
        events_cols = set(db.table("events").columns_dict)
        if {"seq", "at", "kind", "message", "data"} <= events_cols:  # kept for runs whose state cannot give them back
            conn.execute(
                "INSERT INTO entries (run_id, n, list, seq, body, extra, ref) "
                "SELECT run_id, 1000000 + seq, 'events', seq, json_object('seq', seq, 'at', at, 'kind', kind, "
                "'message', message, 'data', json(CASE WHEN json_valid(data) THEN data ELSE '{}' END)), at, NULL "
                "FROM events WHERE seq IS NOT NULL"
            )
        db.table("events").drop()
        if "run_uid" not in db.table("audit").columns_dict:
            db.table("audit").add_column("run_uid", str)
        rows = conn.execute("SELECT run_id, state, created_at, total_amount FROM runs").fetchall()
        for run_id, text, created_at, total in rows:
            self._split_whole_state(conn, run_id, text, created_at, total)
        self._create_indexes_and_triggers(conn, db)
        conn.execute("DELETE FROM run_counts")
        conn.execute("INSERT INTO run_counts (status, n) SELECT status, COUNT(*) FROM runs GROUP BY status")
        conn.execute(_RECOUNT_CORRUPT)

    def _split_whole_state(
        self, conn: sqlite3.Connection, run_id: str, text: str, created_at: str | None, total: str | None
    ) -> None:
        # lazy: only for a 0.1.0 store's rows, so a listing never imports pydantic or the models
        from pydantic import ValidationError

        from core.ground.state import TaskState, migrate  # lazy: as above

        dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict) or not all(isinstance(raw.get(k, []), list) for k in LISTS):
                raise ValueError("not a whole state")
        except ValueError:
            conn.execute("UPDATE runs SET state_ok = 0 WHERE run_id = ?", (run_id,))
            return
        conn.execute("DELETE FROM entries WHERE run_id = ?", (run_id,))
        n = 0
        for name in LISTS:
            for seq, item in enumerate(raw.get(name, []), 1):
                n += 1
                extra = None
                if name == "evidence" and isinstance(item, dict):
                    extra = dumps(item.get("result"))
                    item = {k: v for k, v in item.items() if k != "result"}
                elif name == "events" and isinstance(item, dict):
                    try:
                        extra = iso(parse_time(item.get("at", "")))
                    except (ValueError, TypeError, ResolverError):
                        extra = str(item.get("at", ""))
                conn.execute(_INSERT_UNCHECKED_ENTRY, (run_id, n, name, seq, dumps(item), extra, None))
        header = {k: v for k, v in raw.items() if k not in _HEADER_EXCLUDE}
        columns: dict[str, Any] = {}
        with suppress(ValueError, TypeError, ResolverError):
            columns["created_ts"] = parse_time(created_at or raw.get("created_at", "")).timestamp()
        try:
            if self.summarize is blank_columns:  # a store handed no policy keeps the 0.1.0 columns it cannot compute
                raise ValueError("no summarize function")
            state = TaskState.model_validate(migrate(dict(raw)))
            cols = self.summarize(state)
            columns |= {
                "amount_cents": cols["amount_cents"],
                "role_rank": cols["role_rank"],
                "customer": cols["customer"],
                "total_amount": cols["total_amount"],
                "required_role": cols["required_role"],
                "actions": cols["actions"],
            }
        except (ValidationError, ResolverError, ValueError):
            if total:
                columns["amount_cents"] = round(float(total) * 100)
        sets = "".join(f", {k} = ?" for k in columns)
        conn.execute(f"UPDATE runs SET state = ?{sets} WHERE run_id = ?", (dumps(header), *columns.values(), run_id))

    # -- save -----------------------------------------------------------------------------------

    def save(
        self,
        state: TaskState,
        *,
        audit: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_ttl_s: float | None = None,
    ) -> TaskState:
        """Write ``state`` as its run's checkpoint, stamping ``updated_at`` from the clock.

        Compare-and-set: the row must still have ``state.version`` (0 for a new run); the saved
        row gets ``version + 1``, which is written back into ``state``. Only the list elements
        appended since this object was last saved or loaded become new rows; a list that was
        shortened, reassigned or had an element replaced (or a state this store never saw)
        rewrites the run's rows. The lists are append-only by contract: to change a saved
        message, evidence or event, replace the element; a field edited in place on the very
        object already saved is not noticed. ``audit`` (``decision``, ``role``, ``name``, ``digest``, ``at``, optional
        ``detail``, ``run_uid``, and a signed decision's ``prev`` and ``sig``) is appended in the same transaction,
        chained to the row before it (:func:`core.engine.auditchain.append`; raises StaleCheckpoint
        when a signed ``prev`` is no longer the newest row's hash).

        ``lease_owner``: the save also requires that this owner holds the run's lease, and
        renews it for ``lease_ttl_s`` seconds, or releases it when ``lease_ttl_s`` is None (the
        executor folds its lease into its saves this way).

        Raises:
            StaleCheckpoint: someone saved the run since this copy was loaded.
            LeaseHeld: ``lease_owner`` no longer holds the lease.
            StoreBusy: the database stayed locked.
        """
        prep = self._prepare(state)
        now, old, new, saved, appended, rows, values, written = (
            prep.now,
            prep.old,
            prep.new,
            prep.saved,
            prep.appended,
            prep.rows,
            prep.values,
            prep.written,
        )
        run_id = state.run_id
        with self.db.immediate() as conn:
            if old == 0:
                try:
                    conn.execute(_INSERT_RUN, (run_id, *values.values()))
                except sqlite3.IntegrityError:
                    raise RunExists(
                        f"Run {run_id} already exists (another process saved it first); a new run needs a new ID."
                    ) from None
                if lease_owner is not None and lease_ttl_s is not None:  # a new run taken by its maker
                    conn.execute(
                        "UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?",
                        (lease_owner, iso(now + timedelta(seconds=lease_ttl_s)), run_id),
                    )
            else:
                # the compare-and-set is in the UPDATE's WHERE; the row's columns are known from
                # the last save or load of this object, else read once
                known = saved.columns if saved is not None else None
                if known is None:
                    head = conn.execute(_READ_HEAD, (run_id,)).fetchone()
                    if head is None or head[0] != old:
                        self._refuse(conn, run_id, old, lease_owner)
                    known = tuple(head[2:])
                changed = (
                    ()
                    if written == known  # a step's save: none of them moved
                    else tuple(c for c, before, now_ in zip(_SOMETIMES, known, written, strict=True) if now_ != before)
                )
                params: list[Any] = [*_pick_always(values), *(values[c] for c in changed)]
                if lease_owner is not None:
                    until = iso(now + timedelta(seconds=lease_ttl_s)) if lease_ttl_s is not None else None
                    params += [lease_owner if until else None, until]
                params += [run_id, old] if lease_owner is None else [run_id, old, lease_owner]
                if conn.execute(_update_sql(changed, lease_owner is not None), params).rowcount != 1:
                    self._refuse(conn, run_id, old, lease_owner)
            crash_point("row")
            if not appended:
                conn.execute("DELETE FROM entries WHERE run_id = ?", (run_id,))
                crash_point("row")
            try:
                _insert_entries(conn, rows)
            except sqlite3.IntegrityError:  # the rows on disk are not the ones this object saw: all again
                conn.execute("DELETE FROM entries WHERE run_id = ?", (run_id,))
                _insert_entries(conn, self._rows(state, (0, 0, 0)))
            if audit is not None:
                auditchain.append(conn, run_id, audit, hashed=False)  # chained to the row before it
                crash_point("row")
        state.version = new
        self._remember(state, new, written, saved, prep)
        crash_point("save")
        return state

    def append_audit(self, audit: dict[str, Any]) -> None:
        """Append one audit row outside any save: a refusal (drift, precondition, duplicate,
        expiry) that changes no checkpoint. ``audit`` has ``run_id``, ``decision``,
        ``role``, ``name``, ``digest``, ``at``, ``detail`` and ``run_uid``."""
        with self.db.immediate() as conn:
            auditchain.append(conn, audit["run_id"], audit, hashed=False)  # chained like every other row

    @staticmethod
    def _refuse(conn: sqlite3.Connection, run_id: str, version: int, lease_owner: str | None) -> NoReturn:
        """Say why a save cannot be written: the version moved on, or the lease is not ours."""
        row = conn.execute("SELECT version, lease_owner FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        raise refuse_save(run_id, version, row[0] if row else 0, row[1] if row else None, lease_owner)

    # -- load -----------------------------------------------------------------------------------

    @staticmethod
    def _read(conn: sqlite3.Connection, run_id: str, opening: int | None = None) -> _Parts | None:
        return read_parts(conn, run_id, opening)

    def _read_once(self, run_id: str, opening: int | None) -> _Parts:
        with self.db.read() as conn:
            conn.execute("BEGIN")
            try:
                parts = self._read(conn, run_id, opening)
            finally:
                conn.execute("COMMIT")
        if parts is None:
            raise RunNotFound(run_id)
        return parts

    def load(self, run_id: str) -> TaskState:
        """Load and validate a run's checkpoint, migrating older schema versions.

        Raises:
            RunNotFound: no such run (the message says to run ``resolver runs``).
            CorruptCheckpoint: the JSON is broken or does not match ``TaskState``.
            UnsupportedSchemaVersion: a schema version this code cannot migrate.
        """
        return self._build(run_id, self._read_once(run_id, None))

    def load_view(self, run_id: str) -> RunView:
        """The run as the read side shows it (:class:`core.ground.state.RunView`: no message history
        past the opening ones), in one read transaction; never saved. Raises as :meth:`load`."""
        from core.ground.state import OPENING_MESSAGES  # lazy: the models load with the first run read, not with a listing

        return cast("RunView", self._build(run_id, self._read_once(run_id, OPENING_MESSAGES), view=True))

    def _mark_corrupt(self, run_id: str) -> None:
        """Flag the row so listings show it as corrupt without reading it (best effort)."""
        try:
            with self.db.read() as conn:
                conn.execute("UPDATE runs SET state_ok = 0 WHERE run_id = ? AND state_ok = 1", (run_id,))
        except ResolverError:
            pass

    def has_history(self) -> bool:
        """True when the store holds any run or audit row (the home has been used)."""
        with self.db.read() as conn:
            return bool(conn.execute("SELECT EXISTS (SELECT 1 FROM runs) OR EXISTS (SELECT 1 FROM audit)").fetchone()[0])

    def approvals_in_flight(self) -> int:
        """Runs ``executing`` whose approval this home signed (an ``approve`` row in the audit):
        their signatures need the approval key that made them."""
        with self.db.read() as conn:
            return conn.execute(
                "SELECT COUNT(*) FROM runs WHERE status = 'executing' AND EXISTS "
                "(SELECT 1 FROM audit WHERE audit.run_id = runs.run_id AND audit.decision = 'approve')"
            ).fetchone()[0]

    def exists(self, run_id: str) -> bool:
        """True when a row for ``run_id`` exists (corrupt or not)."""
        with self.db.read() as conn:
            return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

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
        """One page of the queue, read from indexed columns only (keyset pagination).

        ``status`` None lists every status. ``search`` matches ticket, order, customer or run ID
        (substring, case-insensitive, NFC). ``sort`` is a name of :data:`SORTS`; by default waiting
        runs come oldest first (``age``) and others newest first (``updated``). ``after`` is the
        cursor of the last row of the previous page: that row itself, or ``row.cursor(sort)``
        (its sort key and run ID); the page starts just after it. At most ``limit`` rows.
        ``max_role_rank`` keeps only runs with a proposal whose role needed ranks at most that
        (``role_rank`` between 0 and it, an indexed column) and a readable checkpoint (the app's
        "mine" filter).

        Raises:
            ResolverError: an unknown sort (the sentence lists the sorts).
        """
        if isinstance(after, RunSummary):
            after = after.cursor(sort or ("age" if status == "waiting_approval" else "updated"))
        sql, params = self._page_sql(_SUMMARY, status, search, sort, after, max_role_rank)
        with self.db.read() as conn:
            conn.create_function(_CASEFOLD, 1, _casefold, deterministic=True)
            rows = conn.execute(sql, (*params, limit)).fetchall()
        return [self._summary(r) for r in rows]

    def listed(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: tuple[Any, str] | None = None,
        limit: int = PAGE_SIZE,
    ) -> list[tuple[str, str, str, int, Any]]:
        """The rows ``resolver runs`` prints, as tuples ``(run_id, status, updated_at, state_ok,
        sort key)``, in the order and pages of :meth:`page` with the same arguments
        (the printed columns only, no :class:`RunSummary` per run). ``(sort key,
        run_id)`` of the last row is the cursor ``after`` of the next page. At most ``limit``
        rows. This SQLite store's own read for :mod:`core.api.listing`, not part of the contract.

        Raises:
            ResolverError: an unknown sort (the sentence lists the sorts).
        """
        column = SORTS.get(sort or ("age" if status == "waiting_approval" else "updated"), ("run_id", True))[0]
        sql, params = self._page_sql(f"run_id, status, updated_at, state_ok, {column}", status, search, sort, after, None)
        with self.db.read() as conn:
            conn.create_function(_CASEFOLD, 1, _casefold, deterministic=True)
            return conn.execute(sql, (*params, limit)).fetchall()

    @staticmethod
    def _page_sql(
        select: str,
        status: str | None,
        search: str | None,
        sort: str | None,
        after: tuple[Any, str] | None,
        max_role_rank: int | None,
    ) -> tuple[str, list[Any]]:
        """The SQL of one page of :meth:`page` selecting ``select``, with its parameters but the
        last (the limit). Raises ResolverError for an unknown sort."""
        search = nfc(search)  # a decomposed "García" finds the stored one
        sort, column, ascending = sort_order(status, sort)
        where: list[str] = []
        params: list[Any] = []
        if status:
            where.append("status = ?")
            params.append(status)
        if search and len(search.strip()) >= 3:  # the trigram index: any substring of 3 characters or more
            where.append("rowid IN (SELECT rowid FROM runs_search WHERE runs_search MATCH ?)")
            params.append('"' + search.strip().replace('"', '""') + '"')
        elif search:  # one or two characters: too short for trigrams, a scan in the order's index
            # LIKE folds ASCII only ("Í" would miss "García"): both sides are folded by Python's
            # Unicode casefold, as the trigram index folds.
            folded = search.casefold()
            like = "%" + folded.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            columns = ("task_id", "order_id", "customer", "run_id")
            where.append("(" + " OR ".join(f"{_CASEFOLD}({col}) LIKE ? ESCAPE '\\'" for col in columns) + ")")
            params.extend([like] * 4)
        if max_role_rank is not None:
            # "+role_rank": filter while walking the sort's index (status, sort column, run_id), so
            # a page stops after ``limit`` matches; a range on (status, role_rank) would sort every
            # waiting run in a temporary B-tree first. The role sort walks (status, role_rank) itself.
            where.append("+role_rank BETWEEN 0 AND ? AND state_ok = 1")
            params.append(max_role_rank)
        if after is not None:
            key, last_id = after
            where.append(f"({column}, run_id) {'>' if ascending else '<'} (?, ?)")
            params.extend([key, last_id])
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        direction = "ASC" if ascending else "DESC"
        return f"SELECT {select} FROM runs {clause} ORDER BY {column} {direction}, run_id {direction} LIMIT ?", params

    def counts(self) -> dict[str, int]:
        """Number of runs per status (statuses with no run are absent), from the counts table.

        A run whose checkpoint is flagged corrupt (``state_ok = 0``) is not counted under its
        status but under ``"corrupt"`` (a corrupt run is not waiting). The table keeps a
        ``corrupt:<status>`` row per status, kept by triggers like the others, so this stays a read
        of a few rows at any number of runs.
        """
        with self.db.read() as conn:
            rows = conn.execute("SELECT status, n FROM run_counts WHERE n > 0").fetchall()
        counts: dict[str, int] = {}
        corrupt: dict[str, int] = {}
        for status, n in rows:
            if status.startswith(CORRUPT_PREFIX):
                corrupt[status[len(CORRUPT_PREFIX) :]] = n
            else:
                counts[status] = n
        for status, n in corrupt.items():
            left = counts.get(status, 0) - n
            if left > 0:
                counts[status] = left
            else:
                counts.pop(status, None)
        if corrupt:
            counts["corrupt"] = sum(corrupt.values())
        return counts

    def summary(self, run_id: str) -> RunSummary:
        """The summary row of one run. Raises RunNotFound."""
        with self.db.read() as conn:
            row = conn.execute(f"SELECT {_SUMMARY} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        return self._summary(row)

    def runs_of_task(self, task_id: str) -> list[RunSummary]:
        """Every run of one ticket, oldest first."""
        with self.db.read() as conn:
            rows = conn.execute(
                f"SELECT {_SUMMARY} FROM runs WHERE task_id = ? ORDER BY created_ts, run_id", (task_id,)
            ).fetchall()
        return [self._summary(r) for r in rows]

    def latest(self, task_id: str) -> TaskState | None:
        """The most recently created run of ``task_id``, loaded; None if the ticket has none."""
        with self.db.read() as conn:
            row = conn.execute(
                "SELECT run_id FROM runs WHERE task_id = ? ORDER BY created_ts DESC, rowid DESC LIMIT 1", (task_id,)
            ).fetchone()
        return self.load(row[0]) if row else None

    def run_ids(self, prefix: str) -> list[str]:
        """Run IDs starting with ``prefix`` (for numbering new runs)."""
        with self.db.read() as conn:
            return [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE run_id LIKE ?", (prefix + "%",))]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's trace (its events' rows), in order:
        ``{"seq", "at" (ISO 8601), "kind", "message", "data"}``. Raises RunNotFound."""
        if not self.exists(run_id):
            raise RunNotFound(run_id)
        with self.db.read() as conn:
            rows = conn.execute(
                "SELECT extra, body, seq FROM entries WHERE run_id = ? AND list = 'events' ORDER BY n", (run_id,)
            ).fetchall()
        return event_dicts(run_id, rows)

    def audit(self, run_id: str | None = None, *, name: str | None = None) -> list[dict[str, Any]]:
        """Rows of the audit table (oldest first), for one run or all, and with ``name`` only one
        approver's: ``{"run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid"}``."""
        sql = "SELECT run_id, decision, role, name, digest, at, detail, run_uid FROM audit"
        params: tuple = ()
        if run_id:
            sql += " WHERE run_id = ?"
            params = (run_id,)
        if name is not None:
            sql += (" AND" if run_id else " WHERE") + " name = ?"
            params = (*params, name)
        with self.db.read() as conn:
            rows = conn.execute(sql + " ORDER BY id", params).fetchall()
        keys = ("run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    # -- housekeeping ---------------------------------------------------------------------------

    def backup(self, target: Path) -> None:
        """A consistent copy of ``runs.sqlite`` into the new file ``target`` (mode 0600) by
        SQLite's online backup API, while others write. Raises ResolverError with one sentence."""

        online_backup(self.path, target, f"Cannot copy {self.path.name} for the backup: {{exc}}. Nothing was written.")
        target.chmod(0o600)

    def scrubbed(self, work: Callable[[], object]) -> None:
        """Run ``work`` (deletes through this store) so that what it deletes is overwritten in the
        file and gone from the write-ahead log (:func:`core.stores.sqlite.files.scrub`)."""

        scrub(self.db, lambda _conn: work())

    def end_thread(self) -> None:
        """Close this thread's connection (a heartbeat thread about to end)."""
        self.db.close()

    def overwrite_checkpoint(self, run_id: str, change: Callable[[str], str]) -> None:
        """Replace the stored checkpoint text of ``run_id`` (its header, JSON) by ``change(text)``
        as a damaged disk or an older release would have left it (the lesson's exercises: a cut
        JSON, a schema-1 state); the next load reads it as it reads any stored checkpoint.
        Raises RunNotFound."""
        with self.db.immediate() as conn:
            row = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (change(row[0]), run_id))

    # -- leases ---------------------------------------------------------------------------------

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float = 60.0) -> Lease:
        """Take the run's lease for ``ttl_s`` seconds.

        A lease held by someone else is taken over only when it has expired by the clock or its
        holder is a process on this host that no longer exists (a crash).

        Raises:
            LeaseHeld: another live executor holds it (the message names the holder).
            RunNotFound: no such run.
        """
        now = self.clock.now()
        expires = now + timedelta(seconds=ttl_s)
        with self.db.immediate() as conn:
            self._take_lease(conn, run_id, owner, now, expires)
        return Lease(owner, expires)

    def claim(self, run_id: str, owner: str, ttl_s: float = 60.0) -> TaskState:
        """Take the run's lease (as :meth:`acquire_lease`) and load its checkpoint, in one
        transaction: the executor's start. Raises LeaseHeld, RunNotFound, CorruptCheckpoint."""
        now = self.clock.now()
        with self.db.immediate() as conn:
            self._take_lease(conn, run_id, owner, now, now + timedelta(seconds=ttl_s))
            parts = self._read(conn, run_id)
        assert parts is not None
        try:
            return self._build(run_id, parts)
        except ResolverError:  # a checkpoint that cannot be read: give the lease back at once
            self.release_lease(run_id, owner)
            raise

    @staticmethod
    def _take_lease(conn: sqlite3.Connection, run_id: str, owner: str, now: datetime, expires: datetime) -> None:
        row = conn.execute("SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        held = lease_held_by_other(run_id, row[0], row[1], owner, now)
        if held is not None:
            raise held
        conn.execute("UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?", (owner, iso(expires), run_id))

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Extend ``owner``'s lease to now + ``ttl_s`` seconds without touching the checkpoint
        (the executor's heartbeat). False when ``owner`` no longer holds it."""
        until = iso(self.clock.now() + timedelta(seconds=ttl_s))
        with self.db.immediate() as conn:
            return (
                conn.execute(
                    "UPDATE runs SET lease_expires = ? WHERE run_id = ? AND lease_owner = ?", (until, run_id, owner)
                ).rowcount
                == 1
            )

    def clear_dead_lease(self, run_id: str) -> bool:
        """Remove a lease whose holder is gone (expired by the clock, or a process on this host
        that no longer exists), as a resume does when it finds a run final. True if one was
        removed; a live holder's lease is left alone."""
        now = self.clock.now()
        with self.db.immediate() as conn:
            row = conn.execute("SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None or (row[0] is None and row[1] is None):
                return False
            if lease_held_by_other(run_id, row[0], row[1], "", now) is not None:
                return False
            conn.execute("UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = ?", (run_id,))
            return True

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease back if ``owner`` still holds it."""
        with self.db.immediate() as conn:
            conn.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = ? AND lease_owner = ?",
                (run_id, owner),
            )

    def expire_lease(self, run_id: str) -> None:
        """Mark the run's lease as expired (a simulated crash ends its process this way)."""
        with self.db.immediate() as conn:
            conn.execute(
                "UPDATE runs SET lease_expires = ? WHERE run_id = ?", (iso(self.clock.now() - timedelta(seconds=1)), run_id)
            )

    # -- the journal of model calls: core.stores.common.ModelCallJournal ---------------------------

    def _journal_write(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.immediate()

    def _journal_read(self) -> AbstractContextManager[sqlite3.Connection]:
        return self.db.read()

    def _journal_sealer(self) -> functools.partial[str]:
        """:func:`core.stores.common.journal_seal` under this home's key. Raises ResolverError
        (one sentence) for a store opened without ``journal_key``: nothing is written or sent."""
        if self._journal_key_of is None:
            raise self._unkeyed()
        return functools.partial(journal_seal, self._sealing_key(self.approvals_in_flight))

    def _journal_verdicts(self, conn: sqlite3.Connection, rows: Sequence[Sequence[Any]]) -> list[str | None] | None:
        """Each row's seal checked under this home's key (:func:`core.stores.common.seal_verdict`);
        None without ``journal_key``."""
        if self._journal_key_of is None:
            return None
        key = self._sealing_key(self.approvals_in_flight)
        return [seal_verdict(key, r) for r in rows]

    # -- reset ----------------------------------------------------------------------------------

    def delete(self, run_id: str, audit: dict[str, Any] | None = None) -> None:
        """Delete one run and its rows (the audit table keeps its rows), its ``lapse`` events and
        its marks among them (:mod:`core.stores.events`: a later run of this ID would
        take them for its own), with ``audit`` appended as the audit row that records it, in the
        same transaction. Raises RunNotFound."""
        with self.db.immediate() as conn:
            if conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount == 0:
                raise RunNotFound(run_id)
            conn.execute("DELETE FROM entries WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM model_calls WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM queue_events WHERE kind = 'lapse' AND run_id = ?", (run_id,))
            conn.execute("DELETE FROM run_marks WHERE run_id = ?", (run_id,))
            if audit is not None:
                auditchain.append(conn, run_id, audit)

    def reset(self, audit: Callable[[list[str]], dict[str, Any]] | None = None) -> int:
        """Delete every saved run and its rows, every ``lapse`` event and every mark among them
        (the audit table and the other events are kept; see :meth:`delete`). Returns the count.
        ``audit``, given the deleted run IDs, makes the audit row that records the reset
        (``decision``, ``role``, ``name``, ``digest``, ``at``, ``detail``), appended in the same
        transaction under run ID ``*``."""
        with self.db.immediate() as conn:
            ids = [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY run_id")]
            conn.execute("DELETE FROM runs")
            conn.execute("DELETE FROM entries")
            conn.execute("DELETE FROM model_calls")
            conn.execute("DELETE FROM run_counts")
            conn.execute("DELETE FROM queue_events WHERE kind = 'lapse'")
            conn.execute("DELETE FROM run_marks")
            if audit is not None:
                auditchain.append(conn, "*", audit(ids))
        return len(ids)


APPLICATION_ID = 0x52534C56
"""SQLite ``application_id`` of a checkpoint store (``RSLV``); a file with another non-zero one is
not adopted. Stores of earlier releases have 0 and get it at their next migration."""

LISTED_SORT = "updated_ts"
"""The column of the sorts ``age`` and ``updated``: the default order of every listing."""

LISTING_INDEXES = ("idx_runs_listing_status", "idx_runs_listing_all")
"""The covering indexes of ``resolver runs`` and the queue's default sorts:
``(status, updated_ts, run_id)`` and ``(updated_ts, run_id)`` as the filter and the order,
then the other columns a printed line needs (``status``, ``updated_at``, ``state_ok``), so a
listing reads its lines from the index alone. Without them each line is a lookup in ``runs``,
and ``state_ok``, stored after the header's JSON, walks that row's overflow pages: 14,286
printed lines at 100,000 runs cost 37 ms of CPU warm, 14 ms from the covering index. They
replace the narrow indexes of the same order (:data:`_NARROW_INDEXES`), so a save updates as
many indexes as before."""

_LISTING_INDEXES = (
    "CREATE INDEX IF NOT EXISTS idx_runs_listing_status ON runs (status, updated_ts, run_id, updated_at, state_ok)",
    "CREATE INDEX IF NOT EXISTS idx_runs_listing_all ON runs (updated_ts, run_id, status, updated_at, state_ok)",
)
_NARROW_INDEXES = ("idx_runs_status_updated_ts_run_id", "idx_runs_updated_ts_run_id")

LONG_INDEX_BUILD_RUNS = 100_000
"""From how many runs building :data:`LISTING_INDEXES` at the upgrade to format 5 is said first
(about 36 s at 1,000,000 runs, so some 4 s here: below it the wait passes unnoticed)."""

LONG_INDEX_BUILD_LINE = "building the listing's indexes once; this can take a minute on a large home"
"""The line said on stderr before that build (a new user's trial: the first open of a 1M-run
home after the upgrade sat silent for 36 s)."""


def _say_long_build(line: str) -> None:
    """Say ``line`` on stderr at once (before the build it announces); the CLI and the app alike."""

    print(line, file=sys.stderr, flush=True)


TRIGGERS = frozenset(
    {
        "audit_no_update",
        "audit_no_delete",
        "runs_count_insert",
        "runs_count_delete",
        "runs_count_status",
        "runs_state_insert",
        "runs_state_update",
        "runs_search_insert",
        "runs_search_delete",
        "runs_search_update",
        "runs_corrupt_insert",
        "runs_corrupt_delete",
        "runs_corrupt_update",
        "audit_tip_insert",
    }
)
"""The store's triggers; any missing one is created again when a connection opens."""


_EMPTY_BUT_USED = (
    "The checkpoint store {path} {lost}, but this home has been used (its practice world or its approval "
    "key exists); its runs may have been lost. Nothing was changed. Restore "
    "runs.sqlite from a backup (`resolver restore`), or start afresh with `resolver reset --all`."
)


def _lost(path: Path) -> str:
    """How a lost store's file is lost, for :data:`_EMPTY_BUT_USED`: ``is missing`` or ``is empty``."""
    return "is empty" if path.is_file() else "is missing"


def _split_triggers(upsert: str) -> list[str]:
    """The counts and state-check triggers as single statements (executescript would commit an
    open transaction)."""
    return [
        f"CREATE TRIGGER IF NOT EXISTS runs_count_insert AFTER INSERT ON runs BEGIN {upsert} END",
        "CREATE TRIGGER IF NOT EXISTS runs_count_delete AFTER DELETE ON runs "
        "BEGIN UPDATE run_counts SET n = n - 1 WHERE status = OLD.status; END",
        "CREATE TRIGGER IF NOT EXISTS runs_count_status AFTER UPDATE OF status ON runs WHEN OLD.status IS NOT NEW.status "
        f"BEGIN UPDATE run_counts SET n = n - 1 WHERE status = OLD.status; {upsert} END",
        "CREATE TRIGGER IF NOT EXISTS runs_state_insert AFTER INSERT ON runs WHEN json_valid(NEW.state) = 0 "
        "BEGIN UPDATE runs SET state_ok = 0 WHERE rowid = NEW.rowid; END",
        "CREATE TRIGGER IF NOT EXISTS runs_state_update AFTER UPDATE OF state ON runs WHEN json_valid(NEW.state) = 0 "
        "BEGIN UPDATE runs SET state_ok = 0 WHERE rowid = NEW.rowid; END",
        *_CORRUPT_TRIGGERS,
    ]


CORRUPT_PREFIX = "corrupt:"
"""``run_counts`` keeps, beside each status's row, a ``corrupt:<status>`` row: how many runs of that
status have a checkpoint flagged corrupt (``state_ok = 0``). :meth:`CheckpointStore.counts`
subtracts them, so a corrupt run is never counted as waiting."""

_CORRUPT_UPSERT = (
    "INSERT INTO run_counts (status, n) SELECT 'corrupt:' || NEW.status, 1 WHERE NEW.state_ok = 0 "
    "ON CONFLICT(status) DO UPDATE SET n = n + 1;"
)
_CORRUPT_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS runs_corrupt_insert AFTER INSERT ON runs WHEN NEW.state_ok = 0 BEGIN {_CORRUPT_UPSERT} END",
    "CREATE TRIGGER IF NOT EXISTS runs_corrupt_delete AFTER DELETE ON runs WHEN OLD.state_ok = 0 "
    "BEGIN UPDATE run_counts SET n = n - 1 WHERE status = 'corrupt:' || OLD.status; END",
    "CREATE TRIGGER IF NOT EXISTS runs_corrupt_update AFTER UPDATE OF state_ok, status ON runs "
    "WHEN (OLD.state_ok = 0 OR NEW.state_ok = 0) AND (OLD.state_ok IS NOT NEW.state_ok OR OLD.status IS NOT NEW.status) "
    "BEGIN UPDATE run_counts SET n = n - 1 WHERE OLD.state_ok = 0 AND status = 'corrupt:' || OLD.status; "
    f"{_CORRUPT_UPSERT} END",
)
"""The triggers of the ``corrupt:<status>`` counts. A store made before them gets them
when a connection opens (:meth:`CheckpointStore._repair_triggers`), with the counts rebuilt."""

NEW_TRIGGERS = frozenset({"runs_corrupt_insert", "runs_corrupt_delete", "runs_corrupt_update", "audit_tip_insert"})
"""Triggers a store made by an earlier release lacks: created when it opens, without a repair note."""

_RECOUNT_CORRUPT = (
    "INSERT INTO run_counts (status, n) SELECT 'corrupt:' || status, COUNT(*) FROM runs WHERE state_ok = 0 GROUP BY status"
)


_CREATE_AUDIT_TIP = "CREATE TABLE IF NOT EXISTS audit_tip (only INTEGER PRIMARY KEY CHECK (only = 1), length INTEGER NOT NULL)"
_COUNT_AUDIT_TIP = "INSERT INTO audit_tip (only, length) SELECT 1, COUNT(*) FROM audit"
"""The one count of the audit the store makes: when ``audit_tip`` is made or its trigger was lost."""
_AUDIT_TIP_TRIGGER = (
    "CREATE TRIGGER IF NOT EXISTS audit_tip_insert AFTER INSERT ON audit "
    "BEGIN UPDATE audit_tip SET length = length + 1 WHERE only = 1; END"
)
"""Keeps ``audit_tip.length`` in the transaction of every audit insert, so the chain's length is never a count of the table."""


_CASEFOLD = "resolver_casefold"
"""The SQL name of :func:`_casefold` on a search's connection."""


def _casefold(value: Any) -> Any:
    """``str.casefold`` for SQL (Unicode case folding; ``None`` and numbers pass unchanged)."""
    return value.casefold() if isinstance(value, str) else value


_CREATE_SEARCH = (
    "CREATE VIRTUAL TABLE runs_search USING fts5(task_id, order_id, customer, run_id, "
    "content = 'runs', content_rowid = 'rowid', tokenize = 'trigram')"
)
"""The queue's search index: trigrams of ticket, order, customer and run ID (FTS5, external
content: it stores no second copy of the columns), kept by the triggers below."""

_SEARCH_COLUMNS = "task_id, order_id, customer, run_id"
_SEARCH_TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS runs_search_insert AFTER INSERT ON runs BEGIN "
    f"INSERT INTO runs_search (rowid, {_SEARCH_COLUMNS}) VALUES (NEW.rowid, NEW.task_id, NEW.order_id, NEW.customer, NEW.run_id); END",
    f"CREATE TRIGGER IF NOT EXISTS runs_search_delete AFTER DELETE ON runs BEGIN "
    f"INSERT INTO runs_search (runs_search, rowid, {_SEARCH_COLUMNS}) "
    f"VALUES ('delete', OLD.rowid, OLD.task_id, OLD.order_id, OLD.customer, OLD.run_id); END",
    f"CREATE TRIGGER IF NOT EXISTS runs_search_update AFTER UPDATE OF task_id, order_id, customer ON runs BEGIN "
    f"INSERT INTO runs_search (runs_search, rowid, {_SEARCH_COLUMNS}) "
    f"VALUES ('delete', OLD.rowid, OLD.task_id, OLD.order_id, OLD.customer, OLD.run_id); "
    f"INSERT INTO runs_search (rowid, {_SEARCH_COLUMNS}) VALUES (NEW.rowid, NEW.task_id, NEW.order_id, NEW.customer, NEW.run_id); END",
)
