"""A long-lived connection keeps the state it was opened in.

SQLite opens a file this process may not write **read-only, without a word**, and that
connection refuses every write for as long as it lives, even once the file is writable again.
Each :class:`core.stores.sqlite.database.Database` keeps one connection per thread, and the app's workers run
on reused pool threads: after the world was unwritable during an approval and writable again,
pressing ``u`` failed with "attempt to write a readonly database" on whichever thread had opened
the world meanwhile (4 times in 5), while a new process finished the run.

CI runs as root, where file modes do not stop a write, so most tests make the file unwritable
the way SQLite itself then treats it: every connection opened meanwhile is opened ``mode=ro``
(:func:`helpers.unwritable`). One test makes the file really unwritable (``chmod`` for a user,
``chattr +i`` for root) for the connection opened read-only that never failed.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from core.ground.errors import ResolverError
from core.stores.sqlite.database import Database

from helpers import FRIDAY, T65273_RUN, unwritable


class Worker:
    """One long-lived thread that runs what it is given, as an app worker thread does."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[tuple[Callable[[], Any], queue.Queue[tuple[bool, Any]]] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while (job := self._jobs.get()) is not None:
            fn, answer = job
            try:
                answer.put((True, fn()))
            except Exception as exc:
                answer.put((False, exc))

    def run(self, fn: Callable[[], Any]) -> Any:
        answer: queue.Queue[tuple[bool, Any]] = queue.Queue()
        self._jobs.put((fn, answer))
        ok, value = answer.get(timeout=60)
        if not ok:
            raise value
        return value

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=10)


def _table(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS t (x INTEGER)")


def _write(db: Database, value: int) -> Callable[[], None]:
    def write() -> None:
        with db.immediate() as conn:
            conn.execute("INSERT INTO t VALUES (?)", (value,))

    return write


def _count(db: Database) -> Callable[[], int]:
    def count() -> int:
        with db.read() as conn:
            return conn.execute("SELECT count(*) FROM t").fetchone()[0]

    return count


def test_a_failed_write_reopens_every_thread_s_connection_opened_before_it(tmp_path, monkeypatch):
    db = Database(tmp_path / "file.sqlite", label="the test file", on_open=_table)
    db.connection()  # made and writable
    a, b = Worker(), Worker()
    try:
        with unwritable(monkeypatch, db.path):
            assert a.run(_count(db)) == 0 and b.run(_count(db)) == 0  # both threads open read-only connections
            with pytest.raises(ResolverError, match="attempt to write a readonly database"):
                a.run(_write(db, 1))
        # the file is writable again: b never failed, but its connection is older than a's failure
        b.run(_write(db, 2))
        a.run(_write(db, 3))
        assert a.run(_count(db)) == 2 and b.run(_count(db)) == 2
    finally:
        a.stop()
        b.stop()


def test_a_nested_use_keeps_its_connection_when_another_thread_fails(tmp_path, monkeypatch):
    """A connection is reopened between uses, never under a statement in progress."""
    db = Database(tmp_path / "file.sqlite", label="the test file", on_open=_table)
    other = Worker()
    try:
        with db.immediate() as conn:
            conn.execute("INSERT INTO t VALUES (1)")
            with unwritable(monkeypatch, db.path), pytest.raises(ResolverError):
                other.run(_write(db, 2))
            with db.read() as inner:  # nested: the same connection, still in its transaction
                assert inner is conn and conn.in_transaction
            conn.execute("INSERT INTO t VALUES (3)")
        assert _count(db)() == 2
    finally:
        other.stop()


def test_the_core_story_resume_on_the_same_thread_finishes_once(tmp_path, monkeypatch):
    """The failure's story under the app's faces: approve on a worker thread while the world is not
    writable, then resume on the same thread once it is: done, one refund, one reply."""
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    home.run("T-65273")
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        with unwritable(monkeypatch, home.world_path), pytest.raises(ResolverError, match="readonly"):
            pool.submit(home.approve, T65273_RUN, "team_lead", "Grace").result()
        assert home.store.load(T65273_RUN).status == "executing"
        pool.submit(home.resume, T65273_RUN).result()
    finally:
        pool.shutdown()
    state = home.store.load(T65273_RUN)
    assert state.status == "done"
    world = home.world()
    assert len(world.refunds_of("LK-507862")) == 1
    assert [op.status for op in state.operations] == ["done", "done"]


def _make_really_unwritable(path: Path) -> Callable[[], None]:
    """Make ``path`` unwritable for this process for real, or skip: ``chmod 0400`` for a user,
    ``chattr +i`` for root (which file modes do not stop). Returns the undo."""
    if os.geteuid() != 0:
        os.chmod(path, 0o400)
        return lambda: os.chmod(path, 0o600)
    try:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        pytest.skip("root, and chattr cannot run here: the mode=ro tests cover this")
    if done.returncode != 0 or os.access(path, os.W_OK):
        pytest.skip("root, and this file system cannot make a file immutable: the mode=ro tests cover this")
    return lambda: subprocess.run(["chattr", "-i", str(path)], check=True, timeout=30)


def test_a_connection_opened_read_only_is_reopened_once_the_file_is_writable(tmp_path):
    db = Database(tmp_path / "file.sqlite", label="the test file", on_open=_table)
    db.connection()
    db.close()
    worker = Worker()
    undo = _make_really_unwritable(db.path)
    try:
        assert worker.run(_count(db)) == 0  # opened read-only by SQLite, without a failure
    finally:
        undo()
    worker.run(_write(db, 1))  # its first write, with the file writable again
    assert worker.run(_count(db)) == 1
    worker.stop()


def test_a_write_transaction_commits_once_rolls_back_on_error_and_says_sqlite_s_failures_in_a_sentence(tmp_path):
    """:meth:`Database.immediate` is a class, not two generators; it still commits once, rolls back
    what an exception interrupted (counted, what the connection learnt forgotten), gives a SQLite
    failure as a sentence naming the file, leaves a constraint error and any other exception as
    they are, and the thread's connection stays usable."""
    from core.ground.errors import StoreBusy
    from core.stores.sqlite.database import Connection

    db = Database(tmp_path / "t.sqlite", label="the test file")
    with db.immediate() as conn:
        conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (1)")
    assert db.counters.snapshot() | {"opens": 0} == {"transactions": 1, "commits": 1, "rollbacks": 0, "opens": 0}
    with pytest.raises(sqlite3.IntegrityError), db.immediate() as conn:
        conn.execute("INSERT INTO t VALUES (2)")
        conn.execute("INSERT INTO t VALUES (1)")
    with (
        pytest.raises(ResolverError, match=r"^The test file .*t\.sqlite failed: no such table: nowhere\.$"),
        db.immediate() as conn,
    ):
        assert isinstance(conn, Connection)
        conn.known["learnt"] = True
        conn.execute("INSERT INTO t VALUES (3)")
        conn.execute("SELECT * FROM nowhere")
    assert conn.known == {} and not conn.in_transaction
    with pytest.raises(KeyError), db.immediate() as conn:
        conn.execute("INSERT INTO t VALUES (4)")
        raise KeyError("not SQLite's")
    assert db.counters.commits == 1 and db.counters.rollbacks == 3
    with db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT k FROM t")] == [1]
    other = sqlite3.connect(tmp_path / "t.sqlite", timeout=0)
    other.execute("BEGIN IMMEDIATE")
    try:
        import core.stores.sqlite.database as database

        old, database.BUSY_TIMEOUT_S = database.BUSY_TIMEOUT_S, 0.1
        db.close()  # the next connection waits 0.1 s for the lock, not 5
        try:
            with pytest.raises(StoreBusy, match=r"stayed locked by another process for .* s; try again\.$"), db.immediate():
                pass
        finally:
            database.BUSY_TIMEOUT_S = old
    finally:
        other.rollback()
        other.close()
    with db.immediate() as conn:
        conn.execute("INSERT INTO t VALUES (5)")
    with db.read() as conn:
        assert [r[0] for r in conn.execute("SELECT k FROM t")] == [1, 5]
