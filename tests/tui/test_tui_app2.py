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
