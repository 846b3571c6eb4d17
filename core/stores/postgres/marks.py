"""``run_marks`` and ``queue_events`` in the team store: migration 10's tables, the
triggers that write the events in the transaction of the write that makes them
(:mod:`core.stores.events`), and the PostgreSQL side of :class:`core.stores.marks.RunMarksRows`."""

from __future__ import annotations

import json
from typing import Any

from core.stores.events import QueueEventRows
from core.stores.marks import RunMarksRows
from core.stores.postgres import audit as auditchain

__all__ = ["FORGET_WITH_RUN", "REFRESH_EVENT", "RUN_MARKS", "PostgresMarks"]

_C = 'text COLLATE "C"'

RUN_MARKS = (
    f"CREATE TABLE run_marks (run_id {_C} PRIMARY KEY, run_uid {_C}, version bigint NOT NULL, claimed_by {_C}, "
    f"claimed_role {_C}, claimed_at {_C}, claim_until {_C}, handed_to {_C}, handed_by {_C}, handed_at {_C}, "
    f"handed_note {_C}, snoozed_by {_C}, snoozed_at {_C}, snooze_until {_C})",
    f"CREATE TABLE queue_events (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, kind {_C} NOT NULL, "
    f"run_id {_C} NOT NULL, at {_C} NOT NULL, name {_C}, role {_C}, to_name {_C}, required_role {_C}, detail {_C})",
    "CREATE UNIQUE INDEX queue_events_lapse ON queue_events (run_id, detail) WHERE kind = 'lapse'",
    """CREATE FUNCTION resolver_queue_event_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status IN ('waiting_approval', 'handed_to_person')
       AND (TG_OP = 'INSERT' OR NEW.status IS DISTINCT FROM OLD.status) THEN
        INSERT INTO queue_events (kind, run_id, at, required_role) VALUES (
            CASE NEW.status WHEN 'waiting_approval' THEN 'request' ELSE 'handed_to_person' END,
            NEW.run_id, NEW.updated_at, NEW.required_role);
    END IF;
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER queue_event_run AFTER INSERT OR UPDATE OF status ON runs FOR EACH ROW "
    "EXECUTE FUNCTION resolver_queue_event_run()",
    """CREATE FUNCTION resolver_queue_event_refusal() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queue_events (kind, run_id, at, name, role, required_role, detail) VALUES ('refusal', NEW.run_id,
        NEW.at, NEW.name, NEW.role, (SELECT required_role FROM runs WHERE run_id = NEW.run_id), NEW.detail);
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER queue_event_refusal AFTER INSERT ON audit FOR EACH ROW WHEN (NEW.decision LIKE 'refused%') "
    "EXECUTE FUNCTION resolver_queue_event_refusal()",
    """CREATE FUNCTION resolver_queue_event_marks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    needed text := (SELECT required_role FROM runs WHERE run_id = NEW.run_id);
BEGIN
    IF NEW.claimed_at IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.claimed_at IS DISTINCT FROM OLD.claimed_at) THEN
        INSERT INTO queue_events (kind, run_id, at, name, role, required_role, detail)
        VALUES ('claim', NEW.run_id, NEW.claimed_at, NEW.claimed_by, NEW.claimed_role, needed, NEW.claim_until);
    END IF;
    IF NEW.handed_at IS NOT NULL AND (TG_OP = 'INSERT' OR NEW.handed_at IS DISTINCT FROM OLD.handed_at
                                      OR NEW.handed_to IS DISTINCT FROM OLD.handed_to) THEN
        INSERT INTO queue_events (kind, run_id, at, name, to_name, required_role, detail)
        VALUES ('handover', NEW.run_id, NEW.handed_at, NEW.handed_by, NEW.handed_to, needed, NEW.handed_note);
    END IF;
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER queue_event_marks AFTER INSERT OR UPDATE ON run_marks FOR EACH ROW "
    "EXECUTE FUNCTION resolver_queue_event_marks()",
)
"""Migration 10: the marks of runs (claim, hand-over, snooze), one row per marked run, and the
queue's events with the triggers that write them (:mod:`core.stores.events`)."""


REFRESH_EVENT = (
    """CREATE FUNCTION resolver_queue_event_refresh() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO queue_events (kind, run_id, at, name, role, required_role, detail) VALUES ('request', NEW.run_id,
        NEW.at, NEW.name, NEW.role, (SELECT required_role FROM runs WHERE run_id = NEW.run_id), NEW.digest);
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER queue_event_refresh AFTER INSERT ON audit FOR EACH ROW WHEN (NEW.decision = 'refresh') "
    "EXECUTE FUNCTION resolver_queue_event_refresh()",
)
"""Migration 13's event: a refreshed request (its audit row, decision ``refresh``, written in the
refresh's transaction) is a ``request`` event again, naming who refreshed and the new digest
(:mod:`core.stores.events`). The run's status stays ``waiting_approval``, so the status trigger
writes nothing."""


FORGET_WITH_RUN = (
    """CREATE FUNCTION resolver_queue_event_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM queue_events WHERE kind = 'lapse' AND run_id = OLD.run_id;
    DELETE FROM run_marks WHERE run_id = OLD.run_id;
    RETURN NULL;
END
$$""",
    "CREATE TRIGGER queue_event_forget AFTER DELETE ON runs FOR EACH ROW EXECUTE FUNCTION resolver_queue_event_forget()",
    # the lapses and marks of runs deleted before this migration: a later run of the same ID took them for its own
    "DELETE FROM queue_events q WHERE q.kind = 'lapse' AND NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = q.run_id)",
    "DELETE FROM run_marks m WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.run_id = m.run_id)",
    """DO $$
DECLARE
    owning text;
BEGIN
    EXECUTE format('ALTER FUNCTION resolver_queue_event_forget() SET search_path = %I, pg_catalog, pg_temp', current_schema());
    REVOKE ALL ON FUNCTION resolver_queue_event_forget() FROM PUBLIC;
    SELECT tables_role INTO owning FROM store_roles;
    IF owning IS NOT NULL THEN  -- a store set up with role separation: the owner's delete may not touch queue_events or run_marks
        EXECUTE format('ALTER FUNCTION resolver_queue_event_forget() OWNER TO %I', owning);
        ALTER FUNCTION resolver_queue_event_forget() SECURITY DEFINER;
    END IF;
END
$$""",
)
"""Migration 16: a deleted run's ``lapse`` events and its marks (``run_marks``: claim, hand-over,
snooze) go with it, in the delete's transaction, by a trigger on ``runs`` (every delete:
``reset``, ``reset --run``, ``prune``, SQL by hand), so a later run given the same ID and
proposing the same digest (the lesson repeated after a reset) lapses again and starts unmarked;
those of runs already deleted go at the upgrade. On a store with role separation
the function belongs to the tables' role and runs as it (``SECURITY DEFINER``): the
owner's user, who may delete runs, has no right on ``queue_events`` or ``run_marks`` (its
``reset`` deleted the runs, then failed on their marks, in a second transaction). Its
``search_path`` is pinned, as every function's. The other events stay
(:mod:`core.stores.events`)."""


class PostgresMarks(RunMarksRows, QueueEventRows):
    """The team store's marks: its transaction (``_journal_write``, a ``?``-SQL connection) and
    its audit append under the audit head's lock (:func:`core.stores.postgres.audit.append`)."""

    _RUN_LOCK = " FOR KEY SHARE"  # a lapse waits for a delete of its run in progress, then finds it gone

    def _marks_audit(self, conn: Any, run_id: str, audit: dict[str, Any]) -> None:
        """The mark's audit row, in the mark's transaction; on a store with role separation
        through ``resolver_note``, as the caller's registry entry."""
        if self.db.separated:  # type: ignore[attr-defined]
            conn.conn.execute("SELECT resolver_note(%s, %s::jsonb)", (run_id, json.dumps(audit)))
            return
        auditchain.append(conn.conn, run_id, audit)
