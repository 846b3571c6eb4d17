"""Claim, hand over, set aside through the contract, on every back-end: the marks and their audit
rows are written together, a second claimer is refused, a snoozed run leaves "waiting" until its
time and comes back by itself, a hand-over moves the run to its recipient's "mine", and a settled
run or a bad time is refused with nothing written."""

from __future__ import annotations

from datetime import timedelta

import pytest
from core.engine.marks import RunMarks, read_marks
from core.ground.errors import ApprovalRefused, StaleCheckpoint

RUN = "T-65273-agent-chat-small-1"


def _marks_audit(home, run_id: str = RUN) -> list[tuple[str, str, str]]:
    return [
        (r["decision"], r["name"], r["detail"])
        for r in home.store.audit(run_id)
        if r["decision"] in ("claim", "release", "handover", "snooze")
    ]


def test_a_claim_stands_for_its_time_is_told_to_others_and_is_released_by_its_claimer(home, clock, new_store):
    home.run("T-65273")
    marks = home.mark("claim", RUN, "team_lead", "Tomás")
    assert marks.claim_line(clock.now()) == "Tomás is on it (claimed 17:00, until 17:30)."
    other = new_store(home.store)  # another machine's view of the same store
    seen = RunMarks.of(RUN, other.run_marks([RUN])[RUN])
    assert seen.claimed(clock.now()) and seen.claimed_by == "Tomás"
    with pytest.raises(ApprovalRefused, match=r"^Tomás is on it \(claimed 17:00, until 17:30\)\. Nothing was claimed"):
        home.mark("claim", RUN, "grace", "Grace")
    with pytest.raises(ApprovalRefused, match="Only Tomás releases that claim"):
        home.mark("release", RUN, "grace", "Grace")
    assert _marks_audit(home) == [("claim", "Tomás", "until 2026-10-09T17:30:00-04:00")]
    home.mark("release", RUN, "team_lead", "tomás")  # names compare as everywhere
    assert not read_marks(home.store, home.store.load(RUN)).claimed(clock.now())
    home.mark("claim", RUN, "grace", "Grace")
    clock.sleep(30 * 60)  # the claim lapses by itself: another may claim
    home.mark("claim", RUN, "team_lead", "Tomás")
    assert [d for d, _, _ in _marks_audit(home)] == ["claim", "release", "claim", "claim"]


def test_a_snoozed_run_leaves_waiting_until_its_time_and_comes_back_by_itself(home, clock):
    home.run("T-65273")
    home.run("T-90103")
    until = clock.now() + timedelta(hours=2)
    home.mark("snooze", RUN, "team_lead", "Ana", until=until)
    waiting = [r.run_id for r in home.queue.page("waiting_approval").rows]
    assert waiting == ["T-90103-agent-chat-small-1"]
    assert RUN in [r.run_id for r in home.queue.page(None).rows]  # "all" still lists it
    clock.sleep(2 * 3600 - 1)
    assert RUN not in [r.run_id for r in home.queue.page("waiting_approval").rows]
    clock.sleep(1)  # now == until: it is back, nothing woke it
    assert RUN in [r.run_id for r in home.queue.page("waiting_approval").rows]
    assert _marks_audit(home) == [("snooze", "Ana", "until 2026-10-09T19:00:00-04:00")]


def test_the_waiting_count_leaves_out_the_runs_set_aside_until_their_time(home, clock):
    home.run("T-65273")
    home.run("T-90103")
    queue = home.queue
    assert queue.counts()["waiting_approval"] == 2 and queue.set_aside() == 0
    home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() + timedelta(hours=2))
    assert queue.set_aside() == 1
    assert queue.counts()["waiting_approval"] - queue.set_aside() == len(queue.page("waiting_approval").rows) == 1
    assert queue.total() == 2  # every saved run, one set aside too
    home.mark("snooze", "T-90103-agent-chat-small-1", "agent", "Ana", until=clock.now() + timedelta(hours=1))
    assert queue.set_aside() == 2
    clock.sleep(3600)  # the second is back by itself
    assert queue.set_aside() == 1
    home.reject(RUN, "team_lead", "not this one", "Tomás")  # settled while set aside: no longer waiting
    assert queue.set_aside() == 0 and queue.counts()["waiting_approval"] == 1


def test_a_snooze_in_the_past_or_beyond_the_requests_expiry_is_refused_with_nothing_written(home, clock):
    home.run("T-65273")
    with pytest.raises(ApprovalRefused, match="is not after now"):
        home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() - timedelta(seconds=1))
    with pytest.raises(ApprovalRefused, match=r"approval request expires at 2026-10-16T17:00:00-04:00"):
        home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() + timedelta(days=7, seconds=1))
    home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() + timedelta(days=7))  # the expiry itself is allowed
    assert [d for d, _, _ in _marks_audit(home)] == ["snooze"]


def test_a_hand_over_moves_the_run_to_its_recipients_mine_and_clears_the_claim(home, clock):
    home.run("T-65273")
    home.mark("claim", RUN, "team_lead", "Tomás")
    marks = home.mark("handover", RUN, "team_lead", "Tomás", to="Ana", note="check the second capture [/]")
    assert marks.handed_to == "Ana" and not marks.claimed(clock.now())
    assert marks.lines(clock.now()) == ["Handed to Ana by Tomás at 17:00: check the second capture [/]"]
    mine = lambda name: [r.run_id for r in home.queue.page("waiting_approval", max_role="grace", name=name).rows]  # noqa: E731
    assert mine("ana") == [RUN] and mine("Grace") == []
    assert mine(None) == [RUN]  # a role alone (a practice home's --as) hides nothing
    assert _marks_audit(home)[-1] == ("handover", "Tomás", "to Ana: check the second capture [/]")


def test_a_settled_run_unknown_role_or_empty_note_is_refused_with_nothing_written(home):
    from core.engine.policy import UnknownRole

    state = home.run("T-90103")
    home.approve(state.run_id, "team_lead", "Grace")
    with pytest.raises(ApprovalRefused, match=r"is done \(approved by Grace .*\); there is nothing to claim\. Nothing changed"):
        home.mark("claim", state.run_id, "team_lead", "Tomás")
    home.run("T-65273")
    with pytest.raises(ApprovalRefused, match="needs a note"):
        home.mark("handover", RUN, "team_lead", "Tomás", to="Ana", note="  ")
    with pytest.raises(ApprovalRefused, match="must be one line"):
        home.mark("handover", RUN, "team_lead", "Tomás", to="Ana", note="a\nStatus: done")
    with pytest.raises(UnknownRole):
        home.mark("claim", RUN, "boss", "Tomás")
    assert home.store.run_marks() == {}
    assert _marks_audit(home, state.run_id) == [] and _marks_audit(home) == []


def test_put_marks_is_a_compare_and_set_with_its_audit_row_in_the_same_transaction(home, clock, new_store):
    state = home.run("T-65273")
    row = {"run_id": RUN, "run_uid": state.run_uid, "claimed_by": "Tomás"}
    audit = {
        "run_id": RUN,
        "decision": "claim",
        "role": "team_lead",
        "name": "Tomás",
        "digest": "",
        "at": "x",
        "run_uid": state.run_uid,
    }
    assert home.store.put_marks(row, audit, version=0) == 1
    before = home.store.chain_tip()[1]
    other = new_store(home.store)
    with pytest.raises(StaleCheckpoint):
        other.put_marks({**row, "claimed_by": "Ana"}, audit, version=0)  # a row exists: the other writer lost
    with pytest.raises(StaleCheckpoint):
        other.put_marks({**row, "claimed_by": "Ana"}, audit, version=5)
    assert home.store.chain_tip()[1] == before  # no audit row without its mark
    assert home.store.run_marks()[RUN]["claimed_by"] == "Tomás"
    assert other.put_marks({**row, "claimed_by": "Ana"}, audit, version=1) == 2
    assert home.store.run_marks([RUN])[RUN]["claimed_by"] == "Ana" and home.store.chain_tip()[1] == before + 1


def test_deleting_or_resetting_runs_clears_their_marks(home, clock):
    home.run("T-65273")
    home.mark("claim", RUN, "team_lead", "Tomás")
    home.delete(RUN)
    assert home.store.run_marks() == {}
    home.run("T-65273")
    home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() + timedelta(hours=1))
    home.reset()
    assert home.store.run_marks() == {}


def test_the_detail_of_a_marked_run_says_its_marks_first(home, clock):
    """The app's pane and every face reading :meth:`core.api.queue.ApprovalQueue.run` show the claim
    and the hand-over's note, made one line (untrusted text never poses as the request)."""
    from core.engine.rulebook import Approver

    home.run("T-65273")
    home.mark("claim", RUN, "team_lead", "Tomás")
    detail = home.queue.run(RUN, Approver("grace", "Grace"))
    assert detail.notes[0] == "Tomás is on it (claimed 17:00, until 17:30)."
    home.mark("handover", RUN, "team_lead", "Tomás", to="Ana", note="[bold]look[/] here")
    assert home.queue.run(RUN, Approver("grace", "Grace")).notes[0] == "Handed to Ana by Tomás at 17:00: [bold]look[/] here"
