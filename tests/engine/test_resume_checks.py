"""What a resume must know: a running loop resumes only under the policy, tool schema and model
route it started under, or with ``--accept-changes``; waiting and executing runs resume as before;
schema 7 keeps the hash of the tools sent."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from core.engine.runner import LoopCrash, crash_after_step, outcome_line
from core.ground.errors import ResumeChanged
from core.ground.state import SCHEMA_VERSION, TOOLS_1, TaskState, migrate
from core.models.chat_stub import ChatStub
from core.models.toolschema import TOOLS, tool_schema_hash

from helpers import stub_config, stub_route

FIXTURES = Path(__file__).parent.parent / "fixtures"
SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
RUN = "T-65273-agent-chat-small-1"


def crashed(home) -> str:
    with pytest.raises(LoopCrash):
        home.run("T-65273", on_step=crash_after_step(1))
    return RUN


def started_under(home, run_id: str, **meta: str) -> None:
    """Make the saved run say it started under other metadata, as a run of an earlier policy or
    release would."""

    def change(text: str) -> str:
        raw = json.loads(text)
        raw["meta"].update(meta)
        return json.dumps(raw)

    home.store.overwrite_checkpoint(run_id, change)


def test_a_new_run_records_the_hash_of_the_tools_it_is_sent(home):
    state = home.run("T-65273")
    assert state.meta.tool_schema_version == tool_schema_hash() and tool_schema_hash().startswith("sha256:")
    assert len(tool_schema_hash()) == len("sha256:") + 64
    changed = [*TOOLS[:-1], {**TOOLS[-1], "function": {**TOOLS[-1]["function"], "description": "End."}}]
    assert tool_schema_hash(changed) != tool_schema_hash()


@pytest.mark.parametrize(
    ("meta", "said"),
    [
        ({"tool_schema_version": "sha256:" + "0" * 64}, "its tool schema was 000000000000, now "),
        ({"policy_version": "2026-09-01"}, "its policy was 2026-09-01, now 2026-10-01"),
        ({"model_route": "recorded:agent/chat-small#2"}, "its model route was recorded:agent/chat-small#2, now "),
    ],
)
def test_a_running_loop_started_under_other_rules_is_refused_then_goes_on_when_accepted(home, meta, said):
    run_id = crashed(home)
    started_under(home, run_id, **meta)
    with pytest.raises(ResumeChanged) as refused:
        home.resume(run_id)
    sentence = str(refused.value)
    assert said in sentence and "--accept-changes" in sentence and "\n" not in sentence and sentence.count(". ") == 0
    saved = home.store.load(run_id)
    assert (saved.status, saved.step, saved.meta.model_dump()) == ("running", 1, {**saved.meta.model_dump(), **meta})
    done = home.resume(run_id, accept_changes=True)
    assert done.kind == "continued" and outcome_line(done.state) == SEED_OUTCOME
    assert done.state.meta.tool_schema_version == tool_schema_hash()
    assert done.state.meta.policy_version == "2026-10-01"
    assert [e.kind for e in done.state.events].count("accepted") == 1


def test_a_refusal_changes_nothing_and_the_cli_says_it_in_one_sentence_with_exit_4(cli):
    from core.api.home import Home

    home = Home(cli.home)
    with pytest.raises(LoopCrash):
        home.run("T-65273", run_id="T-65273-crash-1", on_step=crash_after_step(1))
    started_under(home, "T-65273-crash-1", tool_schema_version="sha256:" + "1" * 64)
    code, out, err = cli("resume", "T-65273-crash-1")
    assert code == 4 and "was started under other rules" in err and "Traceback" not in out + err
    assert "run `resolver resume T-65273-crash-1 --accept-changes` to go on under the new ones" in err  # the run, by its command
    assert home.store.load("T-65273-crash-1").step == 1
    code, out, err = cli("resume", "T-65273-crash-1", "--accept-changes")
    assert code == 0 and SEED_OUTCOME in out, err


def test_waiting_and_executing_runs_resume_as_before_whatever_changed(home):
    state = home.run("T-65273")
    started_under(home, state.run_id, tool_schema_version="sha256:" + "2" * 64, policy_version="2026-09-01")
    assert home.resume(state.run_id).kind == "request"


def test_the_lessons_crash_run_resumes_without_a_question(cli):
    """Seed 000: ``python -m resolver resume T-65273-crash-1`` asks nothing."""
    from core.api.home import Home

    home = Home(cli.home)
    with pytest.raises(LoopCrash):
        home.run("T-65273", run_id="T-65273-crash-1", on_step=crash_after_step(2))
    code, out, err = cli("resume", "T-65273-crash-1")
    assert code == 0 and SEED_OUTCOME in out, err


def live_crashed(home, stub, monkeypatch, config: Path) -> str:
    """A live run on ``stub`` crashed after step 1, with ``$RESOLVER_CONFIG`` at ``config``."""
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    with pytest.raises(LoopCrash):
        home.run("T-65273", live=stub_route(stub), on_step=crash_after_step(1))
    return "T-65273-agent-stub-1"


def test_a_live_route_changed_in_the_config_file_is_a_change(home, stub, monkeypatch, tmp_path):
    run_id = live_crashed(home, stub, monkeypatch, tmp_path / "config.toml")
    with ChatStub(key="sk-test") as other:
        stub_config(tmp_path / "config.toml", other.url, model="stub-model-2")
        with pytest.raises(
            ResumeChanged, match=r"its model route was stub-model at http://127\.0\.0\.1:\d+/v1, now stub-model-2 at"
        ):
            home.resume(run_id)
        assert (stub.calls, other.calls) == (1, 0)
        done = home.resume(run_id, accept_changes=True)
        assert outcome_line(done.state) == SEED_OUTCOME
        assert (stub.calls, other.calls) == (1, 2)  # the new route is the one asked from then on
        assert '"model":"stub-model-2"' in done.state.meta.model_route


def test_a_timeout_changed_in_the_config_file_is_no_change(home, stub, monkeypatch, tmp_path):
    run_id = live_crashed(home, stub, monkeypatch, tmp_path / "config.toml")
    stub_config(tmp_path / "config.toml", stub.url, "timeout_s = 30", "max_retries = 0")
    done = home.resume(run_id)
    assert outcome_line(done.state) == SEED_OUTCOME and stub.calls == 3


def test_a_schema_6_checkpoint_loads_with_the_hash_of_the_tools_schema_6_sent():
    raw = json.loads((FIXTURES / "task_state_v6.json").read_text())
    assert raw["schema_version"] == 6 and raw["meta"]["tool_schema_version"] == "tools-1"
    state = TaskState.model_validate(migrate(raw))
    assert state.schema_version == SCHEMA_VERSION == 7
    assert state.meta.tool_schema_version == TOOLS_1
    assert state.status == "running" and state.messages[2].tool_call_id == "call_0"


def test_tools_1_is_the_hash_of_the_tools_schema_6_sent():
    """Frozen: the tools have not changed since schema 6. When they do, this test is changed to
    say so, and TOOLS_1 stays as it is (runs of schema 6 were sent those)."""
    assert tool_schema_hash() == TOOLS_1


def test_a_schema_6_running_loop_resumes_without_a_question(home):
    raw = json.loads((FIXTURES / "task_state_v6.json").read_text())
    with pytest.raises(LoopCrash):
        home.run("T-65273", run_id="T-65273-old-1", on_step=crash_after_step(2))
    home.store.overwrite_checkpoint(
        "T-65273-old-1",
        lambda t: json.dumps(
            {**json.loads(t), "meta": raw["meta"] | {"model_route": "recorded:agent/chat-small#1"}, "schema_version": 6}
        ),
    )
    done = home.resume("T-65273-old-1")
    assert done.kind == "continued" and outcome_line(done.state) == SEED_OUTCOME


# -- cost under control -------------------------------------------------------------------------


def budget(monkeypatch, tokens: int, usd: str) -> None:
    """The policy as shipped, with this run budget."""
    from decimal import Decimal

    import core.engine.runner
    from core.ground.data import RunBudget, load_policy

    policy = load_policy().model_copy(update={"run_budget": RunBudget(tokens=tokens, usd=Decimal(usd))})
    monkeypatch.setattr(core.engine.runner, "load_policy", lambda: policy)


def test_the_shipped_budget_lets_every_recording_finish():
    from core.ground.data import load_policy

    b = load_policy().run_budget
    assert b is not None and (b.tokens, str(b.usd)) == (50000, "0.05")


@pytest.mark.parametrize(("tokens", "usd"), [(6000, "0.05"), (50000, "0.0006")])
def test_a_run_that_would_pass_its_budget_stops_before_the_call_and_is_handed_to_a_person(home, stub, monkeypatch, tokens, usd):
    budget(monkeypatch, tokens, usd)
    state = home.run("T-65273", live=stub_route(stub))
    assert stub.calls == 2  # the third call was never sent
    assert state.status == "handed_to_person" and state.step == 2
    assert (
        outcome_line(state)
        == "hand_to_person (rule budget) | 2 model call(s), 2 tool call(s) | 4495 tokens in, 94 out | US$0.00050"
    )
    assert state.proposal.reason == (
        f"The run's budget of {tokens} tokens and US${float(usd):.5f} would be passed by step 3: 4589 tokens and US$0.00050 "
        "spent, and a call costs about 2294 tokens and US$0.00025; a person takes it from here."
    )
    assert home.store.load(state.run_id).status == "handed_to_person"


def test_the_cli_says_the_budget_with_its_figure(cli, monkeypatch):
    budget(monkeypatch, 6000, "0.05")
    code, out, _ = cli("run", "T-65273")
    assert code == 0
    assert "Outcome: hand_to_person (rule budget) | 2 model call(s), 2 tool call(s) | 4495 tokens in, 94 out | US$0.00050" in out
    assert "Rule budget: The run's budget of 6000 tokens and US$0.05000 would be passed by step 3" in out
    assert "handed_to_person" in out
