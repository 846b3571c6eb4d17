"""One SQLite database file shared by a process: the helper under the checkpoint store and the world.

:class:`Database` keeps **one long-lived connection per thread** (``threading.local``), so the
statements a caller runs again and again are prepared once and served from sqlite3's statement
cache, and no save pays for opening a connection. Every connection runs with:

- ``journal_mode = WAL``: readers never block the writer, and a commit appends to the
  write-ahead log instead of rewriting pages in place. The WAL is kept between transactions;
  SQLite's auto-checkpoint folds it into the database every 1,000 pages (amortised).
- ``synchronous = FULL``: the WAL is fsynced at every commit, so **each committed transaction
  costs exactly one fsync** and survives a power cut, not only a crash of the process. This is
  on purpose: an approval that the app has acknowledged to Grace must still be there
  after the power comes back. ``NORMAL`` would save that fsync but may lose the last commits on
  power loss, which would let an acknowledged approval vanish.
- ``busy_timeout``: another process's write lock is waited for up to :data:`BUSY_TIMEOUT_S`
  seconds, then :class:`~core.ground.errors.StoreBusy` says so in one sentence.

The last connection to close checkpoints the WAL into the database (SQLite's default; Python
3.11 cannot set ``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE``). With one long-lived connection per thread
that happens once per process, at exit, not at every save as a connection opened per save would.

A long-lived connection would keep reading a file that someone deleted and rebuilt under it
(``resolver reset --all`` while the app is open). So at every use the helper compares the file's
device and inode with the ones it opened, and reopens when they differ. Closing the old
connection is safe: SQLite does not checkpoint or delete the WAL of a database file that has
been unlinked or replaced (``databaseIsUnmoved`` in its pager).

A store's file is another matter (``keep_file``, the checkpoint store's): a new user moved
``runs.sqlite`` away (``mv``) while the app was open, and its next write made a new, empty store
in its place; the app showed an empty queue. Such a :class:`Database` keeps the identity of the
file it first opened, and a read or a write after that file vanished or was replaced by another
is refused with one sentence (:class:`FileMoved`) and creates nothing; the file put back is used
again. Every :class:`Database` refuses a file that vanished since it opened one, the practice
world's too (a trial moved ``larkfield.sqlite`` away under the app: its next read made an empty
world there, and the real one's WAL, the register's last writes, went with it); only the process
that deletes a file to build it again says so (:meth:`Database.made_again`).

A long-lived connection also keeps the state it was opened in. SQLite opens a file it
may not write **read-only, silently**, and that connection refuses every write ("attempt to
write a readonly database") for as long as it lives, even once the file is writable again; in
the app, whose workers run on a pool of reused threads, a decision failed again on whichever
thread had opened the world while it was not writable. So:

- a connection opened while the file was not writable for this process (``os.access``) is
  marked read-only and is reopened at the next use once the file is writable;
- any failure of a statement (not a busy lock, not a constraint) counts as a failure of the
  file: every thread's connection opened before it is closed and reopened at its next use
  (:attr:`Database.failures`, compared with the generation each connection was opened at).

A connection is reopened only between uses, never under a statement or transaction in progress
on the same thread (nested uses keep the outer connection).

:attr:`Database.counters` counts transactions and commits (the benchmark prints transactions and
fsyncs per approve: with ``synchronous = FULL`` in WAL mode, one fsync per commit that wrote).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from core.ground.errors import ResolverError, StoreBusy

BUSY_TIMEOUT_S = 5.0
"""Seconds a connection waits for another process's lock before StoreBusy."""

STATEMENT_CACHE = 256
"""Prepared statements kept per connection (sqlite3's cache, keyed by the SQL text)."""

OnOpen = Callable[[sqlite3.Connection], None]


@dataclass
class Counters:
    """What one :class:`Database` did since it was made (all threads together).

    ``transactions``: ``BEGIN IMMEDIATE`` transactions opened; ``commits``: those committed
    (each is one fsync of the WAL under ``synchronous = FULL``); ``rollbacks``: those undone;
    ``opens``: connections opened (a reopen after the file was rebuilt counts too).
    """

    transactions: int = 0
    commits: int = 0
    rollbacks: int = 0
    opens: int = 0

    def snapshot(self) -> dict[str, int]:
        """The counters as a dict, e.g. ``{"transactions": 9, "commits": 9, ...}``."""
        return {"transactions": self.transactions, "commits": self.commits, "rollbacks": self.rollbacks, "opens": self.opens}


class _Local(threading.local):
    conn: sqlite3.Connection | None = None
    ident: tuple[int, int] | None = None
    generation: int = 0
    """:attr:`Database.failures` when this connection was opened."""
    read_only: bool = False
    """Opened while the file was not writable: SQLite made it a read-only connection."""
    depth: int = 0
    """Uses in progress on this thread (``read`` and ``immediate`` nest)."""


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_dev, st.st_ino)


class Connection(sqlite3.Connection):
    """A ``sqlite3`` connection that can carry what was learnt about its file's schema while it
    is open (:attr:`known`, e.g. the audit's columns once all are there, so no
    ``PRAGMA table_info`` runs inside every decision). Columns are only ever added, a file replaced
    under it gets a new connection (:meth:`Database.connection`), and a rolled-back write
    transaction forgets everything (:meth:`Database.immediate`), so nothing known goes stale."""

    known: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known = {}


FILE_MODE = 0o600
"""Mode of the database files (and their ``-wal`` and ``-shm``, which SQLite creates with the
database file's mode): they hold ticket texts and customers' e-mail addresses."""


def _private_file(path: Path) -> None:
    """Create ``path`` empty with :data:`FILE_MODE` if it does not exist, so SQLite never makes it
    with the umask's 0644 (a process racing to create it first is fine)."""
    if path.exists():
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    except FileExistsError:
        return
    except OSError:
        return  # a folder in the way, a read-only disk: sqlite3.connect says so in a sentence
    os.close(fd)


class ReadOnlyFile(ResolverError):
    """A database file its owner left read-only (no write bit for its owner, or not writable by
    this user): resolver never changes the mode of a file it did not make, so the
    write is refused with one sentence and nothing is written."""


class FileMoved(ResolverError):
    """The file of a :class:`Database` vanished (moved, deleted) since it was opened, or (one
    made with ``keep_file``) was replaced by another file: refused with one sentence naming the
    path and what to do; nothing is read or written and no file is made."""


class Database:
    """The SQLite file at ``path``, a connection per thread, reopened when the file is replaced
    (unless ``keep_file``: then refused, :class:`FileMoved`); a file gone since it was opened is
    refused, never made again empty.

    Args:
        path: the database file (its folder is made; the file is created on first use).
        label: what the file is, for error sentences (``the checkpoint store``).
        on_open: called with each new connection after its pragmas (makes or migrates tables;
            it runs again after the file was rebuilt).
        row_factory: sqlite3 row factory for this file's connections (None: tuples).
        keep_file: once a file is opened, use that file only: a use after it vanished or was
            replaced raises :class:`FileMoved` (the checkpoint store: an empty store made in
            place of a moved one would show an empty queue and lose track of the runs).

    Errors: :class:`~core.ground.errors.StoreBusy` when a lock outlasts the busy timeout;
    :class:`FileMoved` when the file opened is gone from ``path`` (or, ``keep_file``, replaced);
    :class:`~core.ground.errors.ResolverError` with one sentence for any other SQLite failure (which
    also makes every thread reopen its connection at its next use, see the module's doc).
    """

    def __init__(
        self,
        path: Path | str,
        *,
        label: str,
        on_open: OnOpen | None = None,
        row_factory: type | None = None,
        keep_file: bool = False,
    ) -> None:
        self.path = Path(path)
        self.keep_file = keep_file
        self._kept: tuple[int, int] | None = None
        """With ``keep_file``: the device and inode of the file first opened (None: not yet)."""
        self._opened = False
        """A file was opened here: one gone since is refused, never made again empty (:meth:`made_again`)."""
        self.label = label
        self.on_open = on_open
        self.row_factory = row_factory
        self.counters = Counters()
        self.failures = 0
        """Failures of a statement on this file so far (all threads): a connection opened
        before the latest one is reopened at its next use."""
        self._local = _Local()
        self._lock = threading.Lock()
        self._access_known: tuple[tuple[int, ...], bool] | None = None
        """The last ``os.access`` answer and the file's stat it was given for (:meth:`_access`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)

    # -- connections ------------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        """A new connection (:class:`Connection`) to the file, in WAL with ``synchronous=FULL``."""
        _private_file(self.path)
        target: str | Path = self.path
        if not self._writable():  # its owner made it read-only: SQLite must not write it either, even as root
            target = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            conn = sqlite3.connect(
                target,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                cached_statements=STATEMENT_CACHE,
                uri=isinstance(target, str),
                factory=Connection,
            )
        except sqlite3.Error as exc:
            raise ResolverError(f"Cannot open {self.label} {self.path}: {exc}.") from exc
        if self.row_factory is not None:
            conn.row_factory = self.row_factory
        started = time.monotonic()
        try:
            while True:
                try:
                    with self._errors(started):
                        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                        conn.execute("PRAGMA journal_mode = WAL")
                        conn.execute("PRAGMA synchronous = FULL")
                        if self.on_open is not None:
                            self.on_open(conn)
                    break
                except StoreBusy:
                    # SQLite answers "locked" at once, without its busy handler, while another
                    # process turns a new file to WAL or builds its tables: wait and try again
                    if time.monotonic() - started >= BUSY_TIMEOUT_S:
                        raise
                    time.sleep(0.05)
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self.counters.opens += 1
        return conn

    def _refuse_mode(self, st: os.stat_result) -> None:
        """Refuse a write to a file its owner made read-only: no write bit for the
        owner (``chmod 444``, which root could still write) or none for this user, given the
        file's ``os.stat`` (the one stat of a write transaction, which also gives the file's
        identity). The mode is never changed: a file's mode is its owner's to set.

        Raises:
            ReadOnlyFile: one sentence naming the file, its mode and what its owner does.
        """
        if st.st_mode & stat.S_IWUSR and self._access(st):
            return
        mode = stat.S_IMODE(st.st_mode)
        raise ReadOnlyFile(
            f"{self.label[:1].upper()}{self.label[1:]} {self.path} is read-only (mode {mode:04o}): resolver never changes the "
            f"mode of a file it did not make, so nothing was written. Its owner makes it writable (chmod 600 {self.path}), "
            "then run the command again."
        )

    def _access(self, st: os.stat_result) -> bool:
        """``os.access(path, W_OK)``, asked again only when the file's identity, mode, owner,
        group or ``st_ctime_ns`` (which ``chmod``, ``chown``, ``setfacl`` and ``chattr`` all
        move) differ from the last answer's (so a save pays no stat and
        ``access`` call for a check whose inputs have not changed). A file system remounted
        read-only under an open store is not seen here: SQLite's own write fails with a sentence."""
        key = (st.st_dev, st.st_ino, st.st_mode, st.st_uid, st.st_gid, st.st_ctime_ns)
        known = self._access_known
        if known is not None and known[0] == key:
            return known[1]
        answer = os.access(self.path, os.W_OK)
        self._access_known = (key, answer)
        return answer

    def _writable(self) -> bool:
        """Whether this process may write the file now and its owner left it writable
        (a ``chmod 444`` file is read-only for root too); it is opened read-only when not."""
        try:
            return bool(self.path.stat().st_mode & stat.S_IWUSR) and os.access(self.path, os.W_OK)
        except OSError:
            return True  # made at the first open

    def connection(self) -> sqlite3.Connection:
        """This thread's connection: opened on first use, reopened if the file was replaced, and
        between uses if a statement on the file failed since it was opened or it was opened
        read-only and the file is writable now."""
        return self._connection_at(_file_id(self.path))

    def _connection_at(self, ident: tuple[int, int] | None) -> sqlite3.Connection:
        """:meth:`connection`, given the file's identity (device, inode; None: no file) as its
        caller has just read it (:meth:`immediate`: one stat for this and the read-only check)."""
        if (ident is None and self._opened) or (self._kept is not None and ident != self._kept):
            self._refuse_moved(ident)
        local = self._local
        stale = local.conn is None or ident is None or ident != local.ident
        if not stale and local.depth == 0:
            stale = local.generation != self.failures or (local.read_only and self._writable())
        if stale:
            self._retire()
            generation = self.failures
            conn = self._open()
            local.conn, local.ident, local.generation = conn, _file_id(self.path), generation
            local.read_only = not self._writable()
            self._opened = True
            if self.keep_file and self._kept is None:
                self._kept = local.ident
        assert local.conn is not None
        return local.conn

    def made_again(self) -> None:
        """This process deleted the file to build it again (``resolver reset --all``'s practice
        world): the next use may create it, and (``keep_file``) keeps the new one."""
        self._opened, self._kept = False, None

    def _refuse_moved(self, ident: tuple[int, int] | None) -> NoReturn:
        """Refuse a use of a database whose file vanished since it was opened (``ident`` None),
        or, ``keep_file``, was replaced by another (``ident``: the file now at the path): a new
        user moved ``larkfield.sqlite`` away under the app, whose next read made an empty world
        in its place, and the real one's WAL (the operations register's last writes) was lost
        with it. Raises FileMoved."""
        what = f"{self.label[:1].upper()}{self.label[1:]} {self.path}"
        if ident is None:
            raise FileMoved(
                f"{what} is gone (moved or deleted while in use): put it back and try again; nothing was read or "
                "written and no new, empty one was made."
            )
        raise FileMoved(
            f"{what} was replaced by another file while in use: quit and start resolver again to use the file now "
            "there (or put the first one back); nothing was read or written."
        )

    def _failed(self) -> None:
        """A statement failed: every connection opened before now is reopened at its next use."""
        with self._lock:
            self.failures += 1

    def _retire(self) -> None:
        local = self._local
        if local.conn is not None:
            old, local.conn, local.ident = local.conn, None, None
            with suppress(sqlite3.Error):
                old.close()

    def close(self) -> None:
        """Close this thread's connection (the next use opens a new one)."""
        self._retire()

    # -- use --------------------------------------------------------------------------------------

    @contextmanager
    def _errors(self, started: float | None = None) -> Iterator[None]:
        started = time.monotonic() if started is None else started
        try:
            yield
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                waited = time.monotonic() - started
                raise StoreBusy(
                    f"{self.label[:1].upper()}{self.label[1:]} {self.path} stayed locked by another process "
                    f"for {waited:.1f} s; try again."
                ) from exc
            self._failed()
            raise ResolverError(f"{self.label[:1].upper()}{self.label[1:]} {self.path} failed: {exc}.") from exc
        except sqlite3.IntegrityError:
            raise
        except sqlite3.DatabaseError as exc:
            self._failed()
            raise ResolverError(f"{self.label[:1].upper()}{self.label[1:]} {self.path} is not a usable database: {exc}.") from exc

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection for reads (autocommit), with SQLite errors as sentences."""
        with self._errors():
            conn = self.connection()
            self._local.depth += 1
            try:
                yield conn
            finally:
                self._local.depth -= 1

    @contextmanager
    def snapshot(self) -> Iterator[sqlite3.Connection]:
        """A read transaction on this thread's connection: every statement in it sees one
        committed state of the file (WAL), while other processes write."""
        with self.read() as conn:
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def immediate(self) -> AbstractContextManager[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: committed at the end, rolled back on any exception.

        Counts one transaction and, if committed, one commit (one fsync of the WAL). One
        ``os.stat`` of the file per transaction gives both the read-only check and the file's
        identity (not two stats and an ``os.access``), and the context is a
        class, not a generator (:class:`_Immediate`).

        Raises:
            ReadOnlyFile: the file is read-only (see :meth:`_refuse_mode`); nothing written.
        """
        return _Immediate(self)

    def _reraise(self, exc: BaseException, started: float) -> NoReturn:
        """Raise the SQLite error ``exc`` as :meth:`_errors` says it (a sentence), or as it is."""
        with self._errors(started):
            raise exc


class _Immediate:
    """The context of :meth:`Database.immediate` (see there)."""

    __slots__ = ("conn", "db", "started")

    def __init__(self, db: Database) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        db = self.db
        try:
            st: os.stat_result | None = os.stat(db.path)
        except OSError:
            st = None  # a file that is not there yet is made 0600 at its first open
        if st is not None:
            db._refuse_mode(st)
        self.started = started = time.monotonic()
        local = db._local
        try:
            conn = self.conn = db._connection_at(None if st is None else (st.st_dev, st.st_ino))
            local.depth += 1
        except sqlite3.Error as exc:
            db._reraise(exc, started)
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            local.depth -= 1
            db._reraise(exc, started)
        except BaseException:
            local.depth -= 1
            raise
        with db._lock:
            db.counters.transactions += 1
        return conn

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        db, conn = self.db, self.conn
        try:
            if exc is None:
                try:
                    conn.execute("COMMIT")
                except sqlite3.Error as failed:
                    db._reraise(failed, self.started)
                with db._lock:
                    db.counters.commits += 1
                return
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error as failed:
                db._reraise(failed, self.started)
            finally:
                if isinstance(conn, Connection):  # what it learnt may have been rolled back
                    conn.known.clear()
                with db._lock:
                    db.counters.rollbacks += 1
            if isinstance(exc, sqlite3.Error):
                db._reraise(exc, self.started)
        finally:
            db._local.depth -= 1
