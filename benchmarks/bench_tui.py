"""How fast the approvals app opens on a big home and follows the cursor.

``python benchmarks/bench_tui.py [N]`` builds a home with N (default 100,000) saved runs (one
real run of T-65273, copied into the ``runs`` table with SQL under varied run IDs, statuses and
times), then prints:

- launch: from ``run_test`` start to the first page shown in the table (aim: under 1 s);
- key to detail: from a ``down`` key event reaching the app to the next run's detail in the
  pane (aim: under 50 ms), median and worst of 30 presses. (``Pilot.press`` itself waits for
  idle, about 40 ms even on an empty app, so the key is posted directly.)
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.clock import FixedClock, iso, parse_time  # noqa: E402
from core.home import Home  # noqa: E402
from core.state import STATUSES  # noqa: E402
from resolver_tui.app import ResolverApp  # noqa: E402
from textual import events  # noqa: E402

MONDAY = "2026-10-12T09:00:00-04:00"
FRIDAY = "2026-10-09T16:30:00-04:00"


def build(root: Path, n: int) -> Home:
    """A home with ``n`` runs: one real, the rest SQL copies of it."""
    Home(root, clock=FixedClock(FRIDAY)).run("T-65273", repeat=1)
    home = Home(root, clock=FixedClock(MONDAY))
    conn = sqlite3.connect(home.store.path)
    cols = [r[1] for r in conn.execute("PRAGMA table_info(runs)")]
    row = dict(zip(cols, conn.execute("SELECT * FROM runs").fetchone(), strict=False))
    original = row["run_id"]
    start = parse_time(FRIDAY) - timedelta(days=30)
    marks = ", ".join("?" for _ in cols)
    batch = []
    for i in range(1, n):
        run_id = f"T-{10000 + i % 90000:05d}-agent-chat-small-{i // 90000 + 2}"
        at = start + timedelta(seconds=25 * i)
        status = STATUSES[i % len(STATUSES)]
        copy = dict(row, run_id=run_id, task_id=run_id[:7], status=status, updated_at=iso(at),
                    updated_ts=at.timestamp(), state=row["state"].replace(original, run_id).replace(
                        '"status":"waiting_approval"', f'"status":"{status}"'))
        batch.append(tuple(copy[c] for c in cols))
    with conn:
        conn.executemany(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({marks})", batch)
    conn.close()
    return home


async def measure(home: Home) -> tuple[float, list[float]]:
    app = ResolverApp(home, "team_lead", "Bench", refresh_interval=None)
    t0 = time.perf_counter()
    async with app.run_test(size=(120, 40)) as pilot:
        while not (getattr(app, "queue", None) and app.queue.first_page_shown and app.queue.table.row_count
                   and app.queue.detail is not None):
            await asyncio.sleep(0.001)
        launch = time.perf_counter() - t0
        queue = app.queue
        presses = []
        for _ in range(30):
            row = queue.table.cursor_row + 1
            target = queue.table.coordinate_to_cell_key((row, 0)).row_key.value
            t1 = time.perf_counter()
            app.post_message(events.Key("down", None))  # the key itself, without Pilot's idle waits
            while not (queue.detail is not None and queue.detail.run_id == target):
                await asyncio.sleep(0.0005)
            presses.append(time.perf_counter() - t1)
            await pilot.pause()  # let the pane paint before the next key, as at human speed
        await app.workers.wait_for_complete()
    return launch, presses


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        home = build(Path(tmp) / "home", n)
        print(f"built a home with {sum(home.store.counts().values()):,} runs in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        rows = home.store.list("waiting_approval")
        print(f"store.list(waiting_approval): {len(rows)} rows in {(time.perf_counter() - t) * 1000:.1f} ms")
        launch, presses = asyncio.run(measure(home))
        print(f"launch to first page shown: {launch * 1000:.0f} ms (aim < 1000 ms)")
        ordered = sorted(presses)
        print(f"key to detail: median {statistics.median(presses) * 1000:.1f} ms, 90th percentile "
              f"{ordered[int(len(ordered) * 0.9) - 1] * 1000:.1f} ms, worst {ordered[-1] * 1000:.1f} ms "
              f"(press {presses.index(ordered[-1]) + 1}) over {len(presses)} presses (aim < 50 ms)")


if __name__ == "__main__":
    main()
