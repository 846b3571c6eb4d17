"""``run_marks`` in the team store (issue 24): migration 10's table and the PostgreSQL side of
:class:`core.stores.marks.RunMarksRows`."""

from __future__ import annotations

from typing import Any

from core.stores.marks import RunMarksRows
from core.stores.postgres import audit as auditchain

__all__ = ["RUN_MARKS", "PostgresMarks"]

_C = 'text COLLATE "C"'

RUN_MARKS = (
    f"CREATE TABLE run_marks (run_id {_C} PRIMARY KEY, run_uid {_C}, version bigint NOT NULL, claimed_by {_C}, "
    f"claimed_role {_C}, claimed_at {_C}, claim_until {_C}, handed_to {_C}, handed_by {_C}, handed_at {_C}, "
    f"handed_note {_C}, snoozed_by {_C}, snoozed_at {_C}, snooze_until {_C})",
)
"""Migration 10: the marks of runs (claim, hand-over, snooze), one row per marked run."""


class PostgresMarks(RunMarksRows):
    """The team store's marks: its transaction (``_journal_write``, a ``?``-SQL connection) and
    its audit append under the audit head's lock (:func:`core.stores.postgres.audit.append`)."""

    def _marks_audit(self, conn: Any, run_id: str, audit: dict[str, Any]) -> None:
        auditchain.append(conn.conn, run_id, audit)
