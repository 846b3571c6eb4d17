"""Core benchmarks: checkpoint save/load, listing 100,000 runs, executor overhead.

Run: ``python benchmarks/bench_core.py`` (about a minute on 2 cores). Prints figures only; no
assertion, so a busy machine never fails a build (DEVELOPERS.md: speed lives in benchmarks).
"""

from __future__ import annotations

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from core.clock import FixedClock
from core.home import Home
from core.state import Evidence, Message

N_RUNS = 100_000


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms"


def bench_save_load(home: Home, label: str, state, rounds: int = 200) -> None:
    saves, loads = [], []
    for _ in range(rounds):
        t = time.perf_counter()
        home.store.save(state)
        saves.append(time.perf_counter() - t)
        t = time.perf_counter()
        state = home.store.load(state.run_id)
        loads.append(time.perf_counter() - t)
    size = len(state.model_dump_json())
    print(f"{label:<28} ({size / 1024:.0f} KiB): save {percentiles(saves)}; load {percentiles(loads)}")


def fill_runs(home: Home, n: int) -> None:
    template = home.run("T-65273")
    row = sqlite3.connect(home.store.path).execute("SELECT * FROM runs WHERE run_id = ?", (template.run_id,)).fetchone()
    cols = [d[1] for d in sqlite3.connect(home.store.path).execute("PRAGMA table_info(runs)")]
    statuses = ["waiting_approval", "done", "done", "handed_to_person", "executing", "running", "stopped"]
    rows = []
    base = dict(zip(cols, row, strict=False))
    for i in range(n):
        r = dict(base)
        r["run_id"] = f"T-{i:05d}-agent-chat-small-{i}"
        r["task_id"] = f"T-{i % 99999:05d}"
        r["status"] = statuses[i % len(statuses)]
        r["updated_ts"] = base["updated_ts"] - i
        rows.append(tuple(r[c] for c in cols))
    with sqlite3.connect(home.store.path) as conn:
        conn.executemany(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", rows)


def bench_listing(home: Home) -> None:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "core", "runs", "--status", "waiting_approval", "--home", str(home.root)],
                         capture_output=True, text=True, check=True).stdout
    took = time.perf_counter() - t
    print(f"resolver runs --status waiting_approval with {N_RUNS:,} saved runs: {took:.2f} s "
          f"(whole process, {out.count(chr(10)):,} lines printed)")
    t = time.perf_counter()
    page = home.store.list("waiting_approval", limit=200)
    print(f"store.list one page of {len(page)} waiting runs of {N_RUNS:,}: {(time.perf_counter() - t) * 1000:.1f} ms")


def bench_executor(root: Path) -> None:
    home = Home(root / "exec", clock=FixedClock("2026-10-09T17:00:00-04:00"))
    service_time = 0.0
    from core import world as world_mod

    original = world_mod.World.call_service

    def timed(self, op_id, action):
        nonlocal service_time
        t = time.perf_counter()
        try:
            return original(self, op_id, action)
        finally:
            service_time += time.perf_counter() - t

    world_mod.World.call_service = timed
    ops, total = 0, 0.0
    for _ in range(20):
        state = home.run("T-90103", repeat=1)
        t = time.perf_counter()
        done = home.approve(state.run_id, "agent")
        total += time.perf_counter() - t
        ops += len(done.operations)
    world_mod.World.call_service = original
    print(f"executor overhead per operation (approve + execute, beyond the service call): "
          f"{(total - service_time) / ops * 1000:.2f} ms; service call {service_time / ops * 1000:.2f} ms")


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = Home(root / "save", clock=FixedClock("2026-10-09T17:00:00-04:00"))
        typical = home.run("T-65273")
        bench_save_load(home, "typical state (T-65273)", typical)
        big = home.run("T-90103", repeat=1)
        for step in range(200):
            big.messages.append(Message(role="assistant", step=step, content=json.dumps({"tool": "get_order", "args": {"order_id": "LK-640436"}})))
            big.evidence.append(Evidence(step=step, tool="get_order", args={"order_id": "LK-640436"}, result=big.evidence[0].result))
            big.log("tool_call", f"step {step}")
        bench_save_load(home, "200-step state", big, rounds=100)
        bench_executor(root)
        listing = Home(root / "list", clock=FixedClock("2026-10-09T17:00:00-04:00"))
        t = time.perf_counter()
        fill_runs(listing, N_RUNS)
        print(f"(filled {N_RUNS:,} runs in {time.perf_counter() - t:.1f} s)")
        bench_listing(listing)


if __name__ == "__main__":
    main()
