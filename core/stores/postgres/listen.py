"""The live queue on PostgreSQL: migration 11's ``NOTIFY`` triggers, and
:class:`QueueListener`, the connection that ``LISTEN``s to them.

**What sends.** Triggers, so every writer is heard alike (a save, a decision, a claim, a
hand-over, a snooze, a delete, ``resolver store copy``'s import, SQL written by hand):

- ``runs``: a run added or deleted, or its ``status``, ``version`` or ``state_ok`` changed
  (a step's save changes the version; a lease's renewal changes none of them and sends nothing);
- ``run_marks``: a claim, a release, a hand-over, a snooze (any change of a run's marks);
- ``queue_events``: every event the watcher reads (:mod:`core.stores.events`), lapses included;
- the practice world's tables and its register (migration 20, :data:`WORLD_NOTIFY`): one
  ``{"kind": "world", "run_id": null}`` per statement that writes, deletes or truncates one (a
  colleague's manual refund, an execution's write, a reset), so every other app's "What
  changed since the agent looked" is read again at once instead of at its safety timer.

Each sends ``pg_notify(channel, payload)`` with the payload a small JSON object,
``{"kind": TABLE_OR_EVENT, "run_id": RUN}``. A statement that adds or deletes more than
:data:`MANY` runs (a copy, a reset) sends one ``{"kind": "runs", "run_id": null}`` instead of one
per run. ``resolver store copy`` writes quietly (:data:`QUIET`, migration 13) and then sends one
``{"kind": "queue", "run_id": null}`` (:data:`REREAD`): read the whole queue again. ``NOTIFY`` is transactional: PostgreSQL delivers at commit, never a rolled-back change,
and drops repeats of one payload within a transaction.

**The channel** is ``resolver_queue_`` and the MD5 of the schema's name (:func:`channel`), so the
stores in two schemas of one database (the tests' schemas, two shops) never hear each other, and
the name stays under PostgreSQL's 63 bytes whatever the schema's length.

**Not stored.** A notification sent while no listener is connected is lost: a listener that
reconnects says so (``on_state("reconnected")``) and its user reads the queue again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg import sql

from core.stores.common import WORLD_TABLES
from core.stores.postgres.pool import CONNECT_TIMEOUT_S

__all__ = [
    "CHANNEL_PREFIX",
    "MANY",
    "NOTIFY_TRIGGERS",
    "QUIET",
    "QUIET_NOTIFY",
    "REREAD",
    "WORLD",
    "WORLD_NOTIFY",
    "QueueListener",
    "channel",
    "notify_reread",
    "quiet",
]

CHANNEL_PREFIX = "resolver_queue_"
"""The start of every store's channel name; the MD5 of its schema's name follows."""

MANY = 100
"""Runs added or deleted by one statement above which one notification stands for them all."""

BURST_S = 0.02
"""Seconds the listener gathers the notifications that follow a first one into its batch."""

_CHANNEL_SQL = f"'{CHANNEL_PREFIX}' || md5(TG_TABLE_SCHEMA)"

QUIET = "resolver.quiet"
"""A transaction-local setting (``SELECT set_config('resolver.quiet', 'on', true)``) under which
the notify triggers send nothing (migration 13): ``resolver store copy`` writes its rows quietly
and sends one :data:`REREAD` at the end (:func:`notify_reread`) instead of one per run."""

REREAD = "queue"
"""The ``kind`` of the notification that stands for the whole queue (``run_id`` null): read
everything again (sent at the end of ``resolver store copy`` into a team store)."""


def _notify_functions(create: str, guard: str) -> tuple[str, ...]:
    """The four notify functions, made by ``create`` (``CREATE FUNCTION`` for migration 11,
    ``CREATE OR REPLACE FUNCTION`` for 13), each starting with ``guard`` (13: :data:`QUIET`)."""
    return (
        f"""{create} resolver_notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{guard}
    IF TG_OP = 'DELETE' OR NEW.status IS DISTINCT FROM OLD.status OR NEW.version IS DISTINCT FROM OLD.version
       OR NEW.state_ok IS DISTINCT FROM OLD.state_ok THEN
        PERFORM pg_notify({_CHANNEL_SQL},
            json_build_object('kind', 'run', 'run_id', CASE TG_OP WHEN 'DELETE' THEN OLD.run_id ELSE NEW.run_id END)::text);
    END IF;
    RETURN NULL;
END
$$""",
        f"""{create} resolver_notify_runs_added() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r record;
BEGIN{guard}
    IF (SELECT count(*) FROM changed_rows) > {MANY} THEN
        PERFORM pg_notify({_CHANNEL_SQL}, json_build_object('kind', 'runs', 'run_id', NULL)::text);
    ELSE
        FOR r IN SELECT run_id FROM changed_rows LOOP
            PERFORM pg_notify({_CHANNEL_SQL}, json_build_object('kind', 'run', 'run_id', r.run_id)::text);
        END LOOP;
    END IF;
    RETURN NULL;
END
$$""",
        f"""{create} resolver_notify_marks() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{guard}
    PERFORM pg_notify({_CHANNEL_SQL},
        json_build_object('kind', 'marks', 'run_id', CASE TG_OP WHEN 'DELETE' THEN OLD.run_id ELSE NEW.run_id END)::text);
    RETURN NULL;
END
$$""",
        f"""{create} resolver_notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{guard}
    PERFORM pg_notify({_CHANNEL_SQL}, json_build_object('kind', NEW.kind, 'run_id', NEW.run_id)::text);
    RETURN NULL;
END
$$""",
    )


_RUN, _ADDED, _MARKS, _EVENT = _notify_functions("CREATE FUNCTION", "")

NOTIFY_TRIGGERS = (
    _RUN,
    "CREATE TRIGGER runs_notify_update AFTER UPDATE ON runs FOR EACH ROW EXECUTE FUNCTION resolver_notify_run()",
    _ADDED,
    "CREATE TRIGGER runs_notify_insert AFTER INSERT ON runs REFERENCING NEW TABLE AS changed_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION resolver_notify_runs_added()",
    "CREATE TRIGGER runs_notify_delete AFTER DELETE ON runs REFERENCING OLD TABLE AS changed_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION resolver_notify_runs_added()",
    _MARKS,
    "CREATE TRIGGER run_marks_notify AFTER INSERT OR UPDATE OR DELETE ON run_marks FOR EACH ROW "
    "EXECUTE FUNCTION resolver_notify_marks()",
    _EVENT,
    "CREATE TRIGGER queue_events_notify AFTER INSERT ON queue_events FOR EACH ROW EXECUTE FUNCTION resolver_notify_event()",
)
"""Migration 11: the triggers that send the queue's notifications (see the module's docstring)."""

QUIET_NOTIFY = _notify_functions(
    "CREATE OR REPLACE FUNCTION", f"\n    IF current_setting('{QUIET}', true) = 'on' THEN\n        RETURN NULL;\n    END IF;"
)
"""Migration 13's part of the notifications: the same functions, silent while :data:`QUIET` is on."""


WORLD = "world"
"""The ``kind`` of a notification that the practice world or its register changed (``run_id`` null)."""


def _world_notify() -> tuple[str, ...]:
    function = f"""CREATE FUNCTION resolver_notify_world() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('{QUIET}', true) = 'on' THEN
        RETURN NULL;
    END IF;
    PERFORM pg_notify({_CHANNEL_SQL}, json_build_object('kind', '{WORLD}', 'run_id', NULL)::text);
    RETURN NULL;
END
$$"""
    triggers = tuple(
        f"CREATE TRIGGER {table}_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table} "
        "FOR EACH STATEMENT EXECUTE FUNCTION resolver_notify_world()"
        for table in (*WORLD_TABLES, "register_head")
    )
    owner = """DO $$
DECLARE
    owning text;
BEGIN
    REVOKE ALL ON FUNCTION resolver_notify_world() FROM PUBLIC;
    IF to_regclass('store_roles') IS NOT NULL THEN
        SELECT tables_role INTO owning FROM store_roles;
    END IF;
    IF owning IS NOT NULL THEN  -- a store set up with role separation: its functions belong to the tables' role
        EXECUTE format('ALTER FUNCTION resolver_notify_world() OWNER TO %I', owning);
    END IF;
END
$$"""
    return (function, *triggers, owner)


WORLD_NOTIFY = _world_notify()
"""Migration 20: a statement that writes the practice world or its register sends one
:data:`WORLD` notification (the same payload within a transaction is sent once, at its commit),
silent under :data:`QUIET` as the queue's are; on a store set up with role separation the
function belongs to the tables' role, as every function of the schema does. Per statement, not per row: a reset that builds
the world again is one notification per table, and a listener reads the queue once for them."""


def notify_reread(conn: Any) -> None:
    """Send the one :data:`REREAD` notification (``{"kind": "queue", "run_id": null}``) on the
    channel of ``conn``'s schema: its listeners read the whole queue again. Delivered when
    ``conn``'s transaction commits (at once under autocommit)."""
    conn.execute(
        f"SELECT pg_notify('{CHANNEL_PREFIX}' || md5(current_schema()), json_build_object('kind', %s::text, 'run_id', NULL)::text)",
        (REREAD,),
    )


def quiet(conn: Any) -> None:
    """Make the notify triggers silent until ``conn``'s transaction ends (:data:`QUIET`)."""
    conn.execute(f"SELECT set_config('{QUIET}', 'on', true)")


def channel(schema: str) -> str:
    """The ``NOTIFY`` channel of the store in ``schema``: :data:`CHANNEL_PREFIX` and the MD5 of
    the name in hex (47 characters), as the triggers compute it with ``md5(TG_TABLE_SCHEMA)``."""
    return CHANNEL_PREFIX + hashlib.md5(schema.encode()).hexdigest()


Changed = Callable[[list[tuple[str, str | None]]], object]
"""Called with a batch of ``(kind, run_id)`` notifications (``run_id`` None: many runs)."""

State = Callable[[str], object]
"""Called with ``"lost"`` (the connection dropped) or ``"reconnected"`` (listening again)."""


class QueueListener:
    """A dedicated connection that ``LISTEN``s to a team store's channel, in a thread of its own.

    :meth:`start` connects and listens; each batch of notifications that arrive together
    (within :attr:`wait` of each other) is handed to ``on_change`` once, on the listener's
    thread. When the connection drops the listener says ``"lost"``, tries again every
    :attr:`retry` seconds, and says ``"reconnected"`` once it listens again: notifications sent
    in between are lost (``NOTIFY`` is not stored), so the user reads the queue again.
    :meth:`stop` ends the thread within about :attr:`wait` seconds (it is never left running
    at exit). Nothing is said when the first connection fails: the listener keeps trying, and
    its user, which opened the store a moment before, reads as it did.

    Args:
        url: the team store's libpq URL (:mod:`core.stores.postgres.pool`).
        wait: seconds each wait for a notification lasts before the thread checks whether it
            is asked to stop (default 0.2).
        retry: seconds between attempts to reconnect (default 1).

    Attributes:
        pid: the listening connection's server process ID (None while not connected); a test
            ends it with ``pg_terminate_backend`` to see a reconnection.
    """

    def __init__(self, url: str, *, wait: float = 0.2, retry: float = 1.0) -> None:
        self.url = url
        self.wait = wait
        self.retry = retry
        self.pid: int | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()

    @property
    def alive(self) -> bool:
        """True while the listener's thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self, on_change: Changed, on_state: State | None = None) -> None:
        """Start listening in a new thread (daemon, so a caller that forgets :meth:`stop` never
        keeps the process alive); returns at once. Calling it twice raises RuntimeError."""
        if self._thread is not None:
            raise RuntimeError("This listener was started already.")
        self._thread = threading.Thread(target=self._run, args=(on_change, on_state), name="resolver-queue-listener", daemon=True)
        self._thread.start()

    def listening(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds (None: no limit) until the first ``LISTEN`` is done;
        True when it is (a change committed after it is heard)."""
        return self._listening.wait(timeout)

    def stop(self) -> None:
        """Ask the thread to stop and wait for it: at most :attr:`wait` seconds and a connection's
        close, or, while the server cannot be reached, the attempt under way (at most
        :data:`~core.stores.postgres.pool.CONNECT_TIMEOUT_S`)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _connect(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
        try:
            schema = conn.execute("SELECT current_schema()").fetchone()[0]  # type: ignore[index]
            conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(schema))))
            self.pid = conn.info.backend_pid
        except BaseException:
            conn.close()
            raise
        return conn

    def _run(self, on_change: Changed, on_state: State | None) -> None:
        connected_once = False
        while not self._stop.is_set():
            try:
                conn = self._connect()
            except psycopg.Error:
                self._stop.wait(self.retry)
                continue
            if connected_once and on_state is not None:
                on_state("reconnected")
            connected_once = True
            self._listening.set()
            try:
                self._listen(conn, on_change)
            except psycopg.Error:
                if not self._stop.is_set() and on_state is not None:
                    on_state("lost")
                self._stop.wait(self.retry)
            finally:
                self.pid = None
                conn.close()

    def _listen(self, conn: psycopg.Connection[Any], on_change: Changed) -> None:
        # Each generator is consumed to its end, never left by ``break``: psycopg takes every
        # notification of a packet at once, and those not yet yielded would be lost with it.
        while not self._stop.is_set():
            batch = [_parse(note.payload) for note in conn.notifies(timeout=self.wait, stop_after=1)]
            if not batch:
                continue
            batch += [_parse(note.payload) for note in conn.notifies(timeout=BURST_S)]  # what came with it
            on_change(batch)


def _parse(payload: str) -> tuple[str, str | None]:
    try:
        data = json.loads(payload)
        return str(data.get("kind") or ""), (None if data.get("run_id") is None else str(data["run_id"]))
    except (ValueError, AttributeError):
        return "", None
