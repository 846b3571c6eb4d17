"""Issue 12, the rest: corrupt runs counted apart, the "mine" filter, and history in the app."""

from __future__ import annotations

import sqlite3

from resolver_tui.widgets.bars import FilterBar
from tui_helpers import make_app, settle

T65273 = "T-65273-agent-chat-small-1"


async def test_a_corrupt_run_is_counted_apart_in_the_filter_bar(demo_home):
    waiting = demo_home.store.counts()["waiting_approval"]
    with sqlite3.connect(demo_home.store.path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (T65273,))
    app = make_app(demo_home)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        bar = str(app.queue.query_one(FilterBar).render())
        assert f"1 waiting approval {waiting - 1} " in bar
        assert "corrupt 1" in bar


async def test_m_shows_only_the_waiting_runs_my_role_may_approve(demo_home):
    waiting = {r.run_id: r for r in demo_home.queue.page("waiting_approval", limit=500).rows}
    for role, allowed in (("agent", {"agent"}), ("team_lead", {"agent", "team_lead"})):
        app = make_app(demo_home, role=role, name="Ana")
        async with app.run_test(size=(160, 40)) as pilot:
            await settle(pilot)
            await pilot.press("m")
            await settle(pilot)
            shown = set(app.queue.summaries)
            expected = {rid for rid, r in waiting.items() if r.required_role in allowed}
            assert shown == expected and shown, role
            assert role != "agent" or shown < set(waiting)  # the filter leaves some out
            assert "8 mine" in str(app.queue.query_one(FilterBar).render())
            await pilot.press("m")  # m again: every waiting run
            await settle(pilot)
            assert set(app.queue.summaries) == set(waiting)


async def test_mine_leaves_out_a_corrupt_run(demo_home):
    with sqlite3.connect(demo_home.store.path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (T65273,))
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert T65273 in app.queue.summaries
        await pilot.press("8")
        await settle(pilot)
        assert app.queue.summaries and T65273 not in app.queue.summaries
