"""The app shows why the agent's proposal was never offered for approval: one line per broken
proposal rule in the pane, and no approve key (:mod:`core.engine.proposal_rules`)."""

from __future__ import annotations

import json

from core.api.home import Home
from core.ground.data import load_recordings
from tui_helpers import make_app, pane_text, select, settle

RUN = "T-65273-agent-chat-small-1"


def _refused_home(root) -> Home:
    """A home whose T-65273 run replays a home recording proposing a second, negative line."""
    home = Home(root)
    run = next(r for r in load_recordings("T-65273").runs if (r.variant, r.model, r.repeat) == ("agent", "chat-small", 1))
    turns = [t.model_dump(mode="json", exclude={"call_id", "arguments"} if t.kind == "tool_call" else set()) for t in run.turns]
    for t, real in zip(turns, run.turns, strict=True):
        t["usage"] = {"tokens_in": real.usage.tokens_in, "tokens_out": real.usage.tokens_out}
    turns[-1]["actions"] = [turns[-1]["actions"][0], {**turns[-1]["actions"][0], "amount": "-100.00"}]
    (root / "recordings").mkdir()
    body = {"task_id": "T-65273", "runs": [{"variant": "agent", "model": "chat-small", "repeat": 4, "turns": turns}]}
    (root / "recordings" / "T-65273.json").write_text(json.dumps(body))
    state = home.run("T-65273", repeat=4)
    assert state.status == "handed_to_person"
    return home


async def test_the_pane_of_a_refused_proposal_names_each_broken_rule_and_offers_no_approval(tmp_path):
    home = _refused_home(tmp_path / "home")
    app = make_app(home, role="grace", name="Grace")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("7")  # all runs: a handed run is not in the waiting queue
        await settle(pilot)
        await select(pilot, RUN)
        await settle(pilot)
        text = pane_text(app)
        assert "Handed to a person: the agent's proposal was not offered for approval" in text
        assert "P2 (amounts and quantities that move something): line 2 refunds -100.00 CAD" in text
        assert "Who may approve" not in text
        await pilot.press("a")
        await settle(pilot)
        assert home.store.load(RUN).status == "handed_to_person" and home.world().changes() == []
        assert app.is_running
