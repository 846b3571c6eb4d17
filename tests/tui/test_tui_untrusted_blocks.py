"""Untrusted text in the app: text that cannot pose as the request in the pane and both dialogs,
widths in cells in the runs table, a pasted two-line reason refused (never cut), and one wording
(no "may approve" beside a refusal of approve; who approved a handed-over run)."""

from __future__ import annotations

import sqlite3

from core.api.views import Approver
from resolver_tui.screens.dialogs import ConfirmScreen, RejectScreen
from rich.cells import cell_len
from textual import events
from textual.widgets import Input
from tui_helpers import make_app, pane_text, screen_text, select, settle

from helpers import FORGED, T65273_RUN, assert_marked, forge

JAPANESE = "山田太郎山田太郎山田太郎山田太郎"
"""A 16-character Japanese customer name: 32 cells."""


def _dialog_text(app) -> str:
    return str(app.screen.query_one("#dialog-body").render())


async def test_forged_request_lines_stay_in_marked_blocks_in_the_pane_and_both_dialogs(demo_home, monkeypatch):
    forge(monkeypatch, demo_home.root)
    app = make_app(demo_home, name=FORGED)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await select(pilot, T65273_RUN)
        assert_marked(pane_text(app), "the pane")
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert_marked(_dialog_text(app), "the approve dialog", least=1)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, RejectScreen)
        assert_marked(_dialog_text(app), "the reject dialog", least=1)
        assert "Reply to the customer: the reply will not be sent." in _dialog_text(app)


async def test_a_wide_customer_name_leaves_the_status_column_whole_at_100_columns(demo_home):
    with sqlite3.connect(demo_home.store.path) as conn:  # the test double: data/ has no such name
        conn.execute("UPDATE runs SET customer = ? WHERE run_id = ?", (JAPANESE, T65273_RUN))
    app = make_app(demo_home)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        row = next((line for line in text.splitlines() if "T-65273" in line and "山田" in line), text)
        assert row.rstrip().endswith("waiting"), row
        shown = row[row.index("山") : row.index("…") + 1]
        assert cell_len(shown) <= 16, shown


async def test_run_ids_are_whole_at_200_columns(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        await pilot.press("7")  # every status: the executing T-90104 has the longest run ID
        await settle(pilot)
        assert "T-90104-agent_structured-chat-strong-1" in screen_text(app)


async def test_a_pasted_two_line_reason_is_refused_whole_with_the_cli_sentence(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        box = app.screen.query_one("#reason", Input)
        box.post_message(events.Paste("wrong order\nStatus: done"))
        await settle(pilot)
        assert box.value == ""  # never its first line alone
        said = str(app.screen.query_one("#reason-error").render())
        assert said == "The reason must be one line (it holds a line break); nothing was decided."
        box.post_message(events.Paste("wrong order"))
        await settle(pilot)
        assert box.value == "wrong order"


async def test_may_approve_never_stands_beside_a_refusal_of_approve(demo_home):
    first, second = [r.run_id for r in demo_home.queue.page("waiting_approval", search="T-90103", limit=50).rows][:2]
    demo_home.approve(first, "grace", "Grace")
    detail = demo_home.queue.run(second, Approver("grace", "Grace"))
    assert detail.offers["approve"] and "one effect per ticket" in detail.offers["approve"]
    assert not any("may approve" in note for note in detail.notes), detail.notes
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        await select(pilot, second)
        text = pane_text(app)
        assert "one effect per ticket" in text and "you may approve" not in text and "may approve this" not in text


def test_a_handed_over_run_says_who_approved_and_what_refused_the_write(demo_home):
    from core.api.views import status_lines

    world = demo_home.world("manual")
    world.request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    demo_home.approve(T65273_RUN, "grace", "Grace")  # a practice home goes on to the write: refused
    state = demo_home.queue.load(T65273_RUN)
    assert state.status == "handed_to_person"
    first = status_lines(state)[0]
    assert first.startswith("Handed to a person: approved by Grace (role grace), then the service refused the write:")
    assert "stopped by" not in first


LONG_FORGED = (
    "I was charged for a lamp shade that arrived broken and I would like a new one sent please ok "
    "Who may approve: agent or above\n" + "x " * 44 + "Digest: 000000000000 (agent may approve)"
)
"""A new user's input: lines long enough that the screen wraps them, with the request's own lines
where a wrapped row would begin, to pose as the request."""

FORGED_NEEDLES = ("approve: agent or above", "Digest: 000000000000")


def assert_rows_marked(text: str, where: str) -> int:
    """Every screen row holding a forged needle holds a mark before it (``│ `` of a block, ``↳``
    of a folded row, ``⏎`` of a one-line field) after the frame's own first column. Returns how
    many such rows there were."""
    seen = 0
    for row in text.splitlines():
        for needle in FORGED_NEEDLES:
            if needle in row:
                seen += 1
                inner = row[1:] if row[:1] in "│█▊┃▌▐" else row
                before = inner[: inner.index(needle)]
                assert "│ " in before or "↳" in before or "⏎" in before, f"{where}: an unmarked row: {row!r}"
    return seen


async def test_wrapped_rows_of_untrusted_text_keep_their_mark_on_screen(demo_home, monkeypatch):
    """A new user's finding: at 100 columns the pane wrapped a block's long line itself, and its
    second row showed ``Who may approve: agent or above`` at the margin. Rows are folded by
    core with a mark on each (the shipped data did it too: T-65273's reason, at 120 columns)."""
    import helpers

    monkeypatch.setattr(helpers, "FORGED", LONG_FORGED)
    forge(monkeypatch, demo_home.root)
    app = make_app(demo_home)
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await select(pilot, T65273_RUN)
        await pilot.press("enter")
        seen = 0
        for _ in range(12):  # the whole pane, scrolled a page at a time
            seen += assert_rows_marked(screen_text(app), "the pane")
            await pilot.press("pagedown")
            await settle(pilot)
        assert seen > 0, "the test double did not reach the screen"
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert_rows_marked(screen_text(app), "the approve dialog")
