"""``run_marks`` in ``runs.sqlite`` (issue 24): the table, the store-format step that brings it,
and the SQLite side of :class:`core.stores.marks.RunMarksRows`."""

from __future__ import annotations

import sqlite3
from typing import Any

from core.stores.marks import RunMarksRows
from core.stores.sqlite import audit as auditchain

__all__ = ["MARKS_FORMAT", "SqliteMarks", "add_run_marks"]

MARKS_FORMAT = 4
"""The store format (``PRAGMA user_version``) that brings ``run_marks``. Another branch may take
4 first: the step below is self-contained, so renumbering it is changing this constant."""

CREATE_RUN_MARKS = (
    "CREATE TABLE IF NOT EXISTS run_marks (run_id TEXT PRIMARY KEY, run_uid TEXT, version INTEGER NOT NULL, "
    "claimed_by TEXT, claimed_role TEXT, claimed_at TEXT, claim_until TEXT, handed_to TEXT, handed_by TEXT, "
    "handed_at TEXT, handed_note TEXT, snoozed_by TEXT, snoozed_at TEXT, snooze_until TEXT)"
)


def add_run_marks(conn: sqlite3.Connection) -> None:
    """The step to format :data:`MARKS_FORMAT`: create the empty ``run_marks`` table (a run
    saved before it has no marks). Idempotent; runs inside the caller's transaction."""
    conn.execute(CREATE_RUN_MARKS)


class SqliteMarks(RunMarksRows):
    """The SQLite store's marks: its ``BEGIN IMMEDIATE`` transaction (``_journal_write``) and
    its audit append (:func:`core.stores.sqlite.audit.append`)."""

    def _marks_audit(self, conn: Any, run_id: str, audit: dict[str, Any]) -> None:
        auditchain.append(conn, run_id, audit)
