"""The queue: empty home, counts and table per status, the request in the pane, filters."""

from __future__ import annotations

from core.ground.state import STATUSES
from resolver_tui.keys import help_rows
from resolver_tui.screens.dialogs import ConfirmScreen
from resolver_tui.screens.help import HelpScreen
from resolver_tui.screens.text import CompareScreen, TraceScreen
from tui_helpers import make_app, pane_text, screen_text, select, settle, type_text

T65273 = "T-65273-agent-chat-small-1"


async def test_empty_home_says_how_to_fill_it_and_L_loads_the_demo(home):
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "resolver run T-65273" in text and "press L" in text
        await pilot.press("L")
        await settle(pilot)
        assert app.screen.counts["waiting_approval"] == 8
        assert app.screen.table.row_count == 8
        await pilot.press("L")  # not offered any more: nothing happens
        await settle(pilot)
        assert sum(home.store.counts().values()) == 16


async def test_counts_and_table_for_every_status(demo_home):
    counts = demo_home.store.counts()
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "1 waiting approval 8" in text and "7 all 16" in text and "2d 16h" in text
        for i, status in enumerate(STATUSES):  # the number keys follow STATUSES' order
            await pilot.press(str(i + 1))
            await settle(pilot)
            table = app.screen.table
            assert table.row_count == counts.get(status, 0), status
            assert {app.screen.summaries[k.value].status for k in table.rows} == {status}
        await pilot.press("7")
        await settle(pilot)
        assert app.screen.table.row_count == 16
        await pilot.press("1")
        await settle(pilot)
        first = app.screen.table.coordinate_to_cell_key((0, 0)).row_key.value
        assert first == T65273  # waiting runs oldest first


async def test_the_full_request_is_in_the_pane(demo_home):
    state = demo_home.store.load(T65273)
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.selected_id == T65273
        text = pane_text(app)
        for needle in (
            "Approval needed for run T-65273-agent-chat-small-1",
            "nothing has happened yet",
            "request_refund       LK-507862  119.00 CAD  RFD-DOUBLE  payment PAY-507862-2",
            "Who may approve: team lead or above",
            "Evidence:",
            "get_payments",
            "Reply draft:",
            f"Digest: {state.proposal.short_digest} (sha256 {state.proposal.digest})",
            "Your role, team lead, may approve this (it needs team lead or above).",
        ):
            assert needle in text, needle
        await select(pilot, "T-90103-agent-chat-small-1")
        assert "T-90103 has 2 runs; press d to compare." in pane_text(app)


async def test_compare_trace_help_and_filter(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "T-90103-agent-chat-small-1")
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, CompareScreen)
        text = str(app.screen.query_one("#lines-body").render())
        assert "--- T-90103-agent-chat-small-1" in text and "+++ T-90103-agent-chat-small-2" in text
        assert "- create_return_label LK-640436 PLANTER reason damaged (return shipping: free)" in text
        await pilot.press("escape")
        await pilot.press("t")
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        trace = str(app.screen.query_one("#lines-body").render())
        assert "  1  2026-10-09T16:34:00-04:00  created" in trace and "outcome          step 4: resolve (rule W5)" in trace
        await pilot.press("escape")
        await pilot.press("question_mark")
        await settle(pilot)
        assert isinstance(app.screen, HelpScreen)
        keys = [str(s.render()) for s in app.screen.query(".help-key")]
        texts = [str(s.render()) for s in app.screen.query(".help-text")]
        assert list(zip(keys, texts, strict=True)) == help_rows()  # each description beside its key
        await pilot.press("escape")
        await pilot.press("slash")
        await type_text(pilot, "LK-640436")
        await pilot.press("enter")
        await settle(pilot)
        assert sorted(app.screen.summaries) == ["T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2"]
        await pilot.press("escape")  # clears the filter
        await settle(pilot)
        assert app.screen.table.row_count == 8


async def test_refresh_notices_another_process_and_keeps_the_selection(demo_home, tmp_path):
    from tui_helpers import monday_home

    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "T-24410-agent-chat-small-1")
        other = monday_home(demo_home.root)  # another process on the same home
        other.reject("T-90103-agent-chat-small-1", "grace", "Wrong item.", "Grace")
        await pilot.press("R")
        await settle(pilot)
        assert app.screen.selected_id == "T-24410-agent-chat-small-1"
        assert app.screen.counts["waiting_approval"] == 7
        assert "T-90103-agent-chat-small-1" not in app.screen.summaries


async def test_corrupt_checkpoint_is_marked_and_nothing_is_allowed(demo_home):
    import sqlite3

    with sqlite3.connect(demo_home.store.path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (T65273,))
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.selected_id == T65273
        assert "corrupt" in screen_text(app)
        assert "The checkpoint of run T-65273-agent-chat-small-1 is corrupt" in pane_text(app)
        assert app.screen.check_action("approve", ()) is None
        await pilot.press("a")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)


async def _wait_for(pilot, predicate, seconds: float = 10.0) -> bool:
    """Wait on a predicate (not a fixed sleep): True once it holds, False after ``seconds``."""
    for _ in range(int(seconds / 0.05)):
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


async def test_the_timer_refreshes_by_itself_and_pauses_while_a_dialog_is_open(demo_home):
    from resolver_tui.app import ResolverApp
    from resolver_tui.screens.dialogs import ConfirmScreen
    from tui_helpers import monday_home

    app = ResolverApp(demo_home, "team_lead", "Tomás", refresh_interval=0.1)
    other = monday_home(demo_home.root)  # another process on the same home
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "T-24410-agent-chat-small-1")
        other.reject("T-90103-agent-chat-small-2", "grace", "Run again by mistake.", "Grace")
        assert await _wait_for(pilot, lambda: app.queue.counts.get("waiting_approval") == 7)
        assert app.queue.selected_id == "T-24410-agent-chat-small-1"

        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        other.reject("T-45114-agent-chat-small-1", "grace", "Customer withdrew.", "Grace")
        assert not await _wait_for(pilot, lambda: app.queue.counts.get("waiting_approval") == 6, seconds=0.6)
        await pilot.press("escape")
        await settle(pilot)
        assert await _wait_for(pilot, lambda: app.queue.counts.get("waiting_approval") == 6)


async def test_the_palette_jumps_to_a_run_by_id(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await type_text(pilot, "T-97580-agent-chat-small-1")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.queue.selected_id == "T-97580-agent-chat-small-1"
        assert "Trace so far:" in pane_text(app)


async def test_a_timer_refresh_never_overlaps_the_previous_one(demo_home, monkeypatch):
    import threading

    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        gate, calls, real_page = threading.Event(), [], demo_home.queue.page

        def slow_page(*args, **kwargs):
            calls.append(args)
            gate.wait(10)
            return real_page(*args, **kwargs)

        monkeypatch.setattr(demo_home.queue, "page", slow_page)
        app.queue.refresh_on_timer()
        await pilot.pause(0.1)
        app.queue.refresh_on_timer()  # the first read is still running: these wait their turn
        app.queue.refresh_on_timer()
        await pilot.pause(0.1)
        assert len(calls) == 1
        gate.set()
        await settle(pilot)
        app.queue.refresh_on_timer()
        await settle(pilot)
        assert len(calls) == 2 and app.queue.counts["waiting_approval"] == 8


async def test_a_refresh_asked_for_before_the_cursor_moved_never_moves_it_back(demo_home):
    """The timer's refresh keeps the selection as it is when its page lands: a refresh asked for
    on T-24410, landing after the cursor moved to T-65273, moved it back (a flaky CI run of the
    timer test at 0.1 s found it)."""
    from resolver_tui.app import ResolverApp

    app = ResolverApp(demo_home, "team_lead", "Tomás", refresh_interval=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, "T-24410-agent-chat-small-1")
        app.queue.reload()  # asked for with T-24410 selected
        app.queue.jump_to("T-65273-agent-chat-small-1")  # the approver moves before the page lands
        await settle(pilot)
        assert app.queue.table.current == "T-65273-agent-chat-small-1"
        assert app.queue.selected_id == "T-65273-agent-chat-small-1"
