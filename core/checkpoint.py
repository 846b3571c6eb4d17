"""The checkpoint store: one SQLite row per run, saved after every step and status change.

``runs.sqlite`` in the home folder holds:

- ``runs``: one row per run, summary columns for the queue (run_id, task_id, variant, model,
  status, created/updated time, version, customer, order, total amount in CAD, required role,
  actions summary, lease owner and expiry) beside the whole ``TaskState`` as JSON.
- ``events``: append-only trace (run_id, seq, at, kind, message, data), written in the same
  transaction as each save.
- ``audit``: append-only record of every approval decision (see :mod:`core.approval`);
  triggers refuse any UPDATE or DELETE of its rows.

Tables and indexes are made with sqlite-utils; saves use plain ``sqlite3`` inside
``BEGIN IMMEDIATE`` with a compare-and-set on ``version`` so a writer holding a stale copy gets
:class:`~core.errors.StaleCheckpoint` instead of overwriting newer work. Every connection runs
in WAL mode with a busy timeout; a lock held past it raises :class:`~core.errors.StoreBusy`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import sqlite_utils
from pydantic import ValidationError

from core.clock import Clock, SystemClock, iso, parse_time
from core.data import customer_names
from core.errors import (
    CorruptCheckpoint,
    LeaseHeld,
    ResolverError,
    RunNotFound,
    StaleCheckpoint,
    StoreBusy,
)
from core.policy import action_value, proposal_role
from core.state import TaskState, action_short, migrate

BUSY_TIMEOUT_S = 5.0
"""Seconds a connection waits for another process's lock before StoreBusy."""

PAGE_SIZE = 200
"""Rows per page for :meth:`CheckpointStore.list`."""


KILL_ENV = "RESOLVER_KILL_AT"
"""Crash-test hook: ``save:N``, ``write:N`` or ``step:N`` kills this process with SIGKILL right
after the N-th checkpoint save, executor write or loop step of the process."""

_crash_counts: dict[str, int] = {}


def crash_point(kind: str) -> None:
    """Kill this process with SIGKILL at the point ``RESOLVER_KILL_AT`` names (crash tests only)."""
    target = os.environ.get(KILL_ENV)
    if not target:
        return
    _crash_counts[kind] = _crash_counts.get(kind, 0) + 1
    if target == f"{kind}:{_crash_counts[kind]}":
        os.kill(os.getpid(), signal.SIGKILL)


@dataclass(frozen=True)
class RunSummary:
    """One row of the queue, read from summary columns only (no state is parsed).

    ``total_amount`` is CAD as a decimal string; ``updated_at`` ISO 8601 with offset;
    ``state_ok`` is False when the stored JSON is not even valid JSON (a corrupt row).
    """

    run_id: str
    task_id: str
    variant: str
    model: str
    status: str
    created_at: str
    updated_at: str
    version: int
    customer: str
    order_id: str
    total_amount: str
    required_role: str
    actions: str
    lease_owner: str | None
    lease_expires: str | None
    state_ok: bool = True


@dataclass(frozen=True)
class Lease:
    """Who holds a run's lease and until when."""

    owner: str
    expires: datetime


def _ts(value: datetime) -> float:
    return value.timestamp()


def lease_owner_name(label: str = "resolver") -> str:
    """A lease owner that names the process: ``label@host:pid:token``."""
    return f"{label}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _holder_alive(owner: str) -> bool:
    """False when ``owner`` is a process on this host that no longer exists (a crash)."""
    try:
        where = owner.rsplit("@", 1)[1]
        host, pid, _token = where.split(":")
    except (IndexError, ValueError):
        return True
    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def summary_columns(state: TaskState) -> dict[str, Any]:
    """The queue's columns for one state: customer name, order, total CAD, role, actions."""
    customers = customer_names()
    actions = state.proposal.actions if state.proposal else []
    total = sum((action_value(a) for a in actions), Decimal("0.00"))
    return {
        "run_id": state.run_id,
        "task_id": state.task_id,
        "variant": state.variant,
        "model": state.model,
        "status": state.status,
        "created_at": iso(state.created_at),
        "updated_at": iso(state.updated_at),
        "updated_ts": _ts(state.updated_at),
        "customer": customers.get(state.customer_id, state.customer_id),
        "order_id": state.order_id,
        "total_amount": f"{total:.2f}" if actions else "",
        "required_role": proposal_role(actions) if actions else "",
        "actions": "; ".join(action_short(a).split("  ")[0] for a in actions),
    }


class CheckpointStore:
    """SQLite checkpoint store at ``path`` (``runs.sqlite`` in the home folder).

    Args:
        path: the database file; created with its tables on first use.
        clock: stamps ``updated_at`` at every save (default: real time).
    """

    def __init__(self, path: Path | str, clock: Clock | None = None) -> None:
        self.path = Path(path)
        self.clock = clock or SystemClock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            self._ensure_schema(conn)

    # -- connections ----------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error as exc:
            raise ResolverError(f"Cannot open the checkpoint store {self.path}: {exc}.") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            yield conn
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreBusy(
                    f"The checkpoint store {self.path} stayed locked by another process for "
                    f"{BUSY_TIMEOUT_S:.0f} s; try again."
                ) from exc
            raise ResolverError(f"The checkpoint store {self.path} failed: {exc}.") from exc
        except sqlite3.DatabaseError as exc:
            raise ResolverError(f"The checkpoint store {self.path} is not a usable database: {exc}.") from exc
        finally:
            conn.close()

    @contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            else:
                conn.execute("COMMIT")

    @staticmethod
    def _ensure_schema(conn: sqlite3.Connection) -> None:
        db = sqlite_utils.Database(conn)
        if "runs" not in db.table_names():
            db["runs"].create(
                {
                    "run_id": str, "task_id": str, "variant": str, "model": str, "status": str,
                    "created_at": str, "updated_at": str, "updated_ts": float, "version": int,
                    "customer": str, "order_id": str, "total_amount": str, "required_role": str,
                    "actions": str, "lease_owner": str, "lease_expires": str, "state": str,
                },
                pk="run_id",
                not_null={"task_id", "status", "updated_at", "version", "state"},
            )
            db["runs"].create_index(["status", "updated_ts"], if_not_exists=True)
            db["runs"].create_index(["task_id", "updated_ts"], if_not_exists=True)
        if "events" not in db.table_names():
            db["events"].create(
                {"run_id": str, "seq": int, "at": str, "kind": str, "message": str, "data": str},
                pk=("run_id", "seq"),
            )
        if "audit" not in db.table_names():
            db["audit"].create(
                {"id": int, "run_id": str, "decision": str, "role": str, "name": str, "digest": str,
                 "at": str, "detail": str},
                pk="id",
            )
            db["audit"].create_index(["run_id"], if_not_exists=True)
            conn.execute(
                "CREATE TRIGGER IF NOT EXISTS audit_no_update BEFORE UPDATE ON audit "
                "BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
            )
            conn.execute(
                "CREATE TRIGGER IF NOT EXISTS audit_no_delete BEFORE DELETE ON audit "
                "BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END"
            )

    # -- save and load --------------------------------------------------------------------------

    def save(self, state: TaskState, *, audit: dict[str, Any] | None = None) -> TaskState:
        """Write ``state`` as its run's checkpoint, stamping ``updated_at`` from the clock.

        Compare-and-set: the row must still have ``state.version`` (0 for a new run); the saved
        row gets ``version + 1``, which is written back into ``state``. New events of the run's
        log, and ``audit`` if given, are appended in the same transaction.

        Raises:
            StaleCheckpoint: someone saved the run since this copy was loaded.
            StoreBusy: the database stayed locked.
        """
        state.updated_at = self.clock.now()
        new_version = state.version + 1
        with self._immediate() as conn:
            row = conn.execute("SELECT version FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()
            on_disk = row[0] if row else 0
            if on_disk != state.version:
                raise StaleCheckpoint(
                    f"Run {state.run_id} changed since this copy was read (version {on_disk} saved, "
                    f"{state.version} in hand); reload it and try again."
                )
            payload = state.model_copy(update={"version": new_version}).model_dump_json()
            cols = summary_columns(state) | {"version": new_version, "state": payload}
            names = ", ".join(cols)
            marks = ", ".join("?" for _ in cols)
            if row is None:
                conn.execute(f"INSERT INTO runs ({names}) VALUES ({marks})", tuple(cols.values()))
            else:
                sets = ", ".join(f"{k} = ?" for k in cols if k != "run_id")
                conn.execute(
                    f"UPDATE runs SET {sets} WHERE run_id = ? AND version = ?",
                    (*[v for k, v in cols.items() if k != "run_id"], state.run_id, state.version),
                )
            last = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM events WHERE run_id = ?", (state.run_id,)).fetchone()[0]
            conn.executemany(
                "INSERT INTO events (run_id, seq, at, kind, message, data) VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (state.run_id, e.seq, iso(e.at), e.kind, e.message, json.dumps(e.data, default=str))
                    for e in state.events
                    if e.seq > last
                ],
            )
            if audit is not None:
                conn.execute(
                    "INSERT INTO audit (run_id, decision, role, name, digest, at, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (state.run_id, audit["decision"], audit["role"], audit["name"], audit["digest"],
                     audit["at"], audit.get("detail", "")),
                )
        state.version = new_version
        crash_point("save")
        return state

    def load(self, run_id: str) -> TaskState:
        """Load and validate a run's checkpoint, migrating older schema versions.

        Raises:
            RunNotFound: no such run (the message says to run ``resolver runs``).
            CorruptCheckpoint: the JSON is broken or does not match ``TaskState``.
            UnsupportedSchemaVersion: a schema version this code cannot migrate.
        """
        with self._connect() as conn:
            row = conn.execute("SELECT state, version FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        return self._parse(run_id, row[0], row[1])

    @staticmethod
    def _parse(run_id: str, text: str, version: int) -> TaskState:
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise ValueError("the checkpoint is not a JSON object")
        except (ValueError, TypeError) as exc:
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} is corrupt ({exc}); nothing was changed. "
                f"Delete it with `resolver reset --run {run_id}` or restore runs.sqlite from a backup."
            ) from exc
        raw = migrate(raw)
        try:
            state = TaskState.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise CorruptCheckpoint(
                f"The checkpoint of run {run_id} does not match the TaskState schema "
                f"({where}: {first['msg']}); nothing was changed."
            ) from exc
        state.version = version
        return state

    def exists(self, run_id: str) -> bool:
        """True when a row for ``run_id`` exists (corrupt or not)."""
        with self._connect() as conn:
            return conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    # -- listing --------------------------------------------------------------------------------

    _SUMMARY = (
        "run_id, task_id, variant, model, status, created_at, updated_at, version, customer, "
        "order_id, total_amount, required_role, actions, lease_owner, lease_expires"
    )

    def list(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        limit: int = PAGE_SIZE,
        offset: int = 0,
    ) -> list[RunSummary]:
        """One page of run summaries, from summary columns only.

        ``status`` None lists every status. ``search`` matches ticket, order, customer or run ID
        (substring, case-insensitive). Waiting runs sort oldest first; others newest first.
        Each row's ``state_ok`` checks only that the stored JSON is valid JSON (for this page).
        """
        where, params = [], []
        if status:
            where.append("status = ?")
            params.append(status)
        if search:
            like = "%" + search.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            columns = ("task_id", "order_id", "customer", "run_id")
            where.append("(" + " OR ".join(f"{col} LIKE ? ESCAPE '\\'" for col in columns) + ")")
            params.extend([like] * 4)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        order = "ASC" if status == "waiting_approval" else "DESC"
        sql = (
            f"SELECT {self._SUMMARY}, json_valid(state) FROM runs {clause} "
            f"ORDER BY updated_ts {order}, run_id LIMIT ? OFFSET ?"
        )
        with self._connect() as conn:
            rows = conn.execute(sql, (*params, limit, offset)).fetchall()
        return [RunSummary(*row[:-1], state_ok=bool(row[-1])) for row in rows]

    def counts(self) -> dict[str, int]:
        """Number of runs per status (statuses with no run are absent)."""
        with self._connect() as conn:
            return dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall())

    def summary(self, run_id: str) -> RunSummary:
        """The summary row of one run. Raises RunNotFound."""
        with self._connect() as conn:
            row = conn.execute(
                f"SELECT {self._SUMMARY}, json_valid(state) FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None:
            raise RunNotFound(run_id)
        return RunSummary(*row[:-1], state_ok=bool(row[-1]))

    def runs_of_task(self, task_id: str) -> list[RunSummary]:
        """Every run of one ticket, oldest first."""
        with self._connect() as conn:
            rows = conn.execute(
                f"SELECT {self._SUMMARY}, json_valid(state) FROM runs WHERE task_id = ? ORDER BY created_at, run_id",
                (task_id,),
            ).fetchall()
        return [RunSummary(*row[:-1], state_ok=bool(row[-1])) for row in rows]

    def latest(self, task_id: str) -> TaskState | None:
        """The most recently created run of ``task_id``, loaded; None if the ticket has none."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT run_id FROM runs WHERE task_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1", (task_id,)
            ).fetchone()
        return self.load(row[0]) if row else None

    def run_ids(self, prefix: str) -> list[str]:
        """Run IDs starting with ``prefix`` (for numbering new runs)."""
        with self._connect() as conn:
            return [r[0] for r in conn.execute("SELECT run_id FROM runs WHERE run_id LIKE ?", (prefix + "%",))]

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's trace from the events table, in order. Raises RunNotFound."""
        if not self.exists(run_id):
            raise RunNotFound(run_id)
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT seq, at, kind, message, data FROM events WHERE run_id = ? ORDER BY seq", (run_id,)
            ).fetchall()
        return [{"seq": s, "at": a, "kind": k, "message": m, "data": json.loads(d or "{}")} for s, a, k, m, d in rows]

    def audit(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Rows of the audit table (oldest first), for one run or all."""
        sql = "SELECT run_id, decision, role, name, digest, at, detail FROM audit"
        params: tuple = ()
        if run_id:
            sql += " WHERE run_id = ?"
            params = (run_id,)
        with self._connect() as conn:
            rows = conn.execute(sql + " ORDER BY id", params).fetchall()
        keys = ("run_id", "decision", "role", "name", "digest", "at", "detail")
        return [dict(zip(keys, r, strict=False)) for r in rows]

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
        with self._immediate() as conn:
            row = conn.execute("SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFound(run_id)
            holder, until = row
            if holder and holder != owner and until and parse_time(until) > now and _holder_alive(holder):
                raise LeaseHeld(
                    f"Run {run_id} is being executed by {holder.split(':')[0]} (lease until {until}); "
                    "wait for it to finish or for the lease to expire."
                )
            conn.execute(
                "UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?", (owner, iso(expires), run_id)
            )
        return Lease(owner, expires)

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease back if ``owner`` still holds it."""
        with self._immediate() as conn:
            conn.execute(
                "UPDATE runs SET lease_owner = NULL, lease_expires = NULL WHERE run_id = ? AND lease_owner = ?",
                (run_id, owner),
            )

    def expire_lease(self, run_id: str) -> None:
        """Mark the run's lease as expired (a simulated crash ends its process this way)."""
        with self._immediate() as conn:
            conn.execute("UPDATE runs SET lease_expires = ? WHERE run_id = ?", (iso(self.clock.now() - timedelta(seconds=1)), run_id))

    # -- reset ----------------------------------------------------------------------------------

    def delete(self, run_id: str) -> None:
        """Delete one run and its events (the audit table keeps its rows). Raises RunNotFound."""
        with self._immediate() as conn:
            if conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,)).rowcount == 0:
                raise RunNotFound(run_id)
            conn.execute("DELETE FROM events WHERE run_id = ?", (run_id,))

    def reset(self) -> int:
        """Delete every saved run and its events (the audit table is kept). Returns the count."""
        with self._immediate() as conn:
            n = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            conn.execute("DELETE FROM runs")
            conn.execute("DELETE FROM events")
        return n
