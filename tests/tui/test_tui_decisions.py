"""Decisions from the app: approve, reject, resume, roles, the weekend and the race."""

from __future__ import annotations

from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.screens.dialogs import ConfirmScreen, RejectScreen
from tui_helpers import FRIDAY, MONDAY, make_app, monday_home, pane_text, screen_text, select, settle, type_text

T65273 = "T-65273-agent-chat-small-1"
T97580 = "T-97580-agent-chat-small-1"
T90104 = "T-90104-agent_structured-chat-strong-1"


async def approve(pilot) -> None:
    await pilot.press("a")
    await settle(pilot)
    assert isinstance(pilot.app.screen, ConfirmScreen)
    await pilot.press("y")
    await settle(pilot)


async def test_approve_T65273_as_team_lead_refunds_once(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        dialog = screen_text(app)
        digest = demo_home.store.load(T65273).proposal.digest
        for needle in (T65273, "request_refund       LK-507862  119.00 CAD", digest, "Approving as: Tomás (role team lead)"):
            assert needle in dialog, needle
        await pilot.press("enter")  # the default is No
        await settle(pilot)
        assert demo_home.store.load(T65273).status == "waiting_approval"
        await approve(pilot)
        state = demo_home.store.load(T65273)
        assert state.status == "done"
        assert state.approval.name == "Tomás" and state.approval.role == "team_lead"
        assert [op.calls for op in state.operations] == [1, 1]
        refunds = demo_home.world().refunds_of("LK-507862")
        assert len(refunds) == 1 and refunds[0]["amount"] == "119.00"
        assert app.screen.counts["waiting_approval"] == 7 and app.screen.counts["done"] == 3
        # The run left the waiting filter: the app follows it, so its outcome stays in view.
        assert app.screen.selected_id == T65273 and app.screen.status is None
        assert "request_refund LK-507862: done" in pane_text(app)
        await pilot.press("6")
        await settle(pilot)
        await select(pilot, T65273)
        text = pane_text(app)
        assert "Approved by Tomás (role team lead)" in text and "request_refund LK-507862: done" in text


async def test_reject_needs_a_reason_and_records_it(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, RejectScreen)
        await pilot.press("enter")  # empty: refused, the dialog stays
        await settle(pilot)
        assert isinstance(app.screen, RejectScreen)
        assert "A rejection needs a reason." in screen_text(app)
        await type_text(pilot, "Charged twice? Check the bank first.")
        await pilot.press("enter")
        await settle(pilot)
        state = demo_home.store.load(T65273)
        assert state.status == "handed_to_person"
        assert state.rejection.reason == "Charged twice? Check the bank first." and state.rejection.name == "Tomás"
        assert demo_home.world().refunds_of("LK-507862") == []


async def test_resume_the_crashed_running_run_repeats_no_model_call(demo_home, tmp_path):
    fresh = Home(tmp_path / "fresh", clock=FixedClock(FRIDAY))
    expected = fresh.run("T-97580", repeat=1).usage.model_calls
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await select(pilot, T97580)
        assert "Press u to continue its loop" in pane_text(app) and "Trace so far:" in pane_text(app)
        await pilot.press("u")
        await settle(pilot)
    state = demo_home.store.load(T97580)
    assert state.status != "running"
    assert state.usage.model_calls == expected


async def test_resume_the_run_stopped_before_a_write_finishes_it_once(demo_home):
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        await select(pilot, T90104)
        assert "Press u to reconcile and finish it" in pane_text(app)
        await pilot.press("u")
        await settle(pilot)
    state = demo_home.store.load(T90104)
    assert state.status == "done"
    assert state.operations[0].calls == 1
    assert len(demo_home.world().refunds_of("LK-793996")) == 1


async def test_an_agent_cannot_approve_T65273(demo_home):
    before = demo_home.store.load(T65273)
    app = make_app(demo_home, role="agent", name="Amira")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.selected_id == T65273
        assert app.screen.check_action("approve", ()) is None
        assert "Needs team lead or above (your role: agent)." in pane_text(app)
        assert f"Not offered: a approve, x reject: You are agent: run {T65273} needs team lead or above." in pane_text(app)
        assert app.screen.check_action("reject", ()) is None  # a reject needs the proposal's role
        await pilot.press("a")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        app.screen.try_action("approve")  # the palette's way in: refused with the reason
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
    after = demo_home.store.load(T65273)
    assert after.status == "waiting_approval" and after.version == before.version
    assert demo_home.store.audit(T65273) == []


async def test_friday_to_monday_shows_the_wait_and_approves(tmp_path):
    friday = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    friday.run("T-65273", repeat=1)
    monday = Home(tmp_path / "home", clock=FixedClock(MONDAY))
    app = make_app(monday)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.table.cells[T65273][6] == "2d 16h"
        assert "2d 16h" in screen_text(app)
        await approve(pilot)
    state = monday.store.load(T65273)
    assert state.status == "done"
    assert state.approval.at.isoformat() == MONDAY


async def test_two_apps_approving_the_same_run_one_wins_the_other_is_told_who(demo_home):
    other = monday_home(demo_home.root)
    alice = make_app(demo_home, name="Alice")
    bob = make_app(other, role="grace", name="Bob")
    async with bob.run_test(size=(120, 40)) as bob_pilot:
        await settle(bob_pilot)
        await bob_pilot.press("a")  # Bob reads the request and opens the dialog ...
        await settle(bob_pilot)
        assert isinstance(bob.screen, ConfirmScreen)
        async with alice.run_test(size=(120, 40)) as alice_pilot:
            await settle(alice_pilot)
            await approve(alice_pilot)  # ... Alice approves first
        await bob_pilot.press("y")
        await settle(bob_pilot)
        message = bob.queue.errors[T65273]
        assert "Alice" in message and "Nothing changed" in message
        # The cursor stays on the lost run (not the next waiting one, where `a` is offered) and
        # the pane names the winner.
        assert bob.queue.selected_id == T65273 and bob.queue.table.current == T65273
        assert bob.queue.detail is not None and bob.queue.detail.status == "done"
        assert "already approved by Alice" in pane_text(bob)
        assert bob.queue.why_not("approve") is not None
        assert any("Alice" in n.message and n.severity == "error" for n in bob._notifications)
    assert [a["name"] for a in demo_home.store.audit(T65273)] == ["Alice"]
    assert len(demo_home.world().refunds_of("LK-507862")) == 1


async def test_after_following_a_decided_run_a_number_key_returns_to_the_queue(demo_home):
    """Regression: after an approval the app showed only that run, and pressing 1 (or 3 after
    a reset) kept the hidden one-run filter, so the list stayed empty."""
    app = make_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await approve(pilot)
        assert app.queue.following and app.queue.search == T65273
        title = next(line for line in screen_text(app).splitlines() if "queue" in line)  # the table's title
        assert f"queue · showing only {T65273} (a number key or esc leaves it)" in title
        await pilot.press("1")
        await settle(pilot)
        assert app.queue.search is None and not app.queue.following
        assert app.queue.table.row_count == 7
        await approve(pilot)  # the next waiting run, then 7 (all) from the one-run view
        await pilot.press("7")
        await settle(pilot)
        assert app.queue.search is None and app.queue.table.row_count == 16


async def test_the_dialogs_fit_an_80_by_24_terminal(demo_home):
    """Regression: at 80x24 the 96-column dialogs hid their No and Cancel buttons."""
    app = make_app(demo_home, role="grace", name="Grace")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for key, buttons in (("a", ("#yes", "#no")), ("x", ("#reject", "#cancel"))):
            await pilot.press(key)
            await settle(pilot)
            for button in buttons:
                region = app.screen.query_one(button).region
                assert region.right <= 80 and region.bottom <= 24, (button, region)
            await pilot.press("escape")
            await settle(pilot)
