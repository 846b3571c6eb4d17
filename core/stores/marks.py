"""The marks of runs in the queue: who claimed a run, to whom it was handed,
until when it is set aside; the SQL both back-ends share.

One row per marked run in ``run_marks`` (SQLite: created by the store format that brings it,
:mod:`core.stores.sqlite.marks`; PostgreSQL: migration 10, :mod:`core.stores.postgres.schema`),
written whole at each change with a compare-and-set on its ``version`` and the change's audit
row **in the same transaction**, so a claim, a hand-over or a snooze is recorded in the audit
exactly when it stands. The store keeps the columns as text and knows no rule: what may be
marked, by whom and until when is :mod:`core.engine.marks`.

A back-end supplies ``_journal_write`` / ``_journal_read`` (the ``?``-SQL transactions of
:class:`core.stores.common.ModelCallJournal`) and :meth:`RunMarksRows._marks_audit` (its audit
append inside that transaction).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from core.ground.errors import StaleCheckpoint
from core.stores.chunks import rows_in

__all__ = ["MARK_COLUMNS", "RunMarksRows"]

MARK_COLUMNS = (
    "run_id",
    "run_uid",
    "version",
    "claimed_by",
    "claimed_role",
    "claimed_at",
    "claim_until",
    "handed_to",
    "handed_by",
    "handed_at",
    "handed_note",
    "snoozed_by",
    "snoozed_at",
    "snooze_until",
)
"""The columns of ``run_marks``: the run and its ``run_uid`` (a mark of an older run that a reset
gave the same readable ID is not this run's), the row's ``version`` (1 at the first mark), then
per mark who, when (ISO 8601 with offset) and until when; ``None`` where there is no such mark."""

_SELECT = f"SELECT {', '.join(MARK_COLUMNS)} FROM run_marks"


class RunMarksRows:
    """``run_marks`` over ``?`` SQL, for both back-ends (see the module's docstring)."""

    def _journal_write(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _journal_read(self) -> AbstractContextManager[Any]:
        raise NotImplementedError

    def _marks_audit(self, conn: Any, run_id: str, audit: dict[str, Any]) -> None:
        """Append ``audit`` (as :meth:`core.contract.store.AuditLog.append_audit`) inside ``conn``'s transaction."""
        raise NotImplementedError

    def run_marks(self, run_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """The marks rows of ``run_ids`` (None: every marked run), by run ID, each a dict of
        :data:`MARK_COLUMNS`. A run without marks is absent. The table holds a row per marked run
        only, so reading it whole for a listing costs the marked runs, not the queue."""
        with self._journal_read() as conn:
            if run_ids is None:
                rows = conn.execute(_SELECT).fetchall()
            elif not run_ids:
                return {}
            else:
                rows = rows_in(conn, f"{_SELECT} WHERE run_id IN", run_ids)
        return {r[0]: dict(zip(MARK_COLUMNS, tuple(r), strict=True)) for r in rows}

    def put_marks(self, row: dict[str, Any], audit: dict[str, Any], *, version: int) -> int:
        """Write the marks ``row`` (every column of :data:`MARK_COLUMNS` but ``version``) of its
        run, a compare-and-set on ``version`` (0: the run had no row), and append ``audit`` in
        the same transaction. Returns the row's new version.

        Raises:
            StaleCheckpoint: someone changed the run's marks since ``version`` was read; nothing
                was written.
            core.contract.audit.AuditMoved: a signed row's ``prev`` moved; nothing was written.
            StoreBusy, ReadOnlyFile: nothing was written.
        """
        names = [c for c in MARK_COLUMNS if c not in ("run_id", "version")]
        values = [row.get(c) for c in names]
        run_id = row["run_id"]
        with self._journal_write() as conn:
            if version == 0:
                taken = conn.execute("SELECT 1 FROM run_marks WHERE run_id = ?", (run_id,)).fetchone()
                if taken is None:
                    conn.execute(
                        f"INSERT INTO run_marks (run_id, version, {', '.join(names)}) VALUES (?, 1, {', '.join('?' for _ in names)})",
                        (run_id, *values),
                    )
            else:
                taken = None
                cur = conn.execute(
                    f"UPDATE run_marks SET version = version + 1, {', '.join(f'{c} = ?' for c in names)} "
                    "WHERE run_id = ? AND version = ?",
                    (*values, run_id, version),
                )
                if cur.rowcount != 1:
                    taken = True
            if taken is not None:
                raise StaleCheckpoint(f"Someone changed the marks of run {run_id} meanwhile; read it again. Nothing was written.")
            self._marks_audit(conn, run_id, audit)
        return version + 1
