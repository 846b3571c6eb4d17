"""The store contract (core/contract/store.py), run against every back-end (tests/conformance/conftest.py):
the whole state survives the process, two writers are told apart, bad checkpoints fail loudly
while the others list, leases fold into saves, and the queue pages, sorts, searches and counts."""

from __future__ import annotations

import json
from typing import Any

import core.stores
import pytest
from core.contract.store import RunSummary, Store
from core.engine.runner import new_state
from core.ground.clock import FixedClock
from core.ground.data import load_task
from core.ground.errors import CorruptCheckpoint, LeaseHeld, ResolverError, RunNotFound, StaleCheckpoint, UnsupportedSchemaVersion
from core.ground.state import SCHEMA_VERSION, TaskState
from core.stores import open_store

import memory_backend
from helpers import busy_home_at, replace_checkpoint, tool_step
from pg import team_store

FRIDAY = "2026-10-09T17:00:00-04:00"


def test_the_whole_state_round_trips_through_a_new_store_object(home, new_store):
    state = home.run("T-65273")
    state.plan = ["look up the order", "propose"]
    state.faults_seen = ["request_refund:timeout:1"]
    home.store.save(state)
    back = new_store(home.store).load(state.run_id)
    assert back.model_dump() == state.model_dump()
    assert back.usage.tokens_in == 7155
    assert home.store.latest("T-65273").run_id == state.run_id


def test_save_stamps_updated_at_from_the_clock_and_lists_by_summary(home, clock):
    home.run("T-90103", repeat=1)
    clock.sleep(3600)
    home.run("T-65273")
    rows = home.store.page("waiting_approval")
    assert [r.run_id for r in rows] == ["T-90103-agent-chat-small-1", "T-65273-agent-chat-small-1"]  # oldest first
    top = rows[1]
    assert (top.customer, top.total_amount, top.required_role, top.order_id) == (
        "Maya Thompson",
        "119.00",
        "team_lead",
        "LK-507862",
    )
    assert home.store.page(search="LK-507862")[0].run_id == top.run_id
    assert home.store.counts() == {"waiting_approval": 2}


def test_two_writers_holding_the_same_version_one_saves_one_is_told(home):
    state = home.run("T-65273")
    first = home.store.load(state.run_id)
    second = home.store.load(state.run_id)
    first.plan = ["mine"]
    home.store.save(first)
    second.plan = ["theirs"]
    with pytest.raises(StaleCheckpoint, match="changed since this copy was read"):
        home.store.save(second)
    assert home.store.load(state.run_id).plan == ["mine"]


def test_a_corrupt_row_and_an_unknown_schema_give_their_own_errors_while_others_list(home):
    good = home.run("T-65273")
    bad = home.run("T-90103", repeat=1)
    future = home.run("T-90104", "agent_structured", "chat-strong", 1)
    replace_checkpoint(home.store, bad.run_id, '{"run_id": "T-90103-agent-chat-small-1", "status": ')
    raw = json.loads(future.model_dump_json())
    raw["schema_version"] = 99
    replace_checkpoint(home.store, future.run_id, json.dumps(raw))

    with pytest.raises(CorruptCheckpoint, match="is corrupt"):
        home.store.load(bad.run_id)
    with pytest.raises(UnsupportedSchemaVersion, match="schema version 99"):
        home.store.load(future.run_id)
    rows = {r.run_id: r for r in home.store.page()}
    assert set(rows) == {good.run_id, bad.run_id, future.run_id}
    assert rows[bad.run_id].state_ok is False and rows[good.run_id].state_ok is True
    assert home.store.load(good.run_id).status == "waiting_approval"


def test_a_row_that_is_json_but_not_a_task_state_is_corrupt(home):
    state = home.run("T-65273")
    replace_checkpoint(home.store, state.run_id, json.dumps({"schema_version": SCHEMA_VERSION, "run_id": state.run_id}))
    with pytest.raises(CorruptCheckpoint, match="does not match the TaskState schema"):
        home.store.load(state.run_id)


def test_an_unknown_run_says_how_to_list_runs(home):
    with pytest.raises(RunNotFound, match=r"No run nope\. Run `resolver runs`"):
        home.store.load("nope")


def test_events_are_appended_in_the_save_transaction(home):
    state = home.run("T-65273")
    kinds = [e["kind"] for e in home.store.events(state.run_id)]
    assert kinds == ["created", "tool_call", "tool_call", "outcome"]
    assert [e["seq"] for e in home.store.events(state.run_id)] == [1, 2, 3, 4]


def test_new_state_round_trips_with_a_log(store, new_store):
    clock = FixedClock("2026-10-09T17:00:00-04:00")
    s = new_state(load_task("T-90103"), "agent", "chat-small", "r-1", clock)
    s.log("note", "hello", x=1)
    store.save(s)
    back = new_store(store).load("r-1")
    assert back.model_dump() == s.model_dump()
    assert isinstance(back, TaskState) and back.created_at.utcoffset() is not None


# -- from the store's tests at scale: the contract's part ----------------------------------------


def test_a_state_from_another_store_object_saves_whole_and_loses_nothing(home, new_store):
    state = home.run("T-65273")
    other = new_store(home.store).load(state.run_id)
    tool_step(other, {"order_id": "x"})
    home.store.save(other)  # this store never saw that object: a full rewrite of the rows
    assert home.store.load(state.run_id).model_dump() == other.model_dump()


def test_new_fields_of_the_header_round_trip_without_the_store_knowing_them(home, new_store):
    state = home.run("T-90103", repeat=1)
    state.plan = ["look up the order", "propose"]
    state.faults_seen = ["request_refund:timeout:1"]
    state.meta.model_route = "elsewhere"
    home.store.save(state)
    back = new_store(home.store).load(state.run_id)
    assert back.model_dump() == state.model_dump()


def test_the_audit_row_carries_the_run_uid_when_given(home):
    state = home.run("T-65273")
    state.status = "handed_to_person"
    home.store.save(
        state, audit={"decision": "reject", "role": "grace", "name": "Grace", "digest": "d", "at": FRIDAY, "run_uid": "uid-1"}
    )
    assert home.store.audit(state.run_id)[0]["run_uid"] == "uid-1"


def test_the_store_knows_no_policy_it_writes_the_columns_it_is_handed(team_url, tmp_path):
    from core.contract.store import blank_columns

    clock = FixedClock(FRIDAY)
    store = open_store(team_url or core.stores.store_path(tmp_path), clock, summarize=blank_columns)
    state = new_state(load_task("T-65273"), "agent", "chat-small", "r-1", clock)
    store.save(state)
    row = store.summary("r-1")
    assert (row.customer, row.total_amount, row.required_role) == (state.customer_id, "", "")


def test_a_store_cannot_be_made_without_the_queue_columns(team_url, tmp_path):
    """The queue's columns are part of every save, never an optional hook."""
    with pytest.raises(TypeError, match="summarize"):
        open_store(team_url or core.stores.store_path(tmp_path))  # type: ignore[call-arg]


def test_a_run_saved_with_the_store_alone_has_the_queue_columns_of_a_run_saved_by_the_home(home, new_store, clock):
    """The columns come from the save, not from who calls it."""
    by_home = home.run("T-65273")
    alone = new_store(home.store)
    state = by_home.model_copy(deep=True)
    state.run_id, state.version = "T-65273-alone-1", 0
    alone.save(state)
    a, b = home.store.summary(by_home.run_id), home.store.summary("T-65273-alone-1")
    assert (a.customer, a.total_amount, a.required_role, a.actions, a.role_rank) == (
        b.customer,
        b.total_amount,
        b.required_role,
        b.actions,
        b.role_rank,
    )
    assert b.total_amount == "119.00" and b.required_role == "team_lead"
    assert {r.run_id for r in home.store.page("waiting_approval", max_role_rank=1)} == {by_home.run_id, "T-65273-alone-1"}
    assert home.store.page("waiting_approval", max_role_rank=0) == []


def test_a_save_that_names_a_lease_owner_needs_the_lease(home):
    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.store.acquire_lease(state.run_id, "window-1@elsewhere:1:abc", 60)
    with pytest.raises(LeaseHeld, match="taken over by window-1"):
        home.store.save(state, lease_owner="me@here:1:x", lease_ttl_s=60)
    home.store.save(state, lease_owner="window-1@elsewhere:1:abc")  # the holder saves and releases
    assert home.store.summary(state.run_id).lease_owner is None
    stale = home.store.load(state.run_id)
    home.store.save(home.store.load(state.run_id))
    with pytest.raises(StaleCheckpoint):
        home.store.save(stale)


def test_an_executor_that_finds_a_corrupt_checkpoint_gives_its_lease_back(home):
    from core.engine import approval

    state = home.run("T-90104", "agent_structured", "chat-strong", 1)
    approval.approve(home.store, home.approval_key(), state.run_id, "agent", clock=home.clock)
    replace_checkpoint(home.store, state.run_id, '{"broken')
    with pytest.raises(CorruptCheckpoint):
        home.execute(state.run_id)
    assert home.store.summary(state.run_id).lease_owner is None


@pytest.fixture(scope="module", params=memory_backend.CONFORMANCE)
def busy_home(request, tmp_path_factory) -> Any:
    """40 runs of 4 tickets, some at the same second, 6 rejected (read-only for the tests), in a
    home of each back-end."""
    with team_store(request.param) as url:
        yield busy_home_at(tmp_path_factory.mktemp("busy") / "home", store=url)


@pytest.mark.parametrize("status", [None, "waiting_approval", "handed_to_person"])
@pytest.mark.parametrize("sort", [None, "age", "updated", "created", "amount", "role"])
def test_keyset_pages_walk_the_whole_queue_in_order(busy_home, status, sort):
    store = busy_home.store
    everything = store.page(status, sort=sort, limit=10_000)
    walked: list[RunSummary] = []
    while True:
        page = store.page(status, sort=sort, after=walked[-1] if walked else None, limit=7)
        walked.extend(page)
        if len(page) < 7:
            break
    assert [r.run_id for r in walked] == [r.run_id for r in everything]
    assert len(everything) == (sum(store.counts().values()) if status is None else store.counts().get(status, 0))
    if sort == "amount":
        assert [r.amount_cents for r in everything] == sorted((r.amount_cents for r in everything), reverse=True)
    if sort == "age" or (sort is None and status == "waiting_approval"):
        assert [r.updated_ts for r in everything] == sorted(r.updated_ts for r in everything)


def test_a_cursor_is_the_sort_key_and_run_id(busy_home):
    store = busy_home.store
    first = store.page("waiting_approval", sort="amount", limit=3)
    assert first[-1].cursor("amount") == (first[-1].amount_cents, first[-1].run_id)
    assert (
        store.page("waiting_approval", sort="amount", after=first[-1].cursor("amount"), limit=2)
        == store.page("waiting_approval", sort="amount", limit=5)[3:]
    )
    with pytest.raises(ResolverError, match="Unknown sort 'size'"):
        store.page(sort="size")


def test_search_matches_ticket_order_customer_and_run_id(busy_home):
    store = busy_home.store
    assert {r.task_id for r in store.page(search="T-65273")} == {"T-65273"}
    assert {r.order_id for r in store.page(search="lk-507862")} == {"LK-507862"}
    maya = store.page(search="Maya Thom")
    assert maya and {r.customer for r in maya} == {"Maya Thompson"}
    assert [r.run_id for r in store.page(search="T-90103-agent-chat-small-3")] == ["T-90103-agent-chat-small-3"]
    assert store.page(search="100%_") == []


@pytest.mark.parametrize("term", ["65", "k-", "LK-5078", "maya", "THOMPSON", "chat-small-1", "T-41629-agent"])
def test_search_finds_the_same_runs_as_a_substring_filter_over_every_row(busy_home, term):
    store = busy_home.store
    everything = store.page(limit=10_000)
    expected = [
        r.run_id
        for r in everything
        if any(term.lower() in field.lower() for field in (r.task_id, r.order_id, r.customer, r.run_id))
    ]
    assert expected and [r.run_id for r in store.page(search=term, limit=10_000)] == expected
    walked: list[RunSummary] = []
    while page := store.page(search=term, after=walked[-1] if walked else None, limit=3):
        walked.extend(page)
    assert [r.run_id for r in walked] == expected


def _grouped(store: Store) -> dict[str, int]:
    """Runs per status counted from every row of the queue (the counts' reference)."""
    out: dict[str, int] = {}
    for r in store.page(limit=10_000):
        out[r.status] = out.get(r.status, 0) + 1
    return out


def test_counts_follow_saves_deletes_and_resets(home):
    for repeat in (1, 2, 3):
        home.run("T-90103", repeat=repeat)
    home.run("T-65273")
    store = home.store
    first = store.page("waiting_approval", limit=1)[0].run_id
    home.reject(first, "grace", "not now", "Grace")
    counts = store.counts()
    assert counts == _grouped(store) == {"waiting_approval": 3, "handed_to_person": 1}
    store.delete(store.page("waiting_approval", limit=1)[0].run_id)
    assert store.counts() == _grouped(store) == {"waiting_approval": 2, "handed_to_person": 1}
    state = store.load(store.page("waiting_approval")[0].run_id)
    state.status = "stopped"
    store.save(state)
    assert store.counts() == _grouped(store) and store.counts()["stopped"] == 1
    replace_checkpoint(store, store.page("waiting_approval")[0].run_id, '{"cut')
    with pytest.raises(CorruptCheckpoint):
        store.load(store.page("waiting_approval")[0].run_id)
    assert store.counts() == {"corrupt": 1, "stopped": 1, "handed_to_person": 1}  # a corrupt run is not waiting
    assert store.reset() == 3
    assert store.counts() == {}


# -- two appenders at once: one chain, never a fork ------------------------------------------------


def _row(n: int, who: str, **extra: Any) -> dict[str, Any]:
    return {"run_id": f"r-{who}", "decision": "refused", "role": "agent", "name": who, "digest": f"d{n}", "at": FRIDAY, **extra}


def test_two_appenders_at_once_make_one_chain(store, new_store):
    import threading

    from core.engine.auditchain import verify_audit

    writers = [new_store(store), new_store(store)]
    start = threading.Barrier(len(writers))
    failed: list[BaseException] = []

    def append(writer: Store, who: str) -> None:
        try:
            start.wait()
            for n in range(25):
                writer.append_audit(_row(n, who))
        except BaseException as exc:  # pragma: no cover - reported below
            failed.append(exc)

    threads = [threading.Thread(target=append, args=(w, f"w{i}")) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failed == []
    rows = store.audit_rows()
    assert [r["id"] for r in rows] == list(range(1, 51))
    report = verify_audit(store)
    assert report.ok, report.problems
    assert store.chain_tip() == (report.latest, 50)


def test_of_two_deciders_who_signed_the_same_chain_one_is_told(store, new_store):
    import threading

    from core.contract.audit import AuditMoved
    from core.engine.auditchain import verify_audit

    store.append_audit(_row(0, "first"))
    tip, _n = store.chain_tip()
    writers = [new_store(store), new_store(store)]
    start = threading.Barrier(len(writers))
    outcome: dict[str, str] = {}

    def decide(writer: Store, who: str) -> None:
        start.wait()
        try:
            writer.append_audit(_row(1, who, prev=tip, sig="ed25519:x"))
            outcome[who] = "written"
        except AuditMoved:
            outcome[who] = "moved"

    threads = [threading.Thread(target=decide, args=(w, f"d{i}")) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcome.values()) == ["moved", "written"]
    assert len(store.audit_rows()) == 2 and verify_audit(store).ok


# -- the rest of the contract, method by method (every back-end, not only SQLite) ------------------


def test_the_journal_numbers_attempts_keeps_answers_and_goes_with_its_run(home):
    store = home.store
    state = home.run("T-65273")
    assert store.journal_attempt(state.run_id, 1, "live/x") == 1
    assert store.journal_attempt(state.run_id, 1, "live/x") == 2
    assert store.journal_answered(state.run_id, 1) is None
    store.journal_answer(state.run_id, 1, 2, '{"choices": []}', 120, 7)
    assert store.journal_answered(state.run_id, 1) == '{"choices": []}'
    with pytest.raises(ResolverError, match="No model call 9 of step 1"):
        store.journal_answer(state.run_id, 1, 9, "{}", 1, 1)
    calls = store.model_calls(state.run_id)
    assert [(c["step"], c["attempt"], c["answer"], c["tokens_in"], c["tokens_out"]) for c in calls] == [
        (1, 1, None, None, None),
        (1, 2, '{"choices": []}', 120, 7),
    ]
    assert calls[0]["route"] == "live/x" and calls[0]["sent_at"] == FRIDAY
    assert [(c["trusted"], c["why"]) for c in calls] == [(True, ""), (True, "")]  # the runner's own rows
    assert store.journal_problems() == []
    store.delete(state.run_id)
    assert store.model_calls(state.run_id) == []


def _plant(backend: str, home: Any, run_id: str) -> str:
    """Write step 2's attempt 1, answered, as no runner of the store: into ``runs.sqlite`` with
    the sqlite3 module (no seal), or on a team store as a superuser naming a user mapped to an
    approver's entry in ``written_by``. Returns the clause the store says why."""
    row = (run_id, 2, 1, "live/x", FRIDAY, '{"choices": []}', 10, 1, FRIDAY)
    insert = "INSERT INTO model_calls (run_id, step, attempt, route, sent_at, answer, tokens_in, tokens_out, answered_at"
    if backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(home.store.path)
        with conn:
            conn.execute(insert + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        conn.close()
        return "the row has no seal"
    import psycopg

    from pg import require_superuser

    require_superuser("writes a journal row naming another database user in written_by")
    with psycopg.connect(home.store_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO approvers (name, role, public_key, added_at, signature, private_key, db_user) "
            "VALUES ('Bob', 'agent', 'k', '', 's', '', 'bob_db')"
        )
        conn.execute(insert + ", written_by) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, 'bob_db')", row)
    return "it was written by the database user bob_db, approver Bob's"


@pytest.mark.usefixtures("not_memory_sql")
def test_a_journal_row_its_runner_did_not_write_is_never_taken_nor_counted_on_any_back_end(home, backend):
    from core.ground.errors import JournalUntrusted
    from core.models.model import CallJournal

    store = home.store
    run_id = home.run("T-65273").run_id
    store.journal_answer(run_id, 1, store.journal_attempt(run_id, 1, "live/x"), '{"choices": []}', 5, 1)
    why = _plant(backend, home, run_id)
    assert store.journal_answered(run_id, 1) == '{"choices": []}'  # the runner's step is untouched
    with pytest.raises(JournalUntrusted) as refused:
        store.journal_answered(run_id, 2)
    assert str(refused.value) == (
        f"The journal of run {run_id} holds an answer to step 2 (attempt 1) that its runner did not write ({why}), so "
        "the resume is refused and nothing was asked or proposed; `resolver doctor` lists it."
    )
    assert [(c["step"], c["trusted"], c["why"]) for c in store.model_calls(run_id)] == [(1, True, ""), (2, False, why)]
    assert store.journal_problems() == [{"run_id": run_id, "step": 2, "attempt": 1, "why": why}]
    assert CallJournal(store, run_id, "live/x").also_paid(2, 100, 10) == (0, 0, 0)
    with pytest.raises(JournalUntrusted):  # nor is it answered over (sealed or stamped as the runner's)
        store.journal_answer(run_id, 2, 1, '{"choices": []}', 1, 1)


def test_leases_are_taken_renewed_released_expired_and_cleared(home):
    import os
    import socket

    store = home.store
    run_id = home.run("T-65273").run_id
    lease = store.acquire_lease(run_id, "a@elsewhere:1:x", 60)
    assert lease.owner == "a@elsewhere:1:x" and store.summary(run_id).lease_owner == "a@elsewhere:1:x"
    with pytest.raises(LeaseHeld, match=r"being executed by a@elsewhere \(lease until"):
        store.acquire_lease(run_id, "b@elsewhere:2:y", 60)
    assert store.renew_lease(run_id, "a@elsewhere:1:x", 60) is True
    assert store.renew_lease(run_id, "b@elsewhere:2:y", 60) is False
    assert store.clear_dead_lease(run_id) is False  # a live holder on another host
    store.release_lease(run_id, "b@elsewhere:2:y")  # not the holder: nothing
    assert store.summary(run_id).lease_owner == "a@elsewhere:1:x"
    store.expire_lease(run_id)
    assert store.claim(run_id, "b@elsewhere:2:y", 60).run_id == run_id  # an expired lease is taken over
    store.release_lease(run_id, "b@elsewhere:2:y")
    assert store.summary(run_id).lease_owner is None
    dead = f"gone@{socket.gethostname()}:{2**22 + os.getpid() % 1000}:z"  # no such process here
    store.acquire_lease(run_id, dead, 600)
    assert store.clear_dead_lease(run_id) is True and store.summary(run_id).lease_owner is None
    with pytest.raises(RunNotFound):
        store.acquire_lease("nope", "a@elsewhere:1:x", 60)


def test_runs_of_a_ticket_ids_and_history(home, clock):
    store = home.store
    assert not store.has_history() and store.run_ids("T-90103") == []
    first = home.run("T-90103", repeat=1)
    clock.sleep(60)
    second = home.run("T-90103", repeat=2)
    assert [r.run_id for r in store.runs_of_task("T-90103")] == [first.run_id, second.run_id]
    assert sorted(store.run_ids("T-90103-agent")) == [first.run_id, second.run_id]
    assert store.run_ids("T-90103-agent-chat-small-1_") == []  # a prefix, not a pattern
    assert store.latest("T-90103").run_id == second.run_id and store.latest("T-00000") is None
    assert store.exists(first.run_id) and not store.exists("nope")
    assert store.has_history() and store.approvals_in_flight() == 0
    with pytest.raises(RunNotFound):
        store.delete("nope")
    with pytest.raises(RunNotFound):
        store.events("nope")


def test_the_audit_reads_find_rows_and_what_ends_an_approval(store):
    store.append_audit({**_row(0, "a"), "run_id": "r-1", "decision": "approve", "run_uid": "u-1", "sig": "ed25519:s1"})
    store.append_audit({**_row(1, "b"), "run_id": "r-2", "decision": "approve", "run_uid": "u-2"})
    store.append_audit({**_row(2, "c"), "run_id": "r-1", "decision": "refused-expired", "run_uid": "u-1"})
    found = store.find_audit_row("r-1", "approve", "ed25519:s1")
    assert found is not None and found["id"] == 1 and found["name"] == "a"
    assert store.find_audit_row("r-1", "approve", "ed25519:other") is None
    ending = store.later_ending("u-1", 1)
    assert ending is not None and ending["decision"] == "refused-expired" and ending["id"] == 3
    assert store.later_ending("u-2", 2) is None
    assert {"audit_no_update", "audit_no_delete"} <= store.audit_triggers()
    assert store.signed_approvals("ed25519:") == []  # no run holds a signed approval
    assert [r["name"] for r in store.audit(name="a")] == ["a"] and len(store.audit("r-1")) == 2


def test_backup_scrub_and_end_thread(home, tmp_path):
    import stat

    store = home.store
    state = home.run("T-65273")
    target = tmp_path / "copy"
    store.backup(target)
    assert target.is_file() and stat.S_IMODE(target.stat().st_mode) == 0o600 and target.stat().st_size > 0
    store.scrubbed(lambda: store.delete(state.run_id))
    assert not store.exists(state.run_id)
    store.end_thread()
    assert store.counts() == {}  # still usable from this thread
