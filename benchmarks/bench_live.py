"""How soon a change committed on one connection shows in another app on the same team store
(the live queue, by PostgreSQL's NOTIFY).

``python benchmarks/bench_live.py`` makes a schema of its own on the tests' server
(``RESOLVER_TEST_PG``, else ``postgresql://127.0.0.1:5432/test``), saves a waiting run, starts the
approvals app on it (Textual's headless ``run_test``, 160x40, polling off: ``refresh_interval=None``)
with the run in the pane, and then, 30 times, a colleague on another connection (a second
:class:`~core.api.home.Home` in a thread, its own pooled connection) claims or releases the run. Each
delay is from the colleague's commit (the moment ``Home.mark`` returns, just after the server
acknowledged the commit: the delay is, if anything, under-stated by that acknowledgement's trip)
to the first frame the app hands its terminal that shows the change in the pane (the claim's
sentence there or gone). A frame is the compositor's update rendered to the terminal's text, as
``bench_tui.py`` takes it. Prints the median and p95; target under 1 s.

A second section does the same for the world: the colleague makes a manual
refund of 1.00 CAD on T-65273's order (a write of the practice world, heard by migration 20's
notification), and the delay runs to the first frame whose pane's "What changed since the agent
looked" names the new refunded total. Target under 1 s.

``--quick``: 6 changes (a smoke run). Nothing is asserted; the schema is dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from core.api.home import Home
from core.ground.clock import FixedClock

from harness import figure, heading, median, ms, pct, pg_server

RUN = "T-65273-agent-chat-small-1"
MONDAY = "2026-01-05T09:00:00+00:00"
TARGET_S = 1.0
GUARD_S = 30.0


class Frames:
    """Every frame the app hands its terminal: ``(time, whether the pane shows a claim)``."""

    def __init__(self, app: Any) -> None:
        self.seen: list[tuple[float, bool | None]] = []
        self.world: list[tuple[float, str]] = []
        original = app._display

        def display(screen: Any, renderable: Any) -> None:
            original(screen, renderable)
            if renderable is None or app._batch_count:
                return
            render = getattr(renderable, "render_segments", None)
            if render is not None:
                render(app.console)
            queue = getattr(app, "queue", None)
            if queue is not None and screen is queue and queue.pane.shown_run == RUN and queue.detail is not None:
                now = time.perf_counter()
                self.seen.append((now, queue.detail.claim is not None))
                decision = queue.detail.decision
                self.world.append((now, "\n".join(decision.world) if decision is not None else ""))

        app._display = display

    def first_world(self, since: float, text: str) -> float | None:
        for t, shown in self.world:
            if t >= since and text in shown:
                return t
        return None

    def first(self, since: float, claimed: bool) -> float | None:
        for t, shown in self.seen:
            if t >= since and shown is claimed:
                return t
        return None


async def _shown_and_listening(pilot, queue) -> None:
    """Wait until the app's pane shows T-65273's run with its detail and its listener is up (the
    measured changes start from there); exits with a sentence after :data:`GUARD_S`."""
    end = time.monotonic() + GUARD_S
    while not (queue.pane.shown_run == RUN and queue.detail is not None and queue.live.listening(0)):
        if time.monotonic() > end:
            sys.exit("The app never showed the run.")
        await pilot.pause(0.02)


async def measure_world(url: str, changes: int) -> list[float]:
    """The delays of ``changes`` manual refunds of 1.00 CAD by a colleague, each to the first
    frame of the other app whose "What changed" shows the new refunded total."""
    from resolver_tui.app import ResolverApp

    root = Path(tempfile.mkdtemp(prefix="bench-live-world-"))
    mine = Home(root / "a", clock=FixedClock(MONDAY), store=url)
    mine.reset(everything=True)  # the world built again: no refund of an earlier section
    mine.run("T-65273")
    other = Home(root / "b", clock=FixedClock(MONDAY), store=url)
    app = ResolverApp(mine, "team_lead", "Tomás", refresh_interval=None)
    delays: list[float] = []
    async with app.run_test(size=(160, 40)) as pilot:
        frames = Frames(app)
        queue = app.queue
        await _shown_and_listening(pilot, queue)
        for i in range(changes):
            await asyncio.to_thread(other.manual_refund, f"bench-{i}", "LK-507862", "1.00", "GOODWILL", "PAY-507862-2")
            committed = time.perf_counter()
            total = f"then {i + 1}.00"
            end = time.monotonic() + GUARD_S
            while (shown := frames.first_world(committed, total)) is None:
                if time.monotonic() > end:
                    sys.exit(f"Refund {i + 1} never showed in the pane.")
                await pilot.pause(0.005)
            delays.append(shown - committed)
            await pilot.pause(0.05)
    return delays


async def measure(url: str, changes: int) -> list[float]:
    from resolver_tui.app import ResolverApp

    root = Path(tempfile.mkdtemp(prefix="bench-live-"))
    mine = Home(root / "a", clock=FixedClock(MONDAY), store=url)
    mine.run("T-65273")
    other = Home(root / "b", clock=FixedClock(MONDAY), store=url)
    app = ResolverApp(mine, "team_lead", "Tomás", refresh_interval=None)
    delays: list[float] = []
    async with app.run_test(size=(160, 40)) as pilot:
        frames = Frames(app)
        queue = app.queue
        await _shown_and_listening(pilot, queue)
        for i in range(changes):
            claim = i % 2 == 0
            await asyncio.to_thread(other.mark, "claim" if claim else "release", RUN, "grace", "Ana")
            committed = time.perf_counter()
            end = time.monotonic() + GUARD_S
            while (shown := frames.first(committed, claim)) is None:
                if time.monotonic() > end:
                    sys.exit(f"Change {i + 1} never showed.")
                await pilot.pause(0.005)
            delays.append(shown - committed)
            await pilot.pause(0.05)  # the next change starts after this one's reads are done
    return delays


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="6 changes, for a smoke run")
    args = parser.parse_args(argv)
    changes = 6 if args.quick else 30
    print(f"bench_live ({'quick' if args.quick else 'full'}): {changes} changes; python {sys.version.split()[0]}")
    import psycopg
    from core.stores.postgres.database import forget

    server = pg_server()
    schema = f"bench_live_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    url = f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{schema}"
    try:
        heading(f"A colleague's claim or release, from its commit to the other app's repaint ({changes} changes)")
        delays = asyncio.run(measure(url, changes))
        figure("commit to repaint, median", ms(median(delays)), f"< {TARGET_S:.0f} s", median(delays) < TARGET_S)
        figure("commit to repaint, p95", ms(pct(delays, 95)), f"< {TARGET_S:.0f} s", pct(delays, 95) < TARGET_S)
        figure("commit to repaint, worst", ms(max(delays)), "", None)
        refunds = max(3, changes // 3)
        heading(f"A colleague's manual refund, from its commit to the other app's \"What changed\" ({refunds} refunds)")
        delays = asyncio.run(measure_world(url, refunds))
        figure("commit to repaint, median", ms(median(delays)), f"< {TARGET_S:.0f} s", median(delays) < TARGET_S)
        figure("commit to repaint, p95", ms(pct(delays, 95)), f"< {TARGET_S:.0f} s", pct(delays, 95) < TARGET_S)
        figure("commit to repaint, worst", ms(max(delays)), "", None)
    finally:
        forget(url)
        with psycopg.connect(server, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
    print("\nbench_live done")


if __name__ == "__main__":
    main()
