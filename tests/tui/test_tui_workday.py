"""The app for an all-day approver: any terminal size, stale reads, busy and refused keys, the
pane's focus and scroll, the outcome line, the queue's sorts and the compare picker."""

from __future__ import annotations

import asyncio
import threading

from tui_helpers import make_app, monday_home, pane_text, screen_text, select, settle

T65273 = "T-65273-agent-chat-small-1"
T24410 = "T-24410-agent-chat-small-1"


async def wait_for(pilot, predicate, seconds: float = 10.0) -> bool:
    """Wait on a predicate (not a fixed sleep): True once it holds, False after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


async def test_at_80_by_24_the_queue_shows_amounts_statuses_help_and_quit(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = screen_text(app)
        assert "119.00" in screen and "42.00" in screen
        rows = [line for line in screen.splitlines() if "age…chat-small" in line]
        assert len(rows) >= 5 and all("waiting" in line for line in rows), screen
        assert "7 all 16" in screen and "clock Mon" in screen, screen[:400]  # the bars fit too
        footer = screen.splitlines()[-1]
        assert "Help" in footer and "Quit" in footer
        assert "T-65273-age…chat-small-1" in screen  # the run ID elided in the middle


async def test_wide_terminals_show_every_column_and_the_pane_takes_the_rest(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        assert app.queue.table.shown == ["run", "ticket", "customer", "actions", "total", "role", "age", "status"]
        table, pane = app.queue.table.region, app.queue.query_one("#detail").region
        assert table.height <= app.queue.table.row_count + 2  # no empty rows under the runs
        assert pane.height > 60 // 2


async def test_at_100_by_30_the_actions_role_digest_and_keys_show_without_scrolling(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        screen = screen_text(app)
        for text in (
            "1. request_refund",
            "payment PAY-507862-2",
            "Reply to the customer",
            "Who may approve: team lead",
            "Digest: ",
            "Keys: a approve",
        ):
            assert text in screen, text


async def test_a_slow_read_that_lands_after_a_newer_refresh_is_dropped(demo_home, monkeypatch):
    """The case as found: a slow read starts, the run is approved elsewhere, R shows it done, then
    the slow read lands: the pane stays done."""
    queue = demo_home.queue
    real = queue.run
    armed, read, release = threading.Event(), threading.Event(), threading.Event()

    def slow_run(run_id, approver, **kw):
        detail = real(run_id, approver, **kw)
        if armed.is_set() and not read.is_set():
            read.set()
            release.wait(10)
        return detail

    monkeypatch.setattr(queue, "run", slow_run)
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("7")  # every status: the run stays in the list once it is done
        await settle(pilot)
        await select(pilot, T65273)
        armed.set()
        app.queue.load_detail(T65273)  # the slow read: it has read "waiting approval"
        assert await asyncio.to_thread(read.wait, 10)
        digest = demo_home.store.load(T65273).proposal.digest
        monday_home(demo_home.root).approve(T65273, "team_lead", "Bob", digest=digest)
        await pilot.press("R")
        assert await wait_for(pilot, lambda: app.queue.detail is not None and app.queue.detail.status == "done")
        release.set()
        await settle(pilot)
        assert app.queue.detail.status == "done"
        assert app.queue.why_not("approve") is not None
        assert "done" in pane_text(app).splitlines()[0]


async def test_a_dimmed_key_says_why(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T65273)
        await pilot.press("d")  # T-65273 has only this run
        await settle(pilot)
        assert any("only this run" in n.message for n in app._notifications)


async def test_enter_focuses_the_pane_and_j_scrolls_it(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await select(pilot, T65273)
        pane = app.queue.query_one("#detail")
        await pilot.press("enter")
        await settle(pilot)
        assert pane.has_focus
        await pilot.press("j", "j", "j")
        await settle(pilot)
        assert pane.scroll_y > 0 and app.queue.selected_id == T65273
        await pilot.press("escape")
        await pilot.press("j")
        await settle(pilot)
        assert app.queue.selected_id != T65273  # back on the table, j moves the cursor


async def test_while_a_decision_runs_its_keys_are_dimmed_and_the_outcome_stays(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T24410)
        app.queue.busy = T24410
        await pilot.pause()
        keys = str(app.queue.query_one("#detail-keys").render())
        assert "Keys: none" in keys and "in progress" in keys
        assert app.queue.check_action("approve", ()) is None
        app.queue.busy = ""
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        app.clear_notifications()
        await settle(pilot)
        assert app.queue.selected_id == T24410
        assert "Outcome: " in pane_text(app)


async def test_three_runs_of_T90103_can_show_run_1_against_run_2(demo_home):
    """With three runs, `d` compared only with the latest ("the two runs propose the same actions")
    and never showed run 2, which differs."""
    from resolver_tui.screens.dialogs import PickRunScreen
    from resolver_tui.screens.text import CompareScreen

    third = demo_home.run("T-90103", repeat=1)  # proposes what run 1 proposes
    run1, run2 = "T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2"
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("7")
        await settle(pilot)
        await select(pilot, run1)
        assert app.queue.detail.others == [run2, third.run_id]
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, PickRunScreen)
        assert run2 in screen_text(app) and third.run_id in screen_text(app)
        await pilot.press("enter")  # the first choice: run 2
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        body = str(app.screen.query_one("#lines-body").render())
        assert f"--- {run1}" in body and f"+++ {run2}" in body
        assert "- create_return_label" in body  # run 2 differs from run 1
        assert "The two runs propose the same actions." not in body


async def test_the_queue_sorts_by_key_and_by_header_click(demo_home):
    from textual.widgets import DataTable
    from textual.widgets.data_table import ColumnKey

    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.queue.table
        await pilot.press("s", "s")  # default -> age -> amount
        await settle(pilot)
        assert app.queue.sort == "amount" and "sorted by amount" in screen_text(app)
        totals = [table.summaries[r].total_amount for r in table.summaries]
        assert totals[0] == "119.00" and [float(t) for t in totals] == sorted((float(t) for t in totals), reverse=True)
        await pilot.press("s")
        await settle(pilot)
        assert app.queue.sort == "role"
        assert table.summaries[next(iter(table.summaries))].required_role == "team_lead"
        table.post_message(DataTable.HeaderSelected(table, ColumnKey("total"), 4, table.columns["total"].label))
        await settle(pilot)
        assert app.queue.sort == "amount"
