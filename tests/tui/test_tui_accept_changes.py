"""The app's ``--accept-changes``: resuming a running loop whose policy, tool schema or model route
changed shows core's sentence and offers accepting the changes in a dialog naming them (No by
default); Yes resumes that run only under the new ones."""

from __future__ import annotations

import json

import pytest
from core.engine.runner import LoopCrash, crash_after_step, outcome_line
from core.ground.errors import ResumeChanged
from core.models.toolschema import tool_schema_hash
from resolver_tui.screens.dialogs import ConfirmScreen
from tui_helpers import make_app, pane_text, screen_text, select, settle

RUN = "T-65273-agent-chat-small-1"
OTHER = "T-65273-agent-chat-small-2"
SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
OLD_TOOLS = "sha256:" + "0" * 64


def crashed_under_old_tools(home, run_id: str) -> None:
    """A loop saved after step 1, as if started when the tools sent had another schema."""
    with pytest.raises(LoopCrash):
        home.run("T-65273", run_id=run_id, repeat=1, on_step=crash_after_step(1))

    def change(text: str) -> str:
        raw = json.loads(text)
        raw["meta"]["tool_schema_version"] = OLD_TOOLS
        return json.dumps(raw)

    home.store.overwrite_checkpoint(run_id, change)


async def press_resume(pilot, run_id: str) -> None:
    await select(pilot, run_id)
    await pilot.press("u")
    await settle(pilot)


async def test_a_changed_loop_is_refused_with_cores_sentence_then_accepted_for_that_run_only(home):
    crashed_under_old_tools(home, RUN)
    crashed_under_old_tools(home, OTHER)
    with pytest.raises(ResumeChanged) as refused:
        home.resume(RUN)
    sentence = str(refused.value)
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # running
        await settle(pilot)
        await press_resume(pilot, RUN)
        assert isinstance(app.screen, ConfirmScreen)
        dialog = screen_text(app)
        assert f"Resume run {RUN} under the new rules?" in dialog
        assert f"The tool schema was 000000000000; now {tool_schema_hash()[7:19]}." in dialog
        assert "Accept and resume" in dialog
        assert any(n.message == sentence for n in app._notifications)  # core's sentence, as the CLI says it
        await pilot.press("enter")  # No, the default: nothing changes
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        saved = home.store.load(RUN)
        assert (saved.status, saved.step, saved.meta.tool_schema_version) == ("running", 1, OLD_TOOLS)
        assert sentence in pane_text(app)
        await press_resume(pilot, RUN)
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("y")
        await settle(pilot)
        done = home.store.load(RUN)
        assert done.status == "waiting_approval" and outcome_line(done) == SEED_OUTCOME
        assert done.meta.tool_schema_version == tool_schema_hash()
        assert [e.kind for e in done.events].count("accepted") == 1
        assert sentence not in pane_text(app)
        other = home.store.load(OTHER)  # accepting was for that run only
        assert (other.status, other.meta.tool_schema_version) == ("running", OLD_TOOLS)
        await pilot.press("3")
        await settle(pilot)
        await press_resume(pilot, OTHER)
        assert isinstance(app.screen, ConfirmScreen)  # asked again for the other run
        await pilot.press("n")
        await settle(pilot)
        assert home.store.load(OTHER).status == "running"
        assert app.is_running and app.return_code is None


async def test_an_unchanged_loop_resumes_without_a_dialog(home):
    with pytest.raises(LoopCrash):
        home.run("T-65273", repeat=1, on_step=crash_after_step(1))
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        await press_resume(pilot, RUN)
        assert not isinstance(app.screen, ConfirmScreen)
        state = home.store.load(RUN)
        assert state.status == "waiting_approval" and "accepted" not in [e.kind for e in state.events]
