"""The queue's events: what a watcher tells people, the SQL both back-ends share.

``queue_events`` holds one row per event, with an ``id`` a watcher keeps its place by and a
notify command drops a repeat by. The rows are written **by triggers**, so each is in the same
transaction as the write that makes it, whichever code path saves:

- ``request``: a run's status becomes ``waiting_approval`` (a new approval request), or a waiting
  run's request is refreshed (its audit row ``refresh``: SQLite format 6, PostgreSQL migration 13;
  ``name`` and ``role`` say who, ``detail`` is the new digest);
- ``handed_to_person``: a run's status becomes ``handed_to_person`` (a rejection, a refusal at
  the write, a stop);
- ``claim`` and ``handover``: a run's marks get a new claim or a new hand-over (``run_marks``);
- ``refusal``: an audit row whose decision starts with ``refused`` (a lapse at execution, a
  precondition, a world that changed, an unauthorized approval);
- ``lapse``: a waiting request whose evidence became too old to approve with no one acting,
  written once per request (run and digest) by :meth:`QueueEventRows.record_lapse`, a
  compare-and-set on a unique index, by the watcher or a read of the waiting queue
  (:func:`core.engine.watch.sweep_lapses`), only while the run is there and waiting. A run's lapses go
  with the run when it is deleted (``reset``, ``reset --run``, ``prune``: SQLite in the delete's
  transaction, PostgreSQL by migration 16's trigger on ``runs``), so a later run given the same
  ID and proposing the same digest (the lesson repeated after ``resolver reset``) lapses again.
  The other kinds stay: they are what happened, and a watcher may not have delivered them yet.

(Not ``events``: release 0.1.0's store had a table of that name, which its migration drops.)

On SQLite ``id`` is in commit order (writers take turns). On PostgreSQL it comes from an
identity sequence, taken before commit, so a row may become visible after a higher one: a
watcher reads again a window behind its place and drops the IDs it has seen (:mod:`core.engine.watch`).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from core.stores.chunks import rows_in

__all__ = ["EVENT_COLUMNS", "EVENT_KINDS", "QueueEventRows"]

EVENT_KINDS = ("request", "claim", "handover", "lapse", "refusal", "handed_to_person")
"""The kinds of event ``resolver watch`` tells of (README "Run a team queue")."""

EVENT_COLUMNS = ("id", "kind", "run_id", "at", "name", "role", "to_name", "required_role", "detail")
"""The columns of ``queue_events``: the event's ID, kind, run, time (ISO 8601 with offset), who
made it and their role (None for the system's), to whom (a hand-over), the role the run's
proposal needs (for "a request for my role"), and ``detail`` (a claim's end, a note, a refusal's
sentence, a lapse's digest)."""

_SELECT = f"SELECT {', '.join(EVENT_COLUMNS)} FROM queue_events"


class QueueEventRows:
    """``queue_events`` over ``?`` SQL, for both back-ends (the ``_journal_write`` and
    ``_journal_read`` transactions of :class:`core.stores.common.ModelCallJournal`)."""

    def _journal_write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _journal_read(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    _RUN_LOCK = ""
    """What :meth:`record_lapse` adds to its read of the run (PostgreSQL: ``FOR KEY SHARE``, so a
    delete in progress is waited for; SQLite's writers take turns)."""

    def queue_events(self, after: int, limit: int = 500) -> list[dict[str, Any]]:
        """Up to ``limit`` events with an ID above ``after``, lowest ID first, each a dict of
        :data:`EVENT_COLUMNS`."""
        with self._journal_read() as conn:
            rows = conn.execute(f"{_SELECT} WHERE id > ? ORDER BY id LIMIT ?", (after, limit)).fetchall()
        return [dict(zip(EVENT_COLUMNS, tuple(r), strict=True)) for r in rows]

    def lapse_times(self, run_ids: list[str]) -> dict[str, list[str]]:
        """The ``at`` (ISO 8601 with offset) of every ``lapse`` event of ``run_ids``, by run ID
        (a run without one is absent): one read on the unique index of the lapses, 500 runs a
        statement (SQLite's parameter limit). :func:`core.engine.watch.sweep_lapses` skips loading a
        run whose request's lapse is written already."""
        found: dict[str, list[str]] = {}
        if not run_ids:
            return found
        with self._journal_read() as conn:
            rows = rows_in(conn, "SELECT run_id, at FROM queue_events WHERE kind = 'lapse' AND run_id IN", run_ids)
        for run_id, at in rows:
            found.setdefault(run_id, []).append(at)
        return found

    def record_lapse(self, run_id: str, digest: str, at: str, required_role: str | None) -> bool:
        """Write the ``lapse`` event of the request ``digest`` of ``run_id`` unless it is written
        already (a unique index on run and digest: of two writers at once, one writes), and only
        while ``run_id`` is saved and waiting: a sweep that loaded a run deleted since writes
        nothing, so no lapse outlives its run to be counted as a later run's of the same ID.
        Returns True when this call wrote it."""
        with self._journal_write() as conn:
            cur = conn.execute(
                "INSERT INTO queue_events (kind, run_id, at, required_role, detail) SELECT 'lapse', ?, ?, ?, ? "
                "WHERE EXISTS (SELECT 1 FROM runs WHERE run_id = ? AND status = 'waiting_approval'"
                f"{self._RUN_LOCK}) ON CONFLICT (run_id, detail) WHERE kind = 'lapse' DO NOTHING",
                (run_id, at, required_role, digest, run_id),
            )
            return bool(cur.rowcount == 1)
