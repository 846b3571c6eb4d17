"""The trainer kit: ``resolver class all`` and the seeds' exercises hold the lesson's numbers."""

from __future__ import annotations

import re

from conftest import T65273_RUN

EXPECTED_STATUSES = {
    "T-65273-agent-chat-small-1": "waiting_approval",
    "T-90103-agent-chat-small-1": "waiting_approval",
    "T-65273-crash-1": "running",
    "T-90104-agent_structured-chat-strong-1": "executing",
    "T-90104-agent_structured-chat-strong-2": "executing",
    "T-90103-agent-chat-small-2": "waiting_approval",
}


def test_class_all_sets_every_status_count_and_number_of_the_lesson(cli):
    code, out, err = cli("class", "all")
    assert code == 0, err
    assert "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in out
    assert "refunded PAY-507862-2 by hand: RF-4CFEAE8E 119.00 CAD" in out
    from core.home import Home

    home = Home(cli.home)
    statuses = {r.run_id: r.status for r in home.store.list()}
    assert statuses == EXPECTED_STATUSES
    assert home.store.load("T-65273-crash-1").usage.model_calls == 1
    shown = cli("clock", "show")[1].strip()  # the trainer's clock runs on at real speed
    assert shown.startswith("Clock: 2026-10-12T09:0") and shown.endswith("-04:00 (simulated)")
    changes = cli("changes")[1]
    assert changes.startswith("2 change(s)")  # the after-write refund of 9.95 and the phone call
    assert "9.95 CAD of PAY-793996-1" in changes and "RF-4CFEAE8E: 119.00 CAD" in changes

    # The numbers the class reads next.
    code, out, _ = cli("resume", "T-65273-crash-1")
    assert "3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081" in out
    code, out, _ = cli("resume", "T-90104-agent_structured-chat-strong-1")
    assert re.search(r"request_refund LK-793996: done \(operation [0-9a-f]{16}, 1 call\(s\)\)", out)
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
    assert re.search(r"Loaded as schema version 3: reply_channel = 'email', run_uid = 'T-90103-v1-\w+' \(the run ID", out)


def test_exercise_resume_twice_without_and_with_idempotency_keys(cli):
    out = cli("exercise", "resume-twice")[1]
    assert "Without idempotency keys: 2 replies sent." in out and "With the same operation ID: 1 reply sent." in out


def test_exercise_lease_owner_is_refused(cli):
    out = cli("exercise", "lease-owner")[1]
    assert "Resume from another owner: Run T-90104-lease-" in out and "is being executed by window-1" in out


def test_run_again_after_a_reset_still_leaves_two_runs_to_compare(cli):
    cli("class", "friday")
    cli("reset", "--all")
    code, out, _ = cli("class", "run-again")
    assert code == 0 and "Compare: resolver diff T-90103-agent-chat-small-1 T-90103-agent-chat-small-2" in out
