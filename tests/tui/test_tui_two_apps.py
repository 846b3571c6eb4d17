"""Two apps on one PostgreSQL queue see each other's decisions, claims and hand-overs by
notification. Both apps run at once in this test's event loop, each with its own
:class:`core.api.home.Home` (its own connections) on one PostgreSQL schema, polling off
(``refresh_interval`` None): a claim (``c``), a hand-over (``o``) and an approval (``a``) typed in
the first app reach the second's table and detail pane by ``NOTIFY`` alone. Each wait is on a
predicate of the second app's state, with a deadline only as a guard.

Textual 8 keeps the running app in a context variable (``active_app``), set by each app's own
task for its messages, so two ``run_test`` contexts nest in one loop: each Pilot posts its keys to
its own app, which handles them in its own task (the test calls nothing of either app that reads
the variable)."""

from __future__ import annotations

from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.screens.dialogs import ConfirmScreen, MarkScreen
from tui_helpers import GUARD_S, MONDAY, make_app, pane_text, select, settle, type_text, until

from pg import fresh_schema

RUN = "T-65273-agent-chat-small-1"


async def test_a_claim_a_handover_and_an_approval_typed_in_one_app_reach_the_other_by_notification(tmp_path):
    with fresh_schema() as url:
        first = Home(tmp_path / "a", clock=FixedClock(MONDAY), store=url)
        second = Home(tmp_path / "b", clock=FixedClock(MONDAY), store=url)
        first.run("T-65273")
        one, two = make_app(first, name="Tomás"), make_app(second, name="Ana")
        async with one.run_test(size=(160, 40)) as p1, two.run_test(size=(160, 40)) as p2:
            for pilot in (p1, p2):
                await settle(pilot)
                await select(pilot, RUN)
                assert pilot.app.queue.refresh_interval is None and pilot.app.queue.live.listening(GUARD_S)
            heard = two.queue.live_heard

            await p1.press("c")
            await until(p2, lambda: "Tomás is on it (claimed 09:00, until 09:30)." in pane_text(two), "the claim in app 2")
            assert two.queue.live_heard > heard

            await p1.press("o")
            await settle(p1)
            assert isinstance(one.screen, MarkScreen)
            await type_text(p1, "Ana")
            await p1.press("enter")
            await type_text(p1, "check the tracking first")
            await p1.press("enter")
            await until(
                p2,
                lambda: "Handed to Ana by Tomás at 09:00: check the tracking first" in pane_text(two),
                "the hand-over in app 2",
            )

            await p2.press("7")  # app 2 shows every run: the approved run stays in its table
            await settle(p2)
            await select(p2, RUN)
            await settle(p1)
            await p1.press("a")
            await settle(p1)
            assert isinstance(one.screen, ConfirmScreen)
            await p1.press("tab", "enter")  # off the default No, onto Approve
            await until(
                p2,
                lambda: two.queue.summaries[RUN].status == "done" and two.queue.counts.get("done") == 1,
                "the approval's outcome in app 2's table",
            )
            await until(p2, lambda: two.queue.detail.status == "done" and "done" in pane_text(two), "the outcome in app 2's pane")
            assert first.store.load(RUN).status == "done"
        assert not one.queue.live.alive and not two.queue.live.alive
