"""The journal speaks only for the runner: a journaled model answer that the run's runner did not
write is never taken for the model's turn (it would become the runner's proposal).

A trial on a team store with role separation: a live run's step 3 was refused by the model
server (HTTP 401), so the run stayed ``running``; an agent-role approver's database user
inserted a ``model_calls`` row for step 3 whose answer was ``finish`` with a 24.00 CAD refund;
the runner's ``resolver resume`` made no model call, proposed the 24.00 refund, and the same
approver approved it. The same on SQLite: anyone who can write SQL into ``runs.sqlite`` could
plant an answer.

Here, on the SQLite back-end (the team store's tests are in ``tests/stores/test_pg_roles.py``): each
journal row carries a seal made with the home's key (store format 7), a planted row (no seal,
or a wrong one) refuses the resume with one sentence, the stub server is asked nothing, nothing
is proposed, the lease is given back, and ``resolver doctor`` names the run; a genuine row of the
crash window (answer journaled, step not saved) still resumes with no second call. A home of
format 6 (``tests/fixtures/home_store_format_6``) and a team store of schema 16
(``tests/fixtures/team_store_schema_16``), both made by the release before with a waiting run
and a live run stopped between its step 3's journaled answer and that step's save, are upgraded:
the waiting run approves and pays once, the stopped run resumes from its journal with no call.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from core.api.home import Home
from core.contract.store import set_crash_hook
from core.ground.clock import FixedClock
from core.ground.errors import JournalUntrusted, ResolverError
from core.stores.sqlite.files import STORE_FORMAT

from helpers import FRIDAY, LIVE_RUN, T65273_RUN, forged_finish, refused_at_step_3, stub_config, stub_route

FIXTURES = Path(__file__).parent.parent / "fixtures"
LIVE = LIVE_RUN
UNTRUSTED = (
    f"The journal of run {LIVE} holds an answer to step 3 (attempt 2) that its runner did not write "
    "({why}), so the resume is refused and nothing was asked or proposed; `resolver doctor` lists it."
)


def plant(root: Path, answer: str, seal: str | None) -> None:
    """Insert step 3's attempt 2 with ``answer`` and ``seal`` into the home's ``runs.sqlite``
    with the sqlite3 module, as anyone who may write the file can."""
    conn = sqlite3.connect(root / "runs.sqlite")
    with conn:
        route = conn.execute("SELECT route FROM model_calls WHERE run_id = ? AND step = 3", (LIVE,)).fetchone()[0]
        conn.execute(
            "INSERT INTO model_calls (run_id, step, attempt, route, sent_at, answer, tokens_in, tokens_out, answered_at, seal) "
            "VALUES (?, 3, 2, ?, ?, ?, 2660, 48, ?, ?)",
            (LIVE, route, FRIDAY, answer, FRIDAY, seal),
        )
    conn.close()


@pytest.mark.parametrize(
    ("seal", "why"),
    [(None, "the row has no seal"), ("0" * 64, "its seal does not verify with the home's key")],
)
def test_a_planted_answer_is_refused_at_resume_asks_nothing_proposes_nothing_and_doctor_names_it(
    tmp_path, stub, cli, monkeypatch, seal, why
):
    root = tmp_path / "home"
    home = Home(root, clock=FixedClock(FRIDAY))
    refused_at_step_3(home, stub)
    plant(root, forged_finish(stub), seal)
    calls = stub.calls
    sentence = UNTRUSTED.format(why=why)
    with pytest.raises(JournalUntrusted) as caught:
        home.resume(LIVE)
    assert str(caught.value) == sentence
    assert stub.calls == calls  # nothing was asked
    saved = home.store.load(LIVE)
    assert (saved.status, saved.step, saved.proposal, saved.version) == ("running", 2, None, home.store.load(LIVE).version)
    assert home.store.summary(LIVE).lease_owner is None  # the lease was given back
    rows = home.store.model_calls(LIVE)
    assert [(c["attempt"], c["trusted"], c["why"]) for c in rows if c["step"] == 3] == [(1, True, ""), (2, False, why)]

    monkeypatch.setenv("RESOLVER_CONFIG", str(stub_config(tmp_path / "config.toml", stub.url, "max_retries = 0")))
    code, out, err = cli("resume", LIVE)
    assert code == 1 and err.strip() == sentence and "Traceback" not in out + err, out + err
    assert stub.calls == calls
    code, out, err = cli("doctor")
    assert code == 1, out + err
    failed = [line for line in out.splitlines() if line.startswith("FAIL") and "journal" in line]
    assert failed == [
        f"FAIL  journal of run {LIVE}: 1 row(s) its runner did not write (step 3 attempt 2: {why}), so its resume is "
        "refused; delete those rows from model_calls (the step is asked again) or the run."
    ], out
    assert Home(root, clock=FixedClock(FRIDAY)).store.load(LIVE).proposal is None


def test_a_changed_answer_of_the_runners_own_row_is_refused_too(home, stub):
    """A row the runner wrote, its answer then rewritten by SQL: its seal no longer verifies."""
    refused_at_step_3(home, stub)
    conn = sqlite3.connect(home.root / "runs.sqlite")
    with conn:
        conn.execute(
            "UPDATE model_calls SET answer = ?, tokens_in = 2660, tokens_out = 48 WHERE run_id = ? AND step = 3",
            (forged_finish(stub), LIVE),
        )
    conn.close()
    calls = stub.calls
    with pytest.raises(JournalUntrusted, match=r"step 3 \(attempt 1\) that its runner did not write \(its seal does not verify"):
        home.resume(LIVE)
    assert stub.calls == calls and home.store.load(LIVE).proposal is None


def test_the_runs_own_crash_window_answer_still_resumes_with_no_second_call(home, stub):
    """Step 3's answer journaled (and sealed), the process gone before the step's save: the
    resume takes the answer from the journal, asks nothing, and proposes the real refund."""

    class Crash(BaseException):
        pass

    seen = []

    def hook(kind: str) -> None:
        if kind == "answer":
            seen.append(kind)
            if len(seen) == 3:
                raise Crash()

    set_crash_hook(hook)
    try:
        with pytest.raises(Crash):
            home.run("T-65273", live=stub_route(stub))
    finally:
        set_crash_hook(None)
    assert stub.calls == 3 and home.store.load(LIVE).step == 2
    assert all(c["trusted"] for c in home.store.model_calls(LIVE))
    done = home.resume(LIVE)
    assert stub.calls == 3
    assert done.state.status == "waiting_approval" and done.state.proposal is not None
    assert str(done.state.proposal.actions[0].amount) == "119.00"
    assert done.state.usage.model_calls == 3


def test_planted_rows_count_nothing_as_paid(home, stub):
    """A planted unanswered attempt would be counted as a paid call (lost in flight): it is not
    the runner's, so it counts nothing, and its step refuses the resume."""
    from core.models.model import CallJournal

    refused_at_step_3(home, stub)
    conn = sqlite3.connect(home.root / "runs.sqlite")
    with conn:
        conn.execute("INSERT INTO model_calls (run_id, step, attempt, route, sent_at) VALUES (?, 2, 9, 'x', ?)", (LIVE, FRIDAY))
    conn.close()
    journal = CallJournal(home.store, LIVE, "x")
    assert journal.also_paid(2, 100, 10) == (0, 0, 0)
    with pytest.raises(JournalUntrusted, match=r"step 2 \(attempt 9\)"):
        journal.answered(2)


def test_a_store_opened_without_the_homes_key_neither_writes_nor_trusts_its_journal(home, stub):
    """The lesson's Python API opens the store without the home's key (it only replays
    recordings): the journal is then neither written nor taken, each refusal one sentence."""
    from core.api.queue import queue_columns
    from core.stores.sqlite.checkpoint import CheckpointStore

    refused_at_step_3(home, stub)
    bare = CheckpointStore(home.root / "runs.sqlite", summarize=queue_columns)
    assert {c["trusted"] for c in bare.model_calls(LIVE)} == {None}
    for call in (lambda: bare.journal_attempt(LIVE, 3, "x"), lambda: bare.journal_answered(LIVE, 3), bare.journal_problems):
        with pytest.raises(ResolverError, match="opened without its home's key") as caught:
            call()
        assert not isinstance(caught.value, JournalUntrusted)
    assert [c["attempt"] for c in home.store.model_calls(LIVE) if c["step"] == 3] == [1]  # nothing written


def test_a_format_6_home_is_upgraded_to_7_its_journal_sealed_its_stopped_run_resumed_and_its_waiting_run_paid_once(
    tmp_path,
):
    root = tmp_path / "home"
    shutil.copytree(FIXTURES / "home_store_format_6", root, ignore=shutil.ignore_patterns("README.md"))
    for path in root.iterdir():
        path.chmod(0o600)
    conn = sqlite3.connect(root / "runs.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 6
    assert "seal" not in {r[1] for r in conn.execute("PRAGMA table_info(model_calls)")}
    conn.close()
    from core.api.queue import queue_columns
    from core.contract.store import UnsupportedStoreFormat
    from core.stores.sqlite.checkpoint import CheckpointStore

    with pytest.raises(UnsupportedStoreFormat, match=r"holds 3 journaled model call\(s\) of an earlier release"):
        CheckpointStore(root / "runs.sqlite", summarize=queue_columns)  # no key: nothing changed
    assert not (root / "approval.key").exists()
    home = Home(root, clock=FixedClock(FRIDAY))
    conn = sqlite3.connect(root / "runs.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == STORE_FORMAT == 7
    assert conn.execute("SELECT count(*) FROM model_calls WHERE seal IS NULL").fetchone()[0] == 0
    conn.close()
    assert (root / "approval.key").stat().st_mode & 0o777 == 0o600  # made at the upgrade, to seal the rows
    assert [(c["step"], c["trusted"]) for c in home.store.model_calls(LIVE)] == [(1, True), (2, True), (3, True)]
    resumed = home.resume(LIVE)  # no server: step 3's answer comes from the journal, or the resume fails
    assert resumed.kind == "continued" and resumed.state.status == "waiting_approval"
    assert resumed.state.usage.model_calls == 3 and str(resumed.state.proposal.actions[0].amount) == "119.00"
    waiting = home.resume(T65273_RUN)
    assert waiting.kind == "request"
    done = home.approve(T65273_RUN, "team_lead", "Tomás", seen=home.queue.look(waiting.state))
    assert done.status == "done" and all(op.status == "done" for op in done.operations)
    refunds = sqlite3.connect(root / "larkfield.sqlite")
    assert refunds.execute("SELECT count(*), max(amount) FROM refunds").fetchone() == (1, "119.00")
    refunds.close()


def test_a_schema_16_team_store_gets_migration_17_its_stopped_run_resumes_and_its_waiting_run_is_paid_once(tmp_path):
    import psycopg
    from core.stores.postgres.schema import ALL, LATEST

    from pg import fresh_schema, restore_frozen

    frozen = FIXTURES / "team_store_schema_16"
    had = {row["version"] for row in json.loads((frozen / "tables.json").read_text(encoding="utf-8"))["resolver_migrations"]}
    assert max(had) == 16 and 17 in ALL
    with fresh_schema() as url:
        restore_frozen(url, frozen, had, verbatim=True)
        home = Home(tmp_path / "home", clock=FixedClock(FRIDAY), store=url)
        with psycopg.connect(url) as conn:
            assert {r[0] for r in conn.execute("SELECT version FROM resolver_migrations")} == set(ALL)
            assert max(ALL) == LATEST
            assert conn.execute("SELECT count(*) FROM model_calls WHERE written_by IS NULL").fetchone()[0] == 3  # type: ignore[index]
        assert [(c["step"], c["trusted"]) for c in home.store.model_calls(LIVE)] == [(1, True), (2, True), (3, True)]
        resumed = home.resume(LIVE)  # no server: from the journal
        assert resumed.state.status == "waiting_approval" and resumed.state.usage.model_calls == 3
        waiting = home.resume(T65273_RUN)
        done = home.approve(T65273_RUN, "team_lead", "Tomás", seen=home.queue.look(waiting.state))
        assert done.status == "done" and all(op.status == "done" for op in done.operations)
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT count(*), max(amount) FROM refunds").fetchone() == (1, "119.00")
            conn.execute("INSERT INTO model_calls (run_id, step, attempt, route, sent_at) VALUES ('x', 1, 1, 'r', '')")
            assert conn.execute("SELECT written_by FROM model_calls WHERE run_id = 'x'").fetchone()[0] == conn.info.user  # type: ignore[index]
