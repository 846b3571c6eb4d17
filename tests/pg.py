"""PostgreSQL for the tests: a schema of its own per test, dropped after.

:func:`server_url` finds a server (``RESOLVER_TEST_PG``, else ``postgresql://127.0.0.1:5432/test``,
else the local socket's ``test`` database) once per session, or says why there is none;
:func:`fresh_schema` makes a schema with a unique name and gives the URL that chooses it
(libpq's ``options=-csearch_path=NAME``), and drops it with everything in it at the end, so no
test depends on what an earlier run left in ``test``. Without a server the tests that need one
skip with the reason; under ``CI=true`` they fail (and ``.ci/run`` fails before the tests).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

CANDIDATES = ("postgresql://127.0.0.1:5432/test", "postgresql:///test")


@lru_cache(maxsize=1)
def _server() -> tuple[str | None, str]:
    """``(URL of a reachable server, "")`` or ``(None, why not)``."""
    try:
        import psycopg
    except ImportError:
        return None, "psycopg is not installed (pip install -e '.[postgres]')"
    tried = []
    for url in (os.environ.get("RESOLVER_TEST_PG") or "", *CANDIDATES):
        if not url:
            continue
        try:
            psycopg.connect(url, connect_timeout=3, autocommit=True).close()
            return url, ""
        except psycopg.Error as exc:
            tried.append(f"{url}: {str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}")
    return None, "PostgreSQL is not reachable (" + "; ".join(tried) + ")"


def server_url() -> str:
    """The URL of the tests' PostgreSQL server; skips the test with the reason when there is none."""
    url, why = _server()
    if url is None:
        if os.environ.get("CI") == "true":  # in CI the suite runs on both back-ends, never one quietly
            pytest.fail(why)
        pytest.skip(why)
    return url


def require_superuser(why: str) -> None:
    """Skip the test, saying ``why`` it needs one, when the tests' PostgreSQL role is not a
    superuser (fail under ``CI=true``, whose server is used as its superuser). A contributor's
    ``RESOLVER_TEST_PG`` may name any database and user: the tests that play a database
    administrator (make roles and members, write rows with the triggers off, write as another
    user) need that user to be one; every other test needs only a schema of its own."""
    import psycopg

    with psycopg.connect(server_url(), autocommit=True) as conn:
        row = conn.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").fetchone()
    if row and row[0]:
        return
    said = f"the tests' PostgreSQL role is not a superuser, and this test {why}"
    if os.environ.get("CI") == "true":
        pytest.fail(said)
    pytest.skip(said)


def with_schema(url: str, schema: str) -> str:
    """``url`` choosing ``schema`` by libpq's ``options=-csearch_path=schema``."""
    return f"{url}{'&' if '?' in url else '?'}options={quote(f'-csearch_path={schema}')}"


def with_password(url: str, password: str, user: str) -> str:
    """``url`` with ``password`` (and ``user``, unless the URL names one already) in its user
    part, whatever the URL held there before: built from its parts, never by replacing text,
    so a URL that names a user (``postgresql://ana@host/db``) keeps one ``@``. ``password`` is
    written as given: a test of masking chooses its own escapes (``%40``) or their absence. The
    tests' server trusts local users, so the password is not checked; it is there to be masked."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    name = parts.username or user
    return urlunsplit(parts._replace(netloc=f"{name}:{password}@{host}"))


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A new schema with a unique name on the tests' server: yields the URL that chooses it, and
    drops the schema (and closes this process's connections to it) afterwards."""
    import psycopg
    from core.stores.postgres.database import forget

    server = server_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = with_schema(server, schema)
    try:
        yield url
    finally:
        forget(url)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@contextmanager
def team_store(backend: str) -> Iterator[str | None]:
    """The ``--store`` URL of a home on ``backend``: None for ``sqlite`` (the home folder's
    files), a schema of its own for ``postgresql`` (or ``postgres``: :func:`fresh_schema`), dropped
    at the end; skips when PostgreSQL is unreachable. ``memory``: a place of its own of the
    tests' in-memory back-end (:mod:`memory_backend`), forgotten at the end."""
    if backend == "memory":
        import memory_backend

        url = memory_backend.new_url()
        try:
            yield url
        finally:
            memory_backend.forget(url)
        return
    if backend not in ("postgresql", "postgres"):
        yield None
        return
    with fresh_schema() as url:
        yield url


def restore_frozen(url: str, folder: Path, versions: Iterable[int], *, verbatim: bool = False) -> None:
    """Make a frozen team store again in the schema of ``url``: its tables by this resolver's
    migrations of the numbers the old release had applied (``versions``), then every row of
    ``folder/tables.json`` (``{table: [row, ...]}``, the ``resolver_migrations`` rows included),
    each identity going on after the loaded values as it did in the old store. ``verbatim``: the
    rows go in with the triggers off (``session_replication_role = replica``, a superuser's), for
    a store whose triggers write rows of their own (``queue_events``, ``run_counts``: loading its
    runs would write them twice)."""
    import json

    import psycopg
    from core.stores.postgres.schema import MIGRATIONS

    if verbatim:
        require_superuser("loads a frozen store with its triggers off (session_replication_role)")
    wanted = set(versions)
    tables = json.loads((folder / "tables.json").read_text(encoding="utf-8"))
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        if verbatim:
            conn.execute("SET LOCAL session_replication_role = replica")
        conn.execute(
            "CREATE TABLE resolver_migrations (version integer PRIMARY KEY, description text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, _, statements in MIGRATIONS:
            if version in wanted:
                for statement in statements():
                    conn.execute(statement)
        for table, rows in tables.items():
            conn.execute(
                f"INSERT INTO {table} OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(null::{table}, %s) "
                "ON CONFLICT DO NOTHING",
                (json.dumps(rows),),
            )
        identities = conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE is_identity = 'YES' "
            "AND table_schema = current_schema()"
        ).fetchall()
        for table, column in identities:
            conn.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', '{column}'), "
                f"(SELECT COALESCE(max({column}), 0) + 1 FROM {table}), false)"
            )


def undo_migration_12(conn) -> None:
    """Take migration 12 (role separation), and 15, 17 and 18 which build on it, out of the schema
    of ``conn``, in its transaction: its column, tables and functions dropped and its row deleted,
    so a test can build what an earlier migration left. Migration 14 (the register bound to the
    approved arguments) changes only 12's objects: it goes too (its column with ``decided``, its
    row)."""
    conn.execute("DELETE FROM resolver_migrations WHERE version = 14")
    conn.execute("ALTER TABLE approvers DROP COLUMN db_user")
    conn.execute("ALTER TABLE runs DROP COLUMN IF EXISTS proposal_by")  # and migration 15's, which needs 12's
    conn.execute("DELETE FROM resolver_migrations WHERE version = 15")
    conn.execute("DELETE FROM resolver_migrations WHERE version = 18")  # 18 replaces 12's resolver_needed_role, dropped below
    conn.execute(
        "DROP TRIGGER IF EXISTS model_calls_written_by ON model_calls"
    )  # 17 reads 12's approvers.db_user and store_roles
    conn.execute("DROP FUNCTION IF EXISTS resolver_guard_model_calls()")
    conn.execute("ALTER TABLE model_calls DROP COLUMN IF EXISTS written_by")
    conn.execute("DELETE FROM resolver_migrations WHERE version = 17")
    for table in ("policy_limits", "catalog_prices", "decided", "store_roles"):
        conn.execute(f"DROP TABLE {table}")
    for function in (
        "resolver_row_hash(audit)",
        "resolver_needed_role(jsonb)",
        "resolver_decide(text, bigint, jsonb, int[], text[], int[], text[], text[], int[], bigint[], jsonb)",
        "resolver_note(text, jsonb)",
        "resolver_put_head(bytea)",
        "resolver_guard_runs()",
        "resolver_guard_register()",
        "resolver_guard_marks()",
    ):
        conn.execute(f"DROP FUNCTION {function}")
    conn.execute("DELETE FROM resolver_migrations WHERE version = 12")
    # Migration 19's append hashes with 12's resolver_row_hash: it is made again with it (its
    # statements are idempotent), as a store of the release before 12 upgraded today would be.
    conn.execute("DELETE FROM resolver_migrations WHERE version = 19")


def undo_migration_19(conn) -> None:
    """Put the schema of ``conn`` back as migration 18 left it, in its transaction: the queue's
    counts kept by triggers that add to ``run_counts`` (migration 7's functions), no deltas, no
    fold, no ``resolver_append``, and migration 19's row deleted: what a store written by the
    release before holds, for a test that upgrades it."""
    from core.stores.postgres.schema import RUN_COUNTS

    for statement in RUN_COUNTS:
        if statement.startswith("CREATE FUNCTION"):
            conn.execute(statement.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION", 1))
    conn.execute(
        "INSERT INTO run_counts (status, shard, n) SELECT status, 0, sum(n) FROM run_count_deltas GROUP BY status "
        "ON CONFLICT (status, shard) DO UPDATE SET n = run_counts.n + EXCLUDED.n"
    )
    conn.execute("DROP TABLE run_count_deltas")
    conn.execute("DROP FUNCTION resolver_run_counts_fold()")
    conn.execute("DROP FUNCTION resolver_append(text, jsonb)")
    conn.execute("DELETE FROM resolver_migrations WHERE version = 19")


SAVES_NEED = (19,)
"""Migrations this resolver's decisions call into (19: ``resolver_append``). A test that plays
an older release's schema with this code keeps them applied: the older release's own code did
not call them, and a store this code opens is always brought up to date first."""


def release_upto(monkeypatch, n: int) -> None:
    """Make the schema module play the release whose migrations went up to ``n`` (with
    :data:`SAVES_NEED` kept), for the rest of ``monkeypatch``'s context."""
    from core.stores.postgres import schema

    before = tuple(m for m in schema.MIGRATIONS if m[0] <= n or m[0] in SAVES_NEED)
    monkeypatch.setattr(schema, "MIGRATIONS", before)
    monkeypatch.setattr(schema, "ALL", frozenset(v for v, _, _ in before))
    monkeypatch.setattr(schema, "LATEST", n)


def played_version(url: str) -> int:
    """The highest migration of the schema of ``url`` but :data:`SAVES_NEED`: the release a test
    played there."""
    import psycopg

    with psycopg.connect(url) as conn:
        return max(int(r[0]) for r in conn.execute("SELECT version FROM resolver_migrations") if r[0] not in SAVES_NEED)


def undo_migration_20(conn) -> None:
    """Take migration 20 (the practice world's notifications) out of the schema of ``conn``, in its
    transaction: its triggers and function dropped and its row deleted, so a test can build what
    an earlier migration left."""
    from core.stores.common import WORLD_TABLES

    for table in (*WORLD_TABLES, "register_head"):
        conn.execute(f"DROP TRIGGER IF EXISTS {table}_notify ON {table}")
    conn.execute("DROP FUNCTION IF EXISTS resolver_notify_world()")
    conn.execute("DELETE FROM resolver_migrations WHERE version = 20")


class Cut:
    """A TCP relay between a process and the tests' server that can be cut (every connection
    closed and the port refusing, as a server that went down) and joined again on the same port."""

    def __init__(self, url: str) -> None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        if not parts.hostname or not parts.port:
            pytest.skip("the tests' server is reached by a socket, not TCP: no relay to cut")
        self.upstream = (parts.hostname, parts.port)
        self.port = 0
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener: socket.socket | None = None
        self.join()

    def join(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(32)
        self.port = listener.getsockname()[1]
        self.listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        assert self.listener is not None
        listener, self.listener = self.listener, None
        with contextlib.suppress(OSError):  # wakes the accept under way (a close alone leaves the port listening)
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        with self.lock:
            for conn in self.conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            self.conns.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self.listener is not listener:  # cut meanwhile
                client.close()
                return
            try:
                server = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self.lock:
                self.conns += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.close()


def through(url: str, relay: Cut) -> str:
    """``url`` going through ``relay`` (its host and port replaced by the relay's)."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    user = f"{parts.username}@" if parts.username else ""
    return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{relay.port}"))


@contextmanager
def database_roles(prefix: str, kinds: Iterable[str]) -> Iterator[dict[str, str]]:
    """Database roles with unique names (``{prefix}_{kind}_{tag}``), ``tables`` ``NOLOGIN`` and the
    others ``LOGIN``, for a test of role separation: yields kind -> role name, and drops them (and
    what they own) afterwards, this process's connections as them closed first. Skips the test
    when the tests' server role may not create roles."""
    import psycopg

    server = server_url()
    # CREATEROLE alone is not enough before PostgreSQL 16: its holder is no member of the roles it
    # makes, and setting them up (grants, DROP OWNED) needs that
    require_superuser("makes database roles and their members (role separation)")
    with psycopg.connect(server, autocommit=True) as conn:
        tag = uuid.uuid4().hex[:8]
        made = {k: f"{prefix}_{k}_{tag}" for k in kinds}
        for kind, name in made.items():
            conn.execute(f"CREATE ROLE {name} {'NOLOGIN' if kind == 'tables' else 'LOGIN'}")
    try:
        yield made
    finally:
        from core.stores.postgres.database import _databases, forget

        for url in [u for u in _databases if any(n in u for n in made.values())]:
            forget(url)
        with psycopg.connect(server, autocommit=True) as conn:
            for name in made.values():
                conn.execute(f"DROP OWNED BY {name} CASCADE")
                conn.execute(f"DROP ROLE {name}")
