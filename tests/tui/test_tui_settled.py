"""A key decides only what is shown and current. One test per way a key decided something else in
use, each replayed as it was found (and each failing on the app before the fix).

A burst is the keys of one terminal read: ``Key`` events handed to the app's driver with no
await between them (Pilot's ``press`` waits for the app to be idle after every key, so it never
reproduces one)."""

from __future__ import annotations

import re

from resolver_tui.screens.dialogs import ConfirmScreen
from resolver_tui.screens.text import HistoryScreen
from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input
from textual.widgets._toast import Toast
from tui_helpers import make_app, monday_home, pane_text, screen_text, select, settle

T65273 = "T-65273-agent-chat-small-1"
T90103 = "T-90103-agent-chat-small-1"
T17910 = "T-17910-agent-chat-small-1"


def burst(app, keys: str) -> None:
    """Hand ``keys`` to the app's driver as one terminal read: every ``Key`` event is queued
    before the app handles the first (no await in between)."""
    for character in keys:
        app._driver.process_message(events.Key(_character_to_key(character), character))


def paid(home) -> list:
    """The refunds of T-65273's order (there must be none after a burst)."""
    return home.world().refunds_of("LK-507862")


# -- keys typed ahead -----------------------------------------------------------------------------


async def test_slash_amy_as_one_read_filters_and_decides_nothing(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.queue.selected_id == T65273  # 119.00 CAD, highlighted
        burst(app, "/amy")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        box = app.queue.query_one("#search", Input)
        assert box.has_focus and box.value == "amy"  # the keys went to the box being opened
        assert demo_home.store.load(T65273).status == "waiting_approval" and paid(demo_home) == []


async def test_every_key_typed_with_slash_stays_in_the_box(demo_home):
    """A trial (tmux, one write): ``/ q w e r t y`` left ``werty`` in the box, ``/small-2`` left
    ``smll-2``: the box selected its text when its focus event came, after keys typed with the
    ``/``, and the next key replaced the selection. The box never selects on focus."""
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        box = app.queue.query_one("#search", Input)
        assert box.select_on_focus is False
        burst(app, "/qwerty")
        await settle(pilot)
        assert box.has_focus and box.value == "qwerty"


async def test_a_then_y_as_one_read_never_answers_the_dialog(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        burst(app, "ay")
        await settle(pilot)
        assert demo_home.store.load(T65273).status == "waiting_approval" and paid(demo_home) == []
        assert isinstance(app.screen, ConfirmScreen)  # it is shown, waiting for a key typed after it
        await pilot.press("n")
        await settle(pilot)
        assert demo_home.store.load(T65273).status == "waiting_approval"


async def test_enter_then_j_as_one_read_scrolls_the_run_enter_was_pressed_on(demo_home):
    """``enter j j j j`` as one read (a trial): the j's went to the table, which moved its cursor
    four runs before the pane took the focus, so the approver read another run than the one
    chosen. Enter gives the pane the focus in its own handling, before the keys after it."""
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert app.queue.selected_id == T65273
        app._driver.process_message(events.Key("enter", "\r"))
        burst(app, "jjjj")
        await settle(pilot)
        assert app.queue.pane.has_focus
        assert app.queue.table.current == app.queue.pane.shown_run == T65273
        assert app.queue.pane.scroll_offset.y > 0  # the j's scrolled it


async def test_esc_then_j_as_one_read_moves_the_queue_not_the_pane(demo_home):
    """``esc j`` as one read from the pane: the j goes to the queue the esc returned to (the
    screen asked the pane's ``has_focus``, which follows only once the focus event is handled)."""
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.queue.pane.has_focus and app.queue.table.cursor_row == 0
        app._driver.process_message(events.Key("escape", "\x1b"))
        burst(app, "j")
        await settle(pilot)
        assert app.queue.table.has_focus and app.queue.table.cursor_row == 1
        assert app.queue.pane.scroll_offset.y == 0 and app.queue.pane.shown_run == app.queue.table.current


# -- focus after resume ---------------------------------------------------------------------------


async def test_after_u_the_focus_stays_on_the_queue_and_a_acts_on_the_run_moved_to(home):
    home.run("T-65273")
    home.run("T-90103")
    app = make_app(home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for key in ("g", "u", "1", "j"):
            await pilot.press(key)
            await settle(pilot)
        assert app.queue.table.has_focus and app.queue.selected_id == T90103
        assert pane_text(app).splitlines()[0].startswith(T90103)  # the pane shows the highlighted run
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert f"Approve run {T90103}?" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.queue.table.has_focus  # a dialog closing gives the focus back to the queue


async def test_the_focused_region_shows_in_a_text_capture(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "▶ queue" in text and f"▶ {T65273}" not in text
        await pilot.press("enter")
        await settle(pilot)
        text = screen_text(app)
        assert f"▶ {T65273}" in text and "▶ queue" not in text and "┏" in text  # the pane's heavy border
        await pilot.press("escape")
        await settle(pilot)
        assert "▶ queue" in screen_text(app) and app.queue.table.has_focus


# -- "what changed" goes stale --------------------------------------------------------------------


async def test_the_pane_and_the_dialog_show_a_refund_made_by_another_process(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T17910)
        assert "nothing: the lookups give the same results now." in pane_text(app)
        other = monday_home(demo_home.root)  # another terminal, the same --home
        other.manual_refund("manual-7", "LK-523827", "9.95", "RFD-LATE", "PAY-523827-1")
        app.queue.refresh_on_timer()  # the auto-refresh's tick
        await settle(pilot)
        text = pane_text(app)
        assert "nothing: the lookups give the same results now." not in text
        assert "Preconditions that fail now:" in text
        other.world("manual").request_refund("manual-8", "LK-523827", "0.05", "GOODWILL", "PAY-523827-1")
        await pilot.press("a")  # no refresh in between: the dialog reads the world again itself
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        body = str(app.screen.query_one("#dialog-body").render())
        assert "What changed since the agent looked:" in body and "refunded: 0.00 then 10.00" in body


async def test_a_world_change_while_the_dialog_is_open_refuses_the_approval_and_shows_it(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T17910)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        monday_home(demo_home.root).manual_refund("manual-7", "LK-523827", "9.95", "RFD-LATE", "PAY-523827-1")
        await pilot.press("y")
        await settle(pilot)
        state = demo_home.store.load(T17910)
        assert state.status == "waiting_approval" and state.approval is None
        assert [r["amount"] for r in demo_home.world().refunds_of("LK-523827")] == ["9.95"]  # the other's only
        text = pane_text(app)
        assert "The world changed while you read run" in text and "refunded: 0.00 then 9.95" in text


# -- scroll position kept -------------------------------------------------------------------------


async def test_every_next_run_opens_at_its_top(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pane = app.queue.query_one("#detail")
        await pilot.press("enter", "G")  # read the request down to its digest
        await settle(pilot)
        assert pane.scroll_y > 0
        await pilot.press("escape", "j")
        await settle(pilot)
        assert app.queue.selected_id != T65273 and pane.scroll_y == 0
        assert "Waiting approval. Actions (nothing has happened yet):" in screen_text(app)


# -- 80 columns ------------------------------------------------------------------------------------


async def test_at_80_columns_the_filter_bar_shows_every_filter_and_the_active_one_in_text(demo_home):
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("s")  # a sort has its own place, pushing no filter off
        await settle(pilot)
        text = screen_text(app)
        bar = next(line for line in text.splitlines() if "all 16" in line)
        for n in range(1, 9):
            assert re.search(rf"(^|[ \[]){n} [a-z]", bar), (n, bar)
        assert "8 mine" in bar and "[1 wait" in bar  # the active filter, marked in text
        assert "sorted by newest run" in text


async def test_under_100_columns_a_toast_takes_one_line_and_never_covers_a_modal(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        app.notify("Run T-65273 approved by Grace (grace): now done.\nrequest_refund LK-507862: done", timeout=10)
        await settle(pilot)
        toasts = list(app.screen.query(Toast))
        assert toasts and all(t.region.height == 1 for t in toasts)
        await pilot.press("h")  # the history modal
        await settle(pilot)
        assert isinstance(app.screen, HistoryScreen)
        assert "now done" not in screen_text(app)


# -- help -------------------------------------------------------------------------------------------

SHOWN = {"slash": "/", "question_mark": "?", "escape": "esc", "enter": "enter", "ctrl+p": "ctrl+p"}


async def test_help_lists_every_key_of_the_queue(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        bound = {key for b in [*app.queue.BINDINGS, *app.BINDINGS] for key in b.key.split(",")}  # type: ignore[union-attr]
        await pilot.press("question_mark")
        await settle(pilot)
        cells = [str(key.render()).strip() for key in app.screen.query(".help-key")]  # the key column
        listed = set()
        for cell in cells:
            for token in re.split(r" / |, | ", cell):
                if re.fullmatch(r"\d-\d", token):
                    listed |= {str(n) for n in range(int(token[0]), int(token[2]) + 1)}
                listed.add(token)
        missing = sorted(SHOWN.get(key, key) for key in bound if SHOWN.get(key, key) not in listed)
        assert missing == [], missing
