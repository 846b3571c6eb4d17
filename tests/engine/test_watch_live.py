"""``resolver watch`` on the team store as a real process that lives through what a day brings:
its connections ended by the server (``pg_terminate_backend``), a table locked past the lock
timeout by another session, and its own restart. Each time it says one sentence at most, carries
on, and prints every event once it can, in commit order; nothing of a library reaches the
terminal.

The watcher's connections are found by their ``application_name`` (libpq's ``PGAPPNAME``, set
for its process only), so the test ends its backends and no one else's on a shared server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from pg import Cut, fresh_schema, through
from pg_rounds import ROOT, fresh_home

RUN = "T-65273-agent-chat-small-1"
GUARD_S = 30.0


class Watcher:
    """``resolver watch --as grace`` in a process of its own, its output gathered line by line."""

    def __init__(self, root: Path, url: str, app: str) -> None:
        env = {**os.environ, "RESOLVER_STORE": url, "PGAPPNAME": app}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "core", "watch", "--as", "grace", "--home", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.lock = threading.Lock()
        for pipe, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err)):
            threading.Thread(target=self._gather, args=(pipe, lines), daemon=True).start()

    def _gather(self, pipe, lines: list[str]) -> None:
        for line in pipe:
            with self.lock:
                lines.append(line.rstrip("\n"))

    def until(self, start: str) -> None:
        """Wait until a line of stdout starts with ``start`` (the process must stay alive)."""
        end = time.monotonic() + GUARD_S
        while True:
            with self.lock:
                if any(line.startswith(start) for line in self.out):
                    return
            assert self.proc.poll() is None, f"the watcher ended ({self.proc.returncode}): {self.out} {self.err}"
            assert time.monotonic() < end, f"no line {start!r}: {self.out} {self.err}"
            time.sleep(0.02)

    def stop(self) -> int:
        """Interrupt it as Ctrl-C does; its exit code."""
        self.proc.send_signal(signal.SIGINT)
        return self.proc.wait(GUARD_S)


def _newest(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT max(id) FROM queue_events").fetchone()[0])


def _claim_again(home, url: str) -> int:
    """Claim the run (one new ``claim`` event) and release it (no event); the claim's ID."""
    home.mark("claim", RUN, "grace", "Ana")
    claimed = _newest(url)
    home.mark("release", RUN, "grace", "Ana")
    return claimed


def _event_ids(lines: list[str]) -> list[int]:
    return [int(line.split()[0][1:]) for line in lines if line.startswith("#")]


def test_the_watcher_lives_through_ended_connections_a_locked_store_and_its_restart(tmp_path):
    pytest.importorskip("psycopg")
    import psycopg

    with fresh_schema() as url:
        root = tmp_path / "home"
        home = fresh_home(root, url)
        home.run("T-65273")
        app = f"resolver-watch-{uuid.uuid4().hex[:8]}"
        first = _newest(url)
        watcher = Watcher(root, url, app)
        try:
            watcher.until(f"Watching from event #{first}")
            ids = [_claim_again(home, url)]
            watcher.until(f"#{ids[-1]} ")

            with psycopg.connect(url, autocommit=True) as admin:  # the server ends every connection of the watcher
                ended = admin.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = %s", (app,)
                ).fetchone()[0]
            assert ended >= 2, ended  # its pool's and its listener's
            ids.append(_claim_again(home, url))
            watcher.until(f"#{ids[-1]} ")

            with psycopg.connect(url) as locker:  # another session holds the events past the lock timeout
                locker.execute("LOCK TABLE queue_events IN ACCESS EXCLUSIVE MODE")
                time.sleep(7.0)
                locker.rollback()
            ids.append(_claim_again(home, url))
            watcher.until(f"#{ids[-1]} ")
            assert watcher.stop() == 0

            ids.append(_claim_again(home, url))  # made while no watcher runs: the next start prints it
            watcher2 = Watcher(root, url, app)
            try:
                watcher2.until(f"#{ids[-1]} ")
                ids.append(_claim_again(home, url))
                watcher2.until(f"#{ids[-1]} ")
            finally:
                assert watcher2.stop() == 0
        finally:
            if watcher.proc.poll() is None:
                watcher.proc.kill()
        printed = _event_ids(watcher.out) + _event_ids(watcher2.out)
        assert set(ids) <= set(printed), (ids, printed)
        assert printed == sorted(printed), printed  # commit order (every event here committed after the one before)
        err = watcher.err + watcher2.err
        assert sum("stayed locked" in line for line in err) == 1, err  # said once, not once a second
        for line in err:
            assert line.endswith("goes on when the store answers."), err
            assert "psycopg" not in line.lower() and "Traceback" not in line and "[BAD]" not in line, err
        assert len(err) <= 2, err  # a lost connection (when a read met it) and the lock, nothing more


def test_a_watcher_whose_server_went_away_says_so_once_and_goes_on_when_it_is_back(tmp_path):
    """The server cut off for several seconds (every connection closed, the port refusing), then
    back: the watcher says once that the store cannot be reached (not that it is busy), stays
    alive, and prints the event made while it was away when the store answers again."""
    with fresh_schema() as url:
        relay = Cut(url)
        root = tmp_path / "home"
        home = fresh_home(root, url)
        home.run("T-65273")
        watcher = Watcher(root, through(url, relay), f"resolver-watch-{uuid.uuid4().hex[:8]}")
        try:
            watcher.until("Watching from event #")
            ids = [_claim_again(home, url)]
            watcher.until(f"#{ids[-1]} ")
            relay.cut()
            ids.append(_claim_again(home, url))  # made while the watcher cannot reach the store
            end = time.monotonic() + GUARD_S
            while not watcher.err:
                assert time.monotonic() < end and watcher.proc.poll() is None, (watcher.out, watcher.err)
                time.sleep(0.05)
            time.sleep(3.0)  # several reads fail meanwhile: still one sentence
            relay.join()
            watcher.until(f"#{ids[-1]} ")
            ids.append(_claim_again(home, url))
            watcher.until(f"#{ids[-1]} ")
        finally:
            code = watcher.stop() if watcher.proc.poll() is None else watcher.proc.returncode
        assert code == 0
        assert _event_ids(watcher.out) == ids, watcher.out
        assert len(watcher.err) == 1, watcher.err
        said = watcher.err[0]
        assert said.startswith("Cannot") and "busy" not in said and "no free connection" not in said, said
        assert said.endswith("goes on when the store answers.") and "psycopg" not in said.lower(), said
