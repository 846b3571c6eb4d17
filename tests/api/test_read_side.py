"""The read side (``home.queue``) and the rulebook, as the CLI and the app both use them."""

from __future__ import annotations

import sqlite3

import pytest
from core.engine.rulebook import ACTIONS, Approver, offers
from core.ground.errors import ResolverError

T65273 = "T-65273-agent-chat-small-1"
T90103 = "T-90103-agent-chat-small-1"


def test_pages_follow_their_cursor_to_the_end(demo_home):
    queue = demo_home.queue
    seen, after, sizes = [], None, []
    while True:
        page = queue.page(None, after=after, limit=5)
        seen += [r.run_id for r in page.rows]
        sizes.append(len(page.rows))
        if page.next is None:
            break
        after = page.next
    assert sizes == [5, 5, 5, 1] and len(set(seen)) == 16 == queue.total()
    assert sum(len(p.rows) for p in queue.pages("waiting_approval", limit=3)) == queue.counts()["waiting_approval"] == 8
    with pytest.raises(ResolverError, match="Cannot read the page cursor"):
        queue.page(None, after="not-a-cursor")


def test_the_role_needed_comes_from_the_current_policy_not_the_saved_column(demo_home):
    with sqlite3.connect(demo_home.store.path) as conn:  # a stale column, as after a policy change
        conn.execute("UPDATE runs SET required_role = 'agent' WHERE run_id = ?", (T65273,))
    detail = demo_home.queue.run(T65273, Approver("agent", "Amira"))
    assert detail.offers["approve"] == f"You are agent: run {T65273} needs team lead or above."
    assert detail.notes[0] == "Needs team lead or above (your role: agent)." and detail.tone == "warn"
    assert demo_home.queue.run(T65273, Approver("team_lead")).offers["approve"] is None


def test_the_detail_of_a_run_says_what_is_offered_and_why_not(demo_home):
    grace = Approver("grace", "Grace")
    detail = demo_home.queue.run(T90103, grace)
    assert set(detail.offers) == set(ACTIONS) and all(v is None for v in detail.offers.values())
    assert detail.others == ["T-90103-agent-chat-small-2"] and detail.decision is not None
    assert detail.decision.digest == demo_home.queue.load(T90103).proposal.digest
    state = demo_home.reject(T90103, "grace", "Wrong item.", "Grace")
    said = offers(state, grace, others=1)
    assert (
        said["approve"]
        == said["reject"]
        == (
            f"Run {T90103} was already rejected by Grace (role grace) at 2026-10-12T09:00:00-04:00; it is handed_to_person. Nothing changed."
        )
    )
    assert said["resume"] == "Nothing to resume: the run is handed_to_person." and said["trace"] is None
    assert demo_home.queue.run(T90103, grace).decision is None


def test_an_unreadable_checkpoint_offers_only_its_trace(demo_home):
    with sqlite3.connect(demo_home.store.path) as conn:
        conn.execute("UPDATE runs SET state = '{\"broken' WHERE run_id = ?", (T65273,))
    detail = demo_home.queue.run(T65273, Approver("grace"))
    assert detail.error and detail.tone == "error" and detail.status == "waiting_approval"
    assert [a for a, why in detail.offers.items() if why is None] == ["trace"]
    missing = demo_home.queue.run("T-00000-agent-chat-small-1", Approver("grace"))
    assert missing.error == "No run T-00000-agent-chat-small-1. Run `resolver runs` to see the saved runs."


def test_an_unknown_role_is_refused_when_the_approver_is_made():
    with pytest.raises(ResolverError, match="Unknown role 'owner'"):
        Approver("owner")
