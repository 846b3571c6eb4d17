"""How soon a colleague's claim shows as a line of ``resolver watch``.

``python benchmarks/bench_watch.py`` starts a real ``python -m core watch --as grace`` process and,
``--samples`` times (default 50), a colleague in this process claims the waiting T-65273 run
(one ``claim`` event) and releases it (none). Each delay is from the moment the claim's
``Home.mark`` returns (just after the server acknowledged the commit: the delay is, if anything,
under-stated by that trip) to the moment this process reads the watcher's line of that event
from its stdout. Two homes side by side:

- the team store (a schema of its own on the tests' server, ``RESOLVER_TEST_PG``, else
  ``postgresql://127.0.0.1:5432/test``): the watcher ``LISTEN``s; target p99 under 100 ms;
- the home folder's SQLite files: the watcher polls every ``--interval 1`` s (what the team store
  did before it listened), printed for comparison, no target.

``--quick``: 5 samples of each (a smoke run). Nothing is asserted; the schema is dropped at the end.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from harness import figure, heading, median, ms, pct, pg_server

ROOT = Path(__file__).resolve().parent.parent
RUN = "T-65273-agent-chat-small-1"
MONDAY = "2026-01-05T09:00:00+00:00"
TARGET_S = 0.1
GUARD_S = 30.0


class Lines:
    """The watcher's stdout, each line with the moment it was read."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.seen: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, args=(proc,), daemon=True).start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self.lock:
                self.seen.append((time.perf_counter(), line))

    def when(self, start: str) -> float:
        end = time.monotonic() + GUARD_S
        while time.monotonic() < end:
            with self.lock:
                for t, line in self.seen:
                    if line.startswith(start):
                        return t
            time.sleep(0.001)
        sys.exit(f"The watcher printed no line {start!r} within {GUARD_S:.0f} s: {self.seen}")


def measure(root: Path, url: str | None, samples: int) -> list[float]:
    """The delays of ``samples`` claims on the home at ``root`` (``url``: its team store, None:
    its SQLite files), as seen by a watcher process."""
    from core.api.home import Home
    from core.engine.watch import newest_event
    from core.ground.clock import FixedClock

    home = Home(root, clock=FixedClock(MONDAY), store=url)
    home.run("T-65273")
    env = {k: v for k, v in os.environ.items() if k != "RESOLVER_STORE"}
    env["RESOLVER_CONFIG"] = str(root / "config.toml")  # no one's notify command
    if url is not None:
        env["RESOLVER_STORE"] = url
    proc = subprocess.Popen(
        [sys.executable, "-m", "core", "watch", "--as", "grace", "--interval", "1", "--home", str(root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        lines = Lines(proc)
        lines.when("Watching from event #")
        time.sleep(0.5)  # its listener connected
        delays = []
        for _ in range(samples):
            home.mark("claim", RUN, "grace", "Ana")
            committed = time.perf_counter()
            event = newest_event(home.store)
            delays.append(lines.when(f"#{event} ") - committed)
            home.mark("release", RUN, "grace", "Ana")
            time.sleep(random.uniform(0.05, 0.25))  # not in step with the watcher's reads
        return delays
    finally:
        proc.terminate()
        proc.wait(GUARD_S)


def _report(label: str, delays: list[float], target: bool) -> None:
    p50, p99 = median(delays), pct(delays, 99)
    figure(f"{label}: p50", ms(p50), "", None)
    figure(f"{label}: p99 ({len(delays)} claims)", ms(p99), "< 100 ms" if target else "", (p99 < TARGET_S) if target else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 samples of each (a smoke run)")
    parser.add_argument("--samples", type=int, default=50, help="claims per home (default 50)")
    args = parser.parse_args()
    samples = 5 if args.quick else args.samples
    import psycopg

    server = pg_server()
    schema = f"bench_watch_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{schema}"
    try:
        with tempfile.TemporaryDirectory() as tmp:
            heading("A claim to its line of resolver watch (a watcher process, --interval 1)")
            _report("team store (LISTEN)", measure(Path(tmp) / "pg", url, samples), True)
            _report("SQLite home folder (polling)", measure(Path(tmp) / "sqlite", None, samples), False)
    finally:
        from core.stores.postgres.database import forget

        forget(url)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print("\nbench_watch done")


if __name__ == "__main__":
    main()
