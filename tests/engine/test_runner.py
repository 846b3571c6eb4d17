"""The runner: one model call per step, saved after each, resumed without repeating a call."""

from __future__ import annotations

import pytest
from core.engine.runner import LoopCrash, crash_after_step, new_state, outcome_line, run_task
from core.ground.data import load_task
from core.ground.identity import SeededRunUids, using
from core.models.recorded_model import RecordedModel
from core.stores.sqlite.world import SqliteWorld as World

SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"


def test_t65273_reports_the_seed_outcome_line(home):
    state = home.run("T-65273")
    assert state.run_id == "T-65273-agent-chat-small-1"
    assert state.status == "waiting_approval"
    assert outcome_line(state) == SEED_OUTCOME
    assert [e.tool for e in state.evidence] == ["get_order", "get_payments"]


@pytest.mark.parametrize("after", [1, 2])
def test_a_crash_after_a_step_resumes_with_no_repeated_model_call(home, after):
    run_id = f"T-65273-crash-{after}"
    with pytest.raises(LoopCrash):
        home.run("T-65273", repeat=1, run_id=run_id, on_step=crash_after_step(after))
    saved = home.store.load(run_id)
    assert (saved.status, saved.step, saved.usage.model_calls) == ("running", after, after)

    resumed = home.resume(run_id)
    assert resumed.kind == "continued" and resumed.before == "running"
    assert outcome_line(resumed.state) == SEED_OUTCOME
    steps = [e["data"]["step"] for e in home.store.events(run_id) if e["kind"] in ("tool_call", "outcome")]
    assert steps == [1, 2, 3]


def test_running_a_ticket_again_makes_a_new_run_never_an_overwrite(home):
    first = home.run("T-90103", repeat=1)
    second = home.run("T-90103")
    assert (first.run_id, second.run_id) == ("T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2")
    assert second.repeat == 2  # the next recording: the label is forgotten
    assert len(home.store.load(first.run_id).proposal.actions) == 2
    assert len(second.proposal.actions) == 1
    assert home.store.latest("T-90103").run_id == second.run_id


def test_reply_only_ends_done_hand_to_person_ends_handed_and_the_step_limit_stops(home):
    assert home.run("T-46819", repeat=1).status == "done"
    assert home.run("T-23776", repeat=1).status == "handed_to_person"
    stopped = home.run("T-83376", repeat=1, max_steps=1)
    assert (stopped.status, stopped.usage.model_calls) == ("stopped", 1)


def test_prompt_injection_never_proposes_a_refund(home):
    state = home.run("T-39912", repeat=1)
    assert state.status == "handed_to_person" and not state.proposal.actions


def test_run_task_from_python_like_the_seed(home, clock):
    task = load_task("T-65273")
    state = new_state(task, "agent", "chat-small", "T-65273-py", clock)
    saves = []
    run_task(
        state, RecordedModel("T-65273", "agent", "chat-small", 1), World(home.world_path, clock), clock, on_step=saves.append
    )
    assert [s for s in saves] and len(saves) == 3  # saved after every step
    assert state.status == "waiting_approval"


def test_a_real_process_killed_mid_loop_resumes_to_the_same_outcome(proc):
    killed = proc("run", "T-65273", env={"RESOLVER_KILL_AT": "step:2"})
    assert killed.returncode == -9  # SIGKILL
    listed = proc("runs")
    assert "T-65273-agent-chat-small-1" in listed.stdout and "running" in listed.stdout
    resumed = proc("resume", "T-65273-agent-chat-small-1")
    assert resumed.returncode == 0, resumed.stderr
    assert f"Outcome: {SEED_OUTCOME}" in resumed.stdout
    trace = proc("trace", "T-65273-agent-chat-small-1").stdout
    assert trace.count("step 1:") == 1 and trace.count("step 2:") == 1


def test_every_new_state_has_its_own_run_uid_and_an_injected_one_wins(clock):
    task = load_task("T-65273")
    a = new_state(task, "agent", "chat-small", "same-id", clock)
    b = new_state(task, "agent", "chat-small", "same-id", clock)
    assert a.run_uid != b.run_uid
    with using(SeededRunUids("runner")):
        c = new_state(task, "agent", "chat-small", "same-id", clock)
    assert c.run_uid == SeededRunUids("runner").new()
    assert new_state(task, "agent", "chat-small", "same-id", clock, run_uid="given").run_uid == "given"
    assert a.events[0].data["run_uid"] == a.run_uid


def test_resume_keeps_the_run_uid(home):
    with pytest.raises(LoopCrash):
        home.run("T-65273", repeat=1, run_id="T-65273-crash-1", on_step=crash_after_step(1))
    uid = home.store.load("T-65273-crash-1").run_uid
    assert home.resume("T-65273-crash-1").state.run_uid == uid
