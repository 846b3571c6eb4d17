"""One PostgreSQL database (and schema): the pool of connections under the store, the world and the
registry's rows of the PostgreSQL back-end, a leaf below the schema's modules.

:class:`Database` holds a **connection pool** (``psycopg_pool.ConnectionPool``) per URL, shared by
every part opened on that URL in this process (:func:`core.stores.postgres.database.database`,
which opens it with the schema's migrations and the triggers' check). A pool rather than a connection
per thread, as the SQLite back-end keeps: a PostgreSQL connection is a server process, so a thread
that ends (the app's workers, the executor's heartbeat) must not keep one open until the process
exits; a pooled connection goes back to the pool at the end of each use, so
:meth:`core.contract.store.Store.end_thread` has nothing to give back. Within one use the thread keeps its
connection: a read or a transaction opened inside another on the same thread runs on the same
connection (nested transactions become savepoints), as the SQLite helper nests.

Connections run in autocommit; a write is one ``BEGIN`` ... ``COMMIT`` block
(:meth:`Database.transaction`) at PostgreSQL's default isolation, ``READ COMMITTED``, with row
locks where a rule needs one writer at a time (the run's row for a compare-and-set or a lease,
the audit's one-row head, the register's one-row head). A read of several statements that must
see one state (a run's events, a backup) is a ``REPEATABLE READ`` snapshot
(:meth:`Database.snapshot`); a load is one statement, which sees one state by itself. A write of
one statement runs in autocommit (:meth:`Database.atomic`: one round trip), and a transaction
whose statements need not wait on each other is pipelined (:meth:`Database.pipelined`).
Every connection waits at most :data:`LOCK_TIMEOUT_S` for a lock (``lock_timeout``), then
:class:`~core.ground.errors.StoreBusy` says so in one sentence, as SQLite's busy timeout does.

Errors become sentences (:meth:`Database.errors`): no server, an unknown database or role, a
schema that does not exist, a lock held too long. A constraint's error
(``psycopg.errors.IntegrityError``) is passed up as it is, for the caller to say what it means
(a run saved twice, an approver's name taken).

The URL is a libpq URL (``postgresql://user@host:5432/dbname``, ``postgresql:///dbname`` for the
local socket); a schema is chosen by libpq's own ``options=-csearch_path=NAME`` parameter, and
the tables go in the first schema of the search path. Sentences name the database by
:func:`describe`, never with its password.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import psycopg
import psycopg.conninfo
import psycopg.errors
import psycopg.rows
from psycopg_pool import ConnectionPool, PoolTimeout

from core.contract.audit import AuditMoved
from core.ground.errors import (
    ApprovalRefused,
    ConnectionLost,
    DatabaseRefused,
    ResolverError,
    StoreBusy,
    StoreConflict,
    StoreUnreachable,
)
from core.ground.masking import mask_text

LOCK_TIMEOUT_S = 5.0
"""Seconds a statement waits for a lock another connection holds before StoreBusy."""

CONNECT_TIMEOUT_S = 5
"""Seconds to reach the server before the store is called unreachable."""

POOL_SIZE = 10
"""Connections at most per URL and process (threads of one process share them)."""

PIPELINE = psycopg.Pipeline.is_supported()
"""Whether the client's libpq has pipeline mode (14 or later; the ``psycopg[binary]`` wheels do)."""


def describe(url: str) -> str:
    """The database of ``url`` for a sentence, without its password: ``the PostgreSQL database
    test on 127.0.0.1:5432 (schema s1)``. A URL libpq cannot read is named as such."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the PostgreSQL store (its URL cannot be read)"
    host = str(info.get("host") or "the local socket")
    port = f":{info['port']}" if info.get("port") else ""
    name = str(info.get("dbname") or info.get("user") or "of the current user")
    schema = ""
    options = str(info.get("options") or "")
    if "search_path=" in options:
        schema = f" (schema {options.split('search_path=', 1)[1].split()[0].split(',')[0]})"
    return f"the PostgreSQL database {name} on {host}{port}{schema}"


def first_line(exc: BaseException, url: str | None = None) -> str:
    """The first line of a library's error, for a sentence, with every password masked
    (:func:`core.ground.masking.mask_text`): libpq quotes pieces of the URL it could not read
    (``invalid percent-encoded token: "s3%zzcret"``, ``... in URI: "postgresql://..."``), so the
    passwords of ``url``, the one that failed, are masked wherever they stand."""
    text = str(exc).strip().splitlines()
    return mask_text(text[0].rstrip(".") if text else type(exc).__name__, [url])


class Row:
    """A row read by position and by column name, as ``sqlite3.Row`` is (``row[0]``,
    ``row["seq"]``, ``dict(row)``), so the practice world's shared SQL reads both back-ends alike."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: dict[str, int], values: Sequence[Any]) -> None:
        self._names = names
        self._values = tuple(values)

    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._names[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    names = {c.name: i for i, c in enumerate(cursor.description or ())}
    return lambda values: Row(names, values)


@lru_cache(maxsize=512)
def _qmark(sql: str) -> str:
    """SQL with ``?`` placeholders (SQLite's) as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


class QmarkConnection:
    """A psycopg connection that runs SQL written with ``?`` placeholders and returns
    :class:`Row` rows: what :mod:`core.stores.practice` and the registry's shared change speak."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Sequence[Any] = ()) -> Any:
        """Run one statement; returns its cursor (``fetchone``, ``fetchall``, iteration, ``rowcount``)."""
        cur = self.conn.cursor(row_factory=_row_factory)
        if parameters:
            return cur.execute(_qmark(sql), tuple(parameters))
        return cur.execute(sql)


@contextmanager
def _refusals(label: str) -> Iterator[None]:
    """A separated store's refusals as sentences: SQLSTATE ``RS403`` (a function's or
    guard's refusal) is ApprovalRefused with the database's message, ``RS409`` AuditMoved, a
    privilege the user lacks DatabaseRefused naming it (exit 4). Anything else passes."""
    try:
        yield
    except psycopg.Error as exc:
        if exc.sqlstate not in ("RS403", "RS409") and not isinstance(exc, psycopg.errors.InsufficientPrivilege):
            raise
        message = (exc.diag.message_primary or first_line(exc)).strip()
        if exc.sqlstate == "RS409":
            raise AuditMoved(message) from None
        if exc.sqlstate == "RS403":
            raise ApprovalRefused(message) from None
        raise DatabaseRefused(
            f"{label[:1].upper()}{label[1:]} refused this write to its user ({message.rstrip('.')}); a store with role "
            "separation lets each user write only its own part (docs/team-roles.md)."
        ) from None


def separated(conn: psycopg.Connection[Any]) -> bool:
    """True when the store was set up with role separation and this connection's user is not a
    superuser (an administrator's connection keeps the direct path). False before migration 12."""
    if conn.execute("SELECT to_regclass('store_roles')").fetchone()[0] is None:  # type: ignore[index]
        return False
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM store_roles) AND NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)"
    ).fetchone()
    return bool(row and row[0])


class TriggerCheck(Protocol):
    """How a pool checks its store's triggers at the open and later (:mod:`core.stores.postgres.triggers`,
    which sits above this module: it reads the migrations)."""

    def problems(self, conn: psycopg.Connection[Any]) -> dict[str, str]:
        """Each trigger that is missing or altered, by name, with what is wrong."""

    def repair(self, conn: psycopg.Connection[Any], problems: dict[str, str]) -> list[str]:
        """Make again those of ``problems`` this user may; the names made again."""


class _Local(threading.local):
    conn: psycopg.Connection[Any] | None = None
    depth: int = 0


class Database:
    """The PostgreSQL database of ``url``: a pool of connections, errors as sentences.

    Args:
        url: a libpq URL (see the module's docstring).
        on_open: called once with a first connection (autocommit) before the pool opens: makes
            or upgrades the schema (:func:`core.stores.postgres.schema.migrate`).
        triggers: how the store's triggers are checked and made again
            (:class:`TriggerCheck`, :mod:`core.stores.postgres.triggers`); None: not checked.
        :func:`core.stores.postgres.database.database` opens a pool with both.

    Attributes:
        url: as given. label: :func:`describe` of it, for sentences. path: ``Path(label)``, what
        the contract's ``path`` attributes hold for this back-end (there is no file).

    Raises:
        ResolverError: the server cannot be reached, the database or role does not exist, or
            the schema cannot be made (one sentence).
    """

    def __init__(
        self,
        url: str,
        on_open: Callable[[psycopg.Connection[Any], str], None] | None = None,
        *,
        triggers: TriggerCheck | None = None,
    ) -> None:
        self.url = url
        self._triggers = triggers
        self.label = describe(url)
        self.path = Path(self.label)
        self._local = _Local()
        self._separated: bool | None = None
        self.trigger_problems: dict[str, str] = {}
        self.repaired_triggers: list[str] = []
        self._checked_at_open = False
        with self.errors():
            try:
                first = psycopg.connect(url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S)
            except psycopg.OperationalError as exc:
                raise StoreUnreachable(f"Cannot reach {self.label}: {first_line(exc, self.url)}.") from None
            try:
                self._configure(first)
                if on_open is not None:
                    on_open(first, self.label)
                    self._separated = separated(first)  # asked at the open, so no save pays a round trip for it
                    self._check_triggers(first)
                    self._checked_at_open = True
            finally:
                first.close()
            self.pool = ConnectionPool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT_S},
                configure=self._configure,
                timeout=LOCK_TIMEOUT_S * 2,
                name=self.label,
                open=False,
            )
            self.pool.open(wait=True, timeout=CONNECT_TIMEOUT_S * 2)

    def _check_triggers(self, conn: psycopg.Connection[Any]) -> None:
        """Compare the store's triggers with the schema's (:func:`core.stores.postgres.triggers.trigger_problems`)
        once per process: a user who may makes each wrong one again (:attr:`repaired_triggers`);
        what is still wrong is kept in :attr:`trigger_problems`, and every write is then refused
        by :meth:`_writable` while reads go on, so one dropped trigger never locks anyone out."""
        if self._triggers is None:
            return
        problems = self._triggers.problems(conn)
        if problems:
            self.repaired_triggers = self._triggers.repair(conn, problems)
            if self.repaired_triggers:
                problems = self._triggers.problems(conn)
        self.trigger_problems = problems

    def check_triggers(self) -> list[str]:
        """Check the store's triggers again (a store object opened later in the process than the
        pool: someone may have dropped one since), unless the open of this pool just did; returns
        the names made again since the last call (said once by the caller), see
        :meth:`_check_triggers`."""
        if self._checked_at_open:
            self._checked_at_open = False
        else:
            with self.read() as conn:
                self._check_triggers(conn)
        repaired, self.repaired_triggers = self.repaired_triggers, []
        return repaired

    def _writable(self) -> None:
        """Raise DatabaseRefused naming each trigger that is missing or altered: a write now could
        break the rule the trigger keeps (an audit row changed, a count or an event not kept), so
        none is made; reads, ``doctor`` and ``audit verify`` do not come here."""
        if not self.trigger_problems:
            return
        named = "; ".join(f"{name} is {why}" for name, why in self.trigger_problems.items())
        raise DatabaseRefused(
            f"{self.label[:1].upper()}{self.label[1:]} refuses every write while a trigger of its schema is not as "
            f"the schema makes it ({named}); nothing was written. Reads, doctor and audit verify still work; the "
            "owner of the store's tables or its administrator makes the trigger again by running any resolver "
            "command with their URL."
        )

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S * 1000)}ms'")

    @property
    def separated(self) -> bool:
        """True when the store was set up with role separation
        (:func:`separated`) and this URL's user is no superuser: its
        decisions, refusal rows and audit head then go through the store's functions. Asked
        once per process and URL (at the open, after the migrations)."""
        if self._separated is None:
            with self.read() as conn:
                self._separated = separated(conn)
        return self._separated

    def close(self) -> None:
        """Close the pool (every connection; a later use raises)."""
        self.pool.close()

    # -- errors -----------------------------------------------------------------------------------

    @contextmanager
    def errors(self) -> Iterator[None]:
        """PostgreSQL's errors as sentences: a lock held too long or no free connection is
        StoreBusy (StoreUnreachable when no connection can be made at all; a connection that
        failed under a statement is ConnectionLost); a transaction the server undid for another's
        sake (a deadlock or a serialization failure) is StoreConflict, which nothing of was
        written; a constraint's error passes as it is; a refusal of a separated store's
        function or guard (SQLSTATE ``RS403``) is ApprovalRefused with its message,
        ``RS409`` AuditMoved; a privilege the user lacks is one sentence naming it; anything
        else is a ResolverError."""
        started = time.monotonic()
        try:
            with _refusals(self.label):
                yield
        except (psycopg.errors.DeadlockDetected, psycopg.errors.SerializationFailure) as exc:
            raise StoreConflict(
                f"{self.label[:1].upper()}{self.label[1:]} undid this change to let another writer's through "
                f"({first_line(exc, self.url)}); nothing of it was written: try again."
            ) from None
        except psycopg.errors.LockNotAvailable as exc:
            raise StoreBusy(
                f"{self.label[:1].upper()}{self.label[1:]} stayed locked by another writer for "
                f"{time.monotonic() - started:.1f} s ({first_line(exc, self.url)}); try again."
            ) from None
        except PoolTimeout:
            why = self._unreachable()
            if why is not None:  # no free connection because none can be made: the server is gone, not busy
                raise StoreUnreachable(f"Cannot reach {self.label}: {why}.") from None
            raise StoreBusy(
                f"{self.label[:1].upper()}{self.label[1:]} had no free connection for {time.monotonic() - started:.1f} s; try again."
            ) from None
        except psycopg.IntegrityError:
            raise
        except psycopg.errors.InvalidSchemaName as exc:
            raise ResolverError(
                f"{self.label[:1].upper()}{self.label[1:]} has no such schema ({first_line(exc, self.url)})."
            ) from None
        except psycopg.OperationalError as exc:
            self._drop_dead()
            raise ConnectionLost(f"Cannot use {self.label}: {first_line(exc, self.url)}.") from None
        except psycopg.Error as exc:
            raise ResolverError(f"{self.label[:1].upper()}{self.label[1:]} failed: {first_line(exc, self.url)}.") from None

    def _unreachable(self) -> str | None:
        """Why a new connection to the server cannot be made now (the first line of libpq's
        error), or None when one can: asked after the pool had no connection to give, to tell a
        server that is down or cut off from a pool whose connections are all in use."""
        try:
            psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S).close()
        except psycopg.Error as exc:
            return first_line(exc, self.url)
        return None

    def _drop_dead(self) -> None:
        """After a connection failed: test the pool's idle connections and drop those the server
        ended (all of them, after a restart), so the next use connects anew instead of failing
        once per dead connection."""
        pool = getattr(self, "pool", None)
        if pool is None or pool.closed:
            return
        with suppress(psycopg.Error):
            pool.check()

    # -- use --------------------------------------------------------------------------------------

    @contextmanager
    def _use(self) -> Iterator[psycopg.Connection[Any]]:
        local = self._local
        if local.conn is not None:
            local.depth += 1
            try:
                yield local.conn
            finally:
                local.depth -= 1
            return
        with self.pool.connection() as conn:
            local.conn, local.depth = conn, 1
            try:
                yield conn
            finally:
                local.conn, local.depth = None, 0

    @contextmanager
    def read(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for reads (autocommit unless inside this thread's transaction)."""
        with self.errors(), self._use() as conn:
            yield conn

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction: committed at the end, rolled back on any exception (a savepoint when
        this thread is already inside one). Refused (DatabaseRefused) while a trigger of the
        store is missing or altered (:meth:`_writable`), as are :meth:`atomic` and :meth:`pipelined`."""
        self._writable()
        with self.errors(), self._use() as conn, conn.transaction():
            yield conn

    @contextmanager
    def atomic(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection for one statement that must write all or nothing: in autocommit the
        statement is its own transaction (one round trip, no ``BEGIN`` or ``COMMIT``); inside this
        thread's transaction, a savepoint around it, so its failure does not abort the outer one."""
        self._writable()
        with self.errors(), self._use() as conn:
            if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
                yield conn
                return
            with conn.transaction():
                yield conn

    @contextmanager
    def pipelined(self) -> Iterator[tuple[psycopg.Connection[Any], Callable[[], None]]]:
        """A transaction as :meth:`transaction`, in libpq's pipeline mode; yields the connection
        and ``sync``. ``BEGIN`` and the statements are queued, not waited on: ``sync()`` sends
        them and waits for all their results at once (a cursor's ``fetchone`` after it reads
        what came back), and ``COMMIT`` goes with whatever was queued after the last sync. A
        decision's save is then one round trip (its statements, the audit row and the commit)
        instead of one per statement. An error of a queued statement is raised by
        ``sync()`` or at the end, and the transaction is rolled back. Where the client's libpq
        has no pipeline mode (before 14), or inside this thread's transaction, it is
        :meth:`transaction` and ``sync`` does nothing."""
        self._writable()
        with self.errors(), self._use() as conn:
            if not PIPELINE or conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                with conn.transaction():
                    yield conn, lambda: None
                return
            done = False
            try:
                with conn.pipeline() as pipe:
                    conn.execute("BEGIN")
                    yield conn, pipe.sync
                    conn.execute("COMMIT")
                done = True
            finally:
                if not done and not conn.closed and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    conn.execute("ROLLBACK")

    @contextmanager
    def snapshot(self) -> Iterator[psycopg.Connection[Any]]:
        """A ``REPEATABLE READ`` read-only transaction: every statement sees one committed state.
        Inside this thread's transaction, that transaction's view instead."""
        with self.errors(), self._use() as conn:
            if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                yield conn
                return
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                yield conn
