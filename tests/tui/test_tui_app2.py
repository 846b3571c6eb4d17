"""The all-day approver's app, continued from tests/tui/test_tui_workday.py: corrupt runs counted
apart, the "mine" filter, and history."""

from __future__ import annotations

import sqlite3

import pytest
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
        assert f"[1 waiting approval {waiting - 1}]" in bar  # the active filter, in brackets
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


T24410 = "T-24410-agent-chat-small-1"


def _lines_text(app) -> str:
    from resolver_tui.screens.text import HistoryScreen

    assert isinstance(app.screen, HistoryScreen), app.screen
    return str(app.screen.query_one("#lines-body").render())


async def test_h_shows_the_run_s_decisions_and_refusals_with_reasons_made_safe(demo_home):
    from core.ground.errors import ResolverError

    first, second = [r.run_id for r in demo_home.queue.page("waiting_approval", search="T-90103", limit=50).rows][:2]
    demo_home.approve(first, "grace", "Grace")
    with pytest.raises(ResolverError):  # another run of the ticket did it: refused, with an audit row
        demo_home.approve(second, "grace", "Ana")
    refused = next(r for r in demo_home.store.audit(second) if r["decision"].startswith("refused"))
    # a name with an escape is refused now; a release before that stored one as typed
    demo_home.store.append_audit({**refused, "name": "Ana \x1b[2Jcleared"})
    app = make_app(demo_home)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        app.queue.jump_to(second)
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        text = _lines_text(app)
        assert "refused (" in text and "by Ana" in text and "cleared (role grace)" in text
        assert "\x1b" not in text and "[2J" not in text
        assert "one effect per ticket" in text  # the reason, on its own line
        assert "approved" not in text  # the first run's approval is in its own history, not here
    demo_home.reject(T24410, "team_lead", "wrong order", "Tomás")
    async with make_app(demo_home).run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        pilot.app.queue.jump_to(T24410)
        await settle(pilot)
        await pilot.press("h")
        await settle(pilot)
        assert "rejected by Tomás (role team lead)" in _lines_text(pilot.app) and "wrong order" in _lines_text(pilot.app)


async def test_H_shows_only_my_decisions_and_W_the_world_s_changes(demo_home):
    demo_home.approve(T65273, "team_lead", "Tomás")
    demo_home.reject(T24410, "team_lead", "not this one", "Grace")
    app = make_app(demo_home, name="Tomás")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("H")
        await settle(pilot)
        text = _lines_text(app)
        assert T65273 in text and "approved by Tomás (role team lead)" in text
        assert T24410 not in text and "Grace" not in text
        await pilot.press("escape")
        await pilot.press("W")
        await settle(pilot)
        text = _lines_text(app)
        assert "change(s) in the practice world since the last reset" in text
        assert "refund" in text and "[operation " in text


async def test_the_palette_shows_another_approver_s_decisions(demo_home):
    from tui_helpers import type_text

    demo_home.approve(T65273, "team_lead", "Tomás")
    demo_home.reject(T24410, "team_lead", "not this one", "Grace")
    app = make_app(demo_home, name="Tomás")
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await type_text(pilot, "decisions of Grace")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        text = _lines_text(app)
        assert "rejected by Grace (role team lead)" in text and "not this one" in text
        assert T65273 not in text
        assert app.screen.title_text == "Decisions and refusals of Grace"
