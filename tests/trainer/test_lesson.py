"""The trainer kit: ``resolver class all`` and the seeds' exercises hold the lesson's numbers."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import timedelta

import pytest
from core.api.home import Home
from core.ground.clock import parse_time
from core.ground.errors import ResolverError
from core.ground.state import SCHEMA_VERSION

from helpers import FRIDAY, T65273_RUN

EXPECTED_STATUSES = {
    "T-65273-agent-chat-small-1": "waiting_approval",
    "T-90103-agent-chat-small-1": "waiting_approval",
    "T-65273-crash-1": "running",
    "T-90104-agent_structured-chat-strong-1": "done",
    "T-90103-agent-chat-small-2": "waiting_approval",
}


def test_class_all_sets_every_status_count_and_number_of_the_lesson(cli):
    code, out, err = cli("class", "all")
    assert code == 0, err
    assert "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in out
    assert "refunded PAY-507862-2 by hand: RF-4CFEAE8E 119.00 CAD" in out
    from core.api.home import Home

    home = Home(cli.home)
    statuses = {r.run_id: r.status for r in home.store.page()}
    assert statuses == EXPECTED_STATUSES
    assert home.store.load("T-65273-crash-1").usage.model_calls == 1
    shown = cli("clock", "show")[1].strip()  # the trainer's clock runs on at real speed
    assert shown.startswith("Clock: 2026-10-12T09:0") and shown.endswith("-04:00 (simulated)")
    # the crashed T-90104 is resumed on Friday, within its approval's validity
    assert re.search(r"== resume-crashed\n.*\nrequest_refund LK-793996: done \(operation [0-9a-f]{16}, 1 call\(s\)\)", out)
    assert out.index("== resume-crashed") < out.index("== weekend-call") < out.index("== monday")
    changes = cli("changes")[1]
    assert changes.startswith("3 change(s)")  # the refund of 9.95 and its reply, and the phone call
    assert "9.95 CAD of PAY-793996-1" in changes and "RF-4CFEAE8E: 119.00 CAD" in changes

    # The numbers the class reads next.
    code, out, _ = cli("resume", "T-65273-crash-1")
    assert "3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in out
    code, out, _ = cli("resume", "T-90104-agent_structured-chat-strong-1")
    assert code == 0 and "Nothing to resume: the run is done." in out
    code, out, _ = cli("approve", T65273_RUN, "--as", "grace", "--name", "Grace")
    assert "PAY-507862-2 is not a captured charge of LK-507862" in out and "Status: handed_to_person" in out
    code, out, _ = cli("diff", "T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2")
    assert "- create_return_label LK-640436 PLANTER reason damaged (return shipping: free)" in out


def test_class_is_repeatable_after_reset_all(cli):
    cli("class", "friday")
    cli("reset", "--all")
    code, out, _ = cli("class", "friday")
    assert code == 0 and "T-65273-agent-chat-small-1 is waiting_approval" in out


def test_exercise_crash_at_a_different_step(cli):
    _code, out, _ = cli("exercise", "crash-at-step")
    assert "T-65273-crash-2 is running at step 2 with 2 model call(s) saved." in out
    assert "Resumed: resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out" in out
    assert "  step 2: get_payments" in out


def test_exercise_corrupt_checkpoint_gives_the_clear_error(cli):
    code, out, _ = cli("exercise", "corrupt-checkpoint")
    assert code == 0 and "is corrupt" in out and "nothing was changed" in out


def test_exercise_migrate_v1(cli):
    out = cli("exercise", "migrate-v1")[1]
    assert re.search(
        rf"Loaded as schema version {SCHEMA_VERSION}: reply_channel = 'email', run_uid = 'T-90103-v1-\w+' \(the run ID", out
    )


def test_exercise_resume_twice_without_and_with_idempotency_keys(cli):
    out = cli("exercise", "resume-twice")[1]
    assert "Without idempotency keys: 2 replies sent." in out and "With the same operation ID: 1 reply sent." in out


def test_exercise_lease_owner_is_refused(cli):
    out = cli("exercise", "lease-owner")[1]
    assert "Resume from another owner: Run T-24410-lease-" in out and "is being executed by window-1" in out


def test_run_again_after_a_reset_still_leaves_two_runs_to_compare(cli):
    cli("class", "friday")
    cli("reset", "--all")
    code, out, _ = cli("class", "run-again")
    assert code == 0 and "Compare: resolver diff T-90103-agent-chat-small-1 T-90103-agent-chat-small-2" in out


# --- the lesson's Python API (the resolver package) -------------------------------------------------


@pytest.fixture
def lesson_home(tmp_path, monkeypatch):
    """The lesson's default home: RESOLVER_HOME in tmp_path, on the trainer's Friday clock."""
    root = tmp_path / "work"
    monkeypatch.setenv("RESOLVER_HOME", str(root))
    home = Home(root)
    home.clock.set(parse_time(FRIDAY))  # the trainer's clock (clock.json), as `clock set` does
    return home


def test_the_weekend_call_takes_a_float_and_makes_rf_4cfeae8e(lesson_home):
    from resolver.systems import PRACTICE_DB, World

    world = World(ticket_id="phone-call")
    assert world.path == PRACTICE_DB == lesson_home.world_path.resolve()
    refund = world.request_refund("manual-1", "LK-507862", 119.00, "RFD-DOUBLE", "PAY-507862-2")
    assert (refund["refund_id"], refund["amount"], refund["currency"]) == ("RF-4CFEAE8E", "119.00", "CAD")
    assert lesson_home.world().lookup_operation("manual-1")["actor"] == "phone-call"


def test_the_crash_block_of_the_lesson_as_a_program(lesson_home):
    from resolver.checkpoint import CheckpointStore
    from resolver.data import load_task
    from resolver.providers import MockProvider
    from resolver.runner import new_state, outcome_line, run_task
    from resolver.systems import PRACTICE_DB, Faults, World

    class Crash(Exception):
        pass

    store = CheckpointStore()
    assert store.path == lesson_home.store.path.resolve()

    def save_then_crash(state):
        store.save(state)
        if state.step == 1:
            raise Crash("simulated crash after step 1")

    task = load_task("T-65273")
    state = new_state(task, "agent", "chat-small", "T-65273-crash-1")
    assert timedelta(0) <= state.created_at - parse_time(FRIDAY) < timedelta(minutes=5)  # the home's clock
    world = World(PRACTICE_DB, task.task_id, Faults(task.faults))
    with pytest.raises(Crash):
        run_task(task, "agent", "chat-small", MockProvider().complete, world, state=state, on_step=save_then_crash)
    saved = lesson_home.store.load("T-65273-crash-1")
    assert (saved.status, saved.step, saved.usage.model_calls, saved.run_uid) == ("running", 1, 1, state.run_uid)
    resumed = lesson_home.resume("T-65273-crash-1")
    assert (
        outcome_line(resumed.state)
        == "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
    )
    assert store.latest("T-65273").run_id == "T-65273-crash-1"


def test_a_run_saved_through_the_lesson_api_shows_its_total_role_and_actions_in_the_queue_and_in_mine(lesson_home, capsys):
    """The queue's columns are part of every save. A run the lesson's Python API saves with
    ``store.save(state)`` (one argument) once showed a blank total, role and actions, and no
    approver's "mine" listed it."""
    from resolver.checkpoint import CheckpointStore
    from resolver.data import load_task
    from resolver.providers import MockProvider
    from resolver.runner import new_state, run_task
    from resolver.systems import World

    store = CheckpointStore()
    task = load_task("T-65273")
    state = new_state(task, "agent", "chat-small", "T-65273-lesson-1")
    run_task(task, "agent", "chat-small", MockProvider().complete, World(), state=state, on_step=store.save)
    assert store.load("T-65273-lesson-1").status == "waiting_approval"
    row = lesson_home.queue.page("waiting_approval").rows[0]
    assert (row.run_id, row.total_amount, row.required_role, row.actions) == (
        "T-65273-lesson-1",
        "119.00",
        "team_lead",
        "request_refund LK-507862 119.00 CAD RFD-DOUBLE payment PAY-507862-2",
    )
    assert row.customer != state.customer_id  # the customer's name, not the bare ID
    mine = {r.run_id for r in lesson_home.queue.page("waiting_approval", max_role="team_lead").rows}
    assert mine == {"T-65273-lesson-1"}
    assert lesson_home.queue.page("waiting_approval", max_role="agent").rows == []  # it needs a team lead
    from core.cli import main

    capsys.readouterr()
    assert main(["runs", "--mine", "--as", "team_lead", "--home", str(lesson_home.root)]) == 0
    assert "T-65273-lesson-1" in capsys.readouterr().out
    assert main(["runs", "--mine", "--as", "agent", "--home", str(lesson_home.root)]) == 0
    assert "T-65273-lesson-1" not in capsys.readouterr().out


def test_run_task_without_a_state_makes_one_and_refuses_a_state_of_another_ticket(lesson_home):
    from resolver.data import load_task
    from resolver.providers import MockProvider
    from resolver.runner import new_state, run_task
    from resolver.systems import World

    task = load_task("T-65273")
    state = run_task(task, "agent", "chat-small", MockProvider().complete, World())
    assert (state.run_id, state.status, state.usage.model_calls) == ("T-65273-agent-chat-small-1", "waiting_approval", 3)
    other = new_state(load_task("T-90103"), "agent", "chat-small", "x-1")
    with pytest.raises(ResolverError, match="is a run of T-90103 by agent/chat-small, not of T-65273"):
        run_task(task, "agent", "chat-small", MockProvider().complete, World(), state=other)


def test_the_mock_provider_is_the_recorded_model(lesson_home):
    from core.models.recorded_model import NoRecording
    from resolver.providers import MockProvider

    provider = MockProvider()
    turn = provider.complete([], task_id="T-65273", variant="agent", model="chat-small")
    assert turn.tool == "get_order"
    with pytest.raises(NoRecording):
        provider.complete([], task_id="T-65273", variant="agent", model="chat-small", repeat=9)


def test_the_lesson_api_names_are_the_cores():
    import core.engine.runner
    import core.ground.data
    import core.ground.state
    import core.stores.sqlite.checkpoint
    import resolver.checkpoint
    import resolver.data
    import resolver.runner
    import resolver.systems
    from core.trainer import lesson_api

    assert issubclass(resolver.checkpoint.CheckpointStore, core.stores.sqlite.checkpoint.CheckpointStore)
    assert resolver.checkpoint.TaskState is core.ground.state.TaskState
    assert resolver.data.load_task is core.ground.data.load_task
    assert resolver.runner.outcome_line is core.engine.runner.outcome_line
    assert resolver.systems.World is lesson_api.World and resolver.runner.run_task is lesson_api.run_task
    for module in (resolver.checkpoint, resolver.data, resolver.runner, resolver.systems):
        assert module.__doc__ and "lesson" in module.__doc__
        defined = [getattr(module, name) for name in module.__all__ if callable(getattr(module, name))]
        assert defined and all(thing.__module__.startswith("core.") for thing in defined)  # no logic of its own


def test_python_m_resolver_is_the_command_and_names_itself(tmp_path):
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RESOLVER_")}
    run = subprocess.run(
        [sys.executable, "-m", "resolver", "run", "T-65273", "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.rstrip().splitlines()[-1] == "Next: python -m resolver approve T-65273-agent-chat-small-1 --as team_lead"
    core_run = subprocess.run(
        [sys.executable, "-m", "core", "runs", "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert core_run.stdout.startswith("T-65273-agent-chat-small-1 ")
    bad = subprocess.run(
        [sys.executable, "-m", "resolver", "resume", "nope", "--home", str(home)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=tmp_path,
    )
    assert (bad.returncode, bad.stdout) == (1, "") and "Traceback" not in bad.stderr


def test_the_resolver_main_returns_the_exit_code_and_never_exits(tmp_path, monkeypatch, capsys):
    from resolver.__main__ import main

    monkeypatch.setenv("RESOLVER_HOME", str(tmp_path / "h"))
    assert main(["run", "T-90104", "--variant", "agent_structured", "--model", "chat-strong"]) == 0
    code = main(["approve", "T-90104-agent_structured-chat-strong-1", "--as", "agent", "--interrupt", "before-write"])
    assert code == 3
    assert (
        capsys.readouterr().out.rstrip().endswith("Resume with: python -m resolver resume T-90104-agent_structured-chat-strong-1")
    )


@pytest.mark.parametrize("run_id", ["T-65273\nStatus: done", "T-65273 crash", "", "T\u200b-65273", "T\x1b[2J", "x" * 201])
def test_the_lesson_api_refuses_a_run_id_that_would_break_a_line(run_id):
    """A new user's finding: ``new_state`` took a run ID with a line break, and every face then
    printed it across two lines."""
    from core.ground.errors import BadArgument
    from resolver.data import load_task
    from resolver.runner import new_state

    with pytest.raises(BadArgument, match="run ID"):
        new_state(load_task("T-65273"), "agent", "chat-small", run_id)
