"""Trainer mode: the class played in the app from the command palette."""

from __future__ import annotations

import pytest
from core.api.home import Home
from core.ground.clock import FixedClock
from resolver_tui.app import ResolverApp
from resolver_tui.screens.dialogs import ConfirmScreen
from resolver_tui.screens.text import LinesScreen
from tui_helpers import pane_text, screen_text, select, settle, type_text

T65273 = "T-65273-agent-chat-small-1"


async def simulate(pilot, words: str) -> str:
    """Pick a "Simulate: ..." entry in the palette by typing ``words``; return what it said."""
    await pilot.press("ctrl+p")
    await settle(pilot)
    await type_text(pilot, words)
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, LinesScreen), words
    said = "\n".join(pilot.app.screen.body)
    await pilot.press("escape")
    await settle(pilot)
    return said


@pytest.mark.slow
async def test_the_class_in_trainer_mode_grace_sees_the_refusal(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock("2026-11-29T08:00:00-05:00"))
    app = ResolverApp(home, "grace", "Grace", refresh_interval=None, trainer=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        said = await simulate(pilot, "Simulate: Friday")
        assert "T-65273-agent-chat-small-1 is waiting_approval" in said
        assert "3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in said
        assert app.queue.counts["waiting_approval"] == 2  # the queue shows the result at once

        said = await simulate(pilot, "weekend phone call")
        assert "RF-4CFEAE8E 119.00 CAD" in said
        await simulate(pilot, "Simulate: Monday")
        assert "Mon 2026-10-12 09:00" in screen_text(app) and "(simulated)" in screen_text(app)

        await select(pilot, T65273)
        assert "2d 16h" in screen_text(app)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)

        state = home.store.load(T65273)
        assert state.status == "handed_to_person"
        assert (state.operations[0].status, state.operations[0].calls) == ("failed", 1)
        assert len(home.world().refunds_of("LK-507862")) == 1
        told = " ".join(n.message for n in app._notifications)
        assert "PAY-507862-2 is not a captured charge of LK-507862" in told
        assert "now handed to person" in told
        await pilot.press("4")  # handed to person: the run and its refusal in the pane
        await settle(pilot)
        await select(pilot, T65273)
        assert "request_refund LK-507862: failed" in pane_text(app)
        assert "PAY-507862-2 is not a captured charge of LK-507862" in pane_text(app)


async def test_moments_are_offered_only_in_trainer_mode(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock("2026-10-09T17:00:00-04:00"))
    app = ResolverApp(home, "grace", "Grace", refresh_interval=None, trainer=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p")
        await settle(pilot)
        await type_text(pilot, "Simulate: Friday")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, LinesScreen)
        assert home.store.counts() == {}


@pytest.mark.slow
async def test_the_palettes_moments_in_their_order_resume_the_crash_before_it_lapses(tmp_path):
    """An execution that never called the service lapses after the approval's validity, so the
    palette lists the resume of the crashed T-90104 on Friday, before the weekend and Monday;
    played in the palette's order, it finishes the refund with 1 call."""
    import re

    from resolver_tui.commands import LessonCommands

    home = Home(tmp_path / "home", clock=FixedClock("2026-10-09T17:00:00-04:00"))
    app = ResolverApp(home, "grace", "Grace", refresh_interval=None, trainer=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        titles = [title for title, _ in LessonCommands(app.screen)._moments()]
        assert titles.index("Simulate: resume T-90104 after the crash (Friday, before the approval lapses)") < titles.index(
            "Simulate: Monday 09:00"
        )
        said = {title: await simulate(pilot, title) for title in titles}
    resumed = said["Simulate: resume T-90104 after the crash (Friday, before the approval lapses)"]
    assert re.search(r"request_refund LK-793996: done \(operation [0-9a-f]{16}, 1 call\(s\)\)", resumed), resumed
    state = home.store.load("T-90104-agent_structured-chat-strong-1")
    assert state.status == "done"
    assert [r["amount"] for r in home.world().refunds_of("LK-793996")] == ["9.95"]
    assert len(home.world().refunds_of("LK-507862")) == 1  # the phone call's, only
