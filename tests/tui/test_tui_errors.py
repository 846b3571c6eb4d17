"""Errors are shown in the app, which never crashes: a locked database, a live lease."""

from __future__ import annotations

import re
import sqlite3

from tui_helpers import make_app, pane_text, select, settle

T65273 = "T-65273-agent-chat-small-1"
T90104 = "T-90104-agent_structured-chat-strong-1"


def _told(app) -> str:
    return " ".join(n.message for n in app._notifications)


async def test_a_locked_database_is_a_message_and_nothing_is_lost(demo_home, monkeypatch):
    from core.stores.sqlite import database

    monkeypatch.setattr(database, "BUSY_TIMEOUT_S", 0.2)  # where the connections read it
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T65273)
        holder = sqlite3.connect(demo_home.store.path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            await pilot.press("a")
            await settle(pilot)
            await pilot.press("y")
            await settle(pilot)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert re.search(r"stayed locked by another process for 0\.\d s", _told(app))
        assert app.is_running
        assert demo_home.store.load(T65273).status == "waiting_approval"
        await pilot.press("R")
        await settle(pilot)
        assert app.queue.counts["waiting_approval"] == 8


async def test_a_lease_held_by_another_window_is_a_message(demo_home):
    demo_home.store.acquire_lease(T90104, "resolver-tui@elsewhere:1:abc", 60)
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        await select(pilot, T90104)
        await pilot.press("u")
        await settle(pilot)
        assert "is being executed by resolver-tui@elsewhere" in _told(app)
        assert "is being executed by" in pane_text(app)
        assert demo_home.store.load(T90104).status == "executing"
        assert demo_home.world().refunds_of("LK-793996") == []


async def test_a_store_moved_away_is_one_message_and_no_new_empty_queue(demo_home, tmp_path):
    """A new user's trial: ``mv runs.sqlite`` while the app ran; its next read made a new, empty
    store and the queue showed "No saved runs". Now the reads say where the file went missing,
    once while the toast stands (the timer reads again and again), and nothing is made."""
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert app.queue.counts["waiting_approval"] == 8
        moved = tmp_path / "away.sqlite"
        demo_home.store.path.rename(moved)
        for key in ("R", "7", "1"):
            await pilot.press(key)
            await settle(pilot)
        told = [n.message for n in app._notifications]
        assert told and [m for m in told if "is gone (moved or deleted while in use): put it back" in m] == told[-1:], told
        assert str(demo_home.store.path) in told[-1]
        assert not demo_home.store.path.exists()
        assert app.is_running and app.queue.counts["waiting_approval"] == 8  # the counts read before stay
        moved.rename(demo_home.store.path)  # put back: read again
        await pilot.press("R")
        await settle(pilot)
        assert app.queue.counts["waiting_approval"] == 8 and app.queue.table.row_count == 8
