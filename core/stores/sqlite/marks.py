"""``run_marks`` and ``queue_events`` in ``runs.sqlite``: the tables, the triggers that
write the events in the transaction of the write that makes them (:mod:`core.stores.events`), the
store-format step that brings them, and the SQLite side of :class:`core.stores.marks.RunMarksRows`."""

from __future__ import annotations

import sqlite3
from typing import Any

from core.stores.events import QueueEventRows
from core.stores.marks import RunMarksRows
from core.stores.sqlite import audit as auditchain

__all__ = ["EVENT_TRIGGERS", "MARKS_FORMAT", "REFRESH_FORMAT", "SqliteMarks", "add_run_marks"]

MARKS_FORMAT = 5
"""The store format (``PRAGMA user_version``) that brings ``run_marks`` and ``queue_events``
(format 4 brought the entries' checksums)."""

REFRESH_FORMAT = 6
"""The store format that makes a refreshed request a ``request`` event again (the trigger
``queue_event_refresh``): a refresh keeps the run's status, so format 5's status triggers wrote
nothing for it."""

CREATE_RUN_MARKS = (
    "CREATE TABLE IF NOT EXISTS run_marks (run_id TEXT PRIMARY KEY, run_uid TEXT, version INTEGER NOT NULL, "
    "claimed_by TEXT, claimed_role TEXT, claimed_at TEXT, claim_until TEXT, handed_to TEXT, handed_by TEXT, "
    "handed_at TEXT, handed_note TEXT, snoozed_by TEXT, snoozed_at TEXT, snooze_until TEXT)"
)

CREATE_QUEUE_EVENTS = (
    "CREATE TABLE IF NOT EXISTS queue_events (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, "
    "run_id TEXT NOT NULL, at TEXT NOT NULL, name TEXT, role TEXT, to_name TEXT, required_role TEXT, detail TEXT)",
    "CREATE UNIQUE INDEX IF NOT EXISTS queue_events_lapse ON queue_events (run_id, detail) WHERE kind = 'lapse'",
)

_STATUS_EVENT = (
    "INSERT INTO queue_events (kind, run_id, at, required_role) VALUES (CASE NEW.status WHEN 'waiting_approval' "
    "THEN 'request' ELSE 'handed_to_person' END, NEW.run_id, NEW.updated_at, NEW.required_role);"
)
_ROLE_OF = "(SELECT required_role FROM runs WHERE run_id = NEW.run_id)"
_CLAIM_EVENT = (
    "INSERT INTO queue_events (kind, run_id, at, name, role, required_role, detail) VALUES "
    f"('claim', NEW.run_id, NEW.claimed_at, NEW.claimed_by, NEW.claimed_role, {_ROLE_OF}, NEW.claim_until);"
)
_HANDOVER_EVENT = (
    "INSERT INTO queue_events (kind, run_id, at, name, to_name, required_role, detail) VALUES "
    f"('handover', NEW.run_id, NEW.handed_at, NEW.handed_by, NEW.handed_to, {_ROLE_OF}, NEW.handed_note);"
)
_WAITING_OR_PERSON = "NEW.status IN ('waiting_approval', 'handed_to_person')"

EVENT_TRIGGERS = {
    "queue_event_run_insert": f"AFTER INSERT ON runs WHEN {_WAITING_OR_PERSON} BEGIN {_STATUS_EVENT} END",
    "queue_event_run_status": (
        f"AFTER UPDATE OF status ON runs WHEN NEW.status != OLD.status AND {_WAITING_OR_PERSON} BEGIN {_STATUS_EVENT} END"
    ),
    "queue_event_refusal": (
        "AFTER INSERT ON audit WHEN NEW.decision LIKE 'refused%' BEGIN INSERT INTO queue_events "
        "(kind, run_id, at, name, role, required_role, detail) VALUES ('refusal', NEW.run_id, NEW.at, NEW.name, "
        f"NEW.role, {_ROLE_OF}, NEW.detail); END"
    ),
    "queue_event_claim_insert": f"AFTER INSERT ON run_marks WHEN NEW.claimed_at IS NOT NULL BEGIN {_CLAIM_EVENT} END",
    "queue_event_claim_update": (
        "AFTER UPDATE ON run_marks WHEN NEW.claimed_at IS NOT NULL AND NEW.claimed_at IS NOT OLD.claimed_at "
        f"BEGIN {_CLAIM_EVENT} END"
    ),
    "queue_event_handover_insert": f"AFTER INSERT ON run_marks WHEN NEW.handed_at IS NOT NULL BEGIN {_HANDOVER_EVENT} END",
    "queue_event_handover_update": (
        "AFTER UPDATE ON run_marks WHEN NEW.handed_at IS NOT NULL AND (NEW.handed_at IS NOT OLD.handed_at "
        f"OR NEW.handed_to IS NOT OLD.handed_to) BEGIN {_HANDOVER_EVENT} END"
    ),
    "queue_event_refresh": (  # format 6: a refreshed request (its audit row) is a new request event
        "AFTER INSERT ON audit WHEN NEW.decision = 'refresh' BEGIN INSERT INTO queue_events "
        "(kind, run_id, at, name, role, required_role, detail) VALUES ('request', NEW.run_id, NEW.at, NEW.name, "
        f"NEW.role, {_ROLE_OF}, NEW.digest); END"
    ),
}
"""The triggers that write ``queue_events`` (:mod:`core.stores.events`), by name."""


def add_run_marks(conn: sqlite3.Connection) -> None:
    """The steps to formats :data:`MARKS_FORMAT` and :data:`REFRESH_FORMAT`: create the empty
    ``run_marks`` and ``queue_events`` tables (a run saved before them has no marks and made no
    event) and the triggers that write the events (format 6 adds ``queue_event_refresh`` to a
    format-5 store's). Idempotent; runs inside the caller's transaction, after the
    ``runs`` and ``audit`` tables exist."""
    conn.execute(CREATE_RUN_MARKS)
    for statement in CREATE_QUEUE_EVENTS:
        conn.execute(statement)
    for name, body in EVENT_TRIGGERS.items():
        conn.execute(f"CREATE TRIGGER IF NOT EXISTS {name} {body}")


class SqliteMarks(RunMarksRows, QueueEventRows):
    """The SQLite store's marks: its ``BEGIN IMMEDIATE`` transaction (``_journal_write``) and
    its audit append (:func:`core.stores.sqlite.audit.append`)."""

    def _marks_audit(self, conn: Any, run_id: str, audit: dict[str, Any]) -> None:
        auditchain.append(conn, run_id, audit)
