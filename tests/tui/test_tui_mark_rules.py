"""Marks follow the decision rules in the app: ``c``, ``z`` and ``o`` ask the rulebook first (a
claim, a snooze and a hand-over need the role the run's proposal needs), so an agent's key says
the rulebook's sentence and nothing opens or is written (in a shop home no passphrase is asked
either); a hand-over to a colleague who may not decide the run is core's sentence, nothing
written; and under the waiting and mine filters a line says how many runs the approver may decide
are set aside or claimed by someone else, so a mark never hides a run there silently.

T-65273's proposal needs a team lead; T-97580's an agent."""

from __future__ import annotations

from datetime import timedelta

from core.api.home import Home
from core.engine.approvers import Registry
from core.ground.clock import SystemClock
from resolver_tui.screens.dialogs import MarkScreen
from textual.widgets import Static
from tui_helpers import make_app, monday_home, open_key, settle, type_text

RUN = "T-65273-agent-chat-small-1"
NEEDS = f"run {RUN} needs team lead or above to "


def _marks(home) -> list[str]:
    return [r["decision"] for r in home.store.audit(RUN) if r["decision"] in ("claim", "handover", "snooze")]


def _said(app) -> list[str]:
    return [n.message for n in app._notifications]


def _marked_line(app) -> str | None:
    widget = app.queue.query_one("#marked", Static)
    return str(widget.render()) if widget.display else None


async def test_an_agents_c_z_and_o_say_the_rulebooks_sentence_and_write_nothing(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    app = make_app(home, "agent", "Bob")
    async with app.run_test(size=(120, 40)) as pilot:
        for key, doing, noun in (("c", "claim it", "claim"), ("z", "set it aside", "snooze"), ("o", "hand it over", "hand-over")):
            screen = await open_key(pilot, RUN, key)
            assert not isinstance(screen, MarkScreen), key
            want = f"{key}: {noun} is not offered: You are agent: {NEEDS}{doing}, as to approve or reject it."
            assert any(m.startswith(want) for m in _said(app)), (key, _said(app))
        assert _marks(home) == []


async def test_in_a_shop_home_an_agents_claim_asks_no_passphrase_and_a_hand_over_to_him_is_refused(tmp_path):
    from core.api.homekind import init_home

    root = tmp_path / "shop"
    init_home(root, shop=True)
    registry = Registry(root)
    now = SystemClock().now()
    registry.init("Grace", "grace-passphrase", now)
    registry.add("Ana", "team_lead", "ana-passphrase", "grace-passphrase", now)
    registry.add("Bob", "agent", "bob-passphrase", "grace-passphrase", now)
    home = Home(root)
    home.run("T-65273")
    app = make_app(home, "agent", "Bob")
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_key(pilot, RUN, "c")
        assert screen is app.queue, type(screen)  # no passphrase dialog: the rule refuses first
        assert any(f"You are agent: {NEEDS}claim it" in m for m in _said(app))
    assert _marks(home) == []
    app = make_app(home, "team_lead", "Ana")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.queue.decisions.unlocked = home.unlock("Ana", "ana-passphrase")  # as after a first approve
        assert isinstance(await open_key(pilot, RUN, "o"), MarkScreen)
        await type_text(pilot, "Bob")
        await pilot.press("enter")
        await type_text(pilot, "yours")
        await pilot.press("enter")
        await settle(pilot)
        said = f"Bob (role agent) may not decide run {RUN}: it needs team lead or above; hand it to someone who may."
        assert any(said in m for m in _said(app)), _said(app)
        assert said in app.queue.errors[RUN]
    assert _marks(home) == []


async def test_the_waiting_and_mine_filters_say_how_many_runs_you_may_decide_are_marked_away(tmp_path):
    home = monday_home(tmp_path / "home")
    home.run("T-65273")
    home.run("T-97580")
    home.mark("snooze", RUN, "team_lead", "Ana", until=home.clock.now() + timedelta(hours=2))
    home.mark("claim", "T-97580-agent-chat-small-1", "team_lead", "Ana")
    app = make_app(home, "team_lead", "Tomás")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert _marked_line(app) == (
            "Of the waiting runs you may decide: 1 set aside until later, 1 claimed by someone else "
            "(not listed here; press 7 for all, which lists every run with its marks)."
        )
        await pilot.press("m")  # mine: the same runs are Tomás's to decide
        await settle(pilot)
        assert _marked_line(app) is not None and "1 set aside until later" in (_marked_line(app) or "")
        await pilot.press("7")  # all: every run is listed with its marks, nothing to say
        await settle(pilot)
        assert _marked_line(app) is None
    agent = make_app(home, "agent", "Bob")  # he may decide T-97580 only: Ana's claim on it
    async with agent.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert _marked_line(agent) == "Of the waiting runs you may decide: 1 claimed by someone else."
