"""The engine hardened: the executor under slow services and repeated crashes, leases, damaged
files (practice world, checkpoint store, trace rows, approval key), a row whose stored run ID
differs from its key, run IDs given out again after reset, and many processes at once.

Each kind keeps its failing input; each checks one sentence and that nothing is lost."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from core.api.home import Home
from core.contract.approval_key import load_key
from core.contract.store import UnsupportedStoreFormat, lease_owner_name
from core.contract.world import WorldMissing
from core.ground.errors import ApprovalKeyError, CorruptCheckpoint, LeaseHeld, ResolverError
from core.stores.sqlite.database import FileMoved
from core.stores.sqlite.world import SqliteWorld as World

from helpers import T65273_RUN, run_process, store_at

SERVICE_TABLES = ("refunds", "reshipments", "return_labels", "replies")


def _refunds(home: Home) -> int:
    with sqlite3.connect(home.world_path) as conn:
        return conn.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]


def _register(home: Home) -> int:
    with sqlite3.connect(home.world_path) as conn:
        return conn.execute("SELECT COUNT(*) FROM operations").fetchone()[0]


def _lease(home: Home, run_id: str) -> tuple:
    with sqlite3.connect(home.store.path) as conn:
        return conn.execute("SELECT lease_owner, lease_expires FROM runs WHERE run_id = ?", (run_id,)).fetchone()


# -- a call that kills the process, again and again ------------------------------------------------


@pytest.mark.slow
def test_killed_during_the_call_twice_then_resumed_refunds_once_in_3_counted_calls(tmp_path):
    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    kill = {"RESOLVER_KILL_AT": "call:1"}  # each process dies at its first attempt, counted and saved
    assert run_process(home.root, "approve", state.run_id, "--as", "team_lead", env=kill).returncode == -9
    assert home.store.load(state.run_id).operations[0].calls == 1
    assert run_process(home.root, "resume", state.run_id, env=kill).returncode == -9
    assert home.store.load(state.run_id).operations[0].calls == 2
    resumed = run_process(home.root, "resume", state.run_id)
    assert resumed.returncode == 0, resumed.stderr
    final = home.store.load(state.run_id)
    assert (final.status, final.operations[0].status, final.operations[0].calls) == ("done", "done", 3)
    assert "3 call(s)" in resumed.stdout
    assert _refunds(home) == 1 and _register(home) == 2  # the refund and the reply, once each
    assert _lease(home, state.run_id) == (None, None)


@pytest.mark.slow
def test_three_calls_that_each_kill_the_process_hand_the_run_to_a_person_with_nothing_written(tmp_path):
    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    kill = {"RESOLVER_KILL_AT": "call:1"}
    assert run_process(home.root, "approve", state.run_id, "--as", "team_lead", env=kill).returncode == -9
    for _ in range(2):
        assert run_process(home.root, "resume", state.run_id, env=kill).returncode == -9
    resumed = run_process(home.root, "resume", state.run_id)
    assert "Traceback" not in resumed.stderr
    final = home.store.load(state.run_id)
    op = final.operations[0]
    assert (final.status, op.status, op.calls) == ("handed_to_person", "failed", 3)
    assert "gave up after 3 call(s)" in op.error
    assert _refunds(home) == 0
    assert _lease(home, state.run_id) == (None, None)


@pytest.mark.slow
def test_a_kill_after_the_write_leaves_no_lease_on_the_done_run(tmp_path):
    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    killed = run_process(home.root, "approve", state.run_id, "--as", "team_lead", env={"RESOLVER_KILL_AT": "write:1"})
    assert killed.returncode == -9
    assert _lease(home, state.run_id)[0] is not None  # the dead process's lease
    assert run_process(home.root, "resume", state.run_id).returncode == 0
    final = home.store.load(state.run_id)
    assert (final.status, final.operations[0].calls) == ("done", 1)
    assert _lease(home, state.run_id) == (None, None) and _refunds(home) == 1


def test_a_resume_that_finds_the_run_final_clears_a_dead_lease(home):
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    with sqlite3.connect(home.store.path) as conn:  # a lease left by a process that no longer exists
        conn.execute(
            "UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?",
            (f"resolver@{os.uname().nodename}:999999999:dead", "2099-01-01T00:00:00+00:00", state.run_id),
        )
    assert home.resume(state.run_id).kind == "final"
    assert _lease(home, state.run_id) == (None, None)


def test_a_live_lease_on_a_final_run_is_left_alone(home):
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    owner = lease_owner_name("other")  # this very process: alive
    home.store.acquire_lease(state.run_id, owner, ttl_s=600)
    assert home.resume(state.run_id).kind == "final"
    assert _lease(home, state.run_id)[0] == owner


# -- a lease shorter than the call ------------------------------------------------------------------


@pytest.mark.slow
def test_a_resume_during_a_call_longer_than_the_lease_does_not_take_the_run_over(tmp_path):
    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    env = {**os.environ, "RESOLVER_LEASE_TTL_S": "2", "RESOLVER_SERVICE_DELAY_S": "7"}
    env.pop("RESOLVER_KILL_AT", None)
    first = subprocess.Popen(
        [sys.executable, "-m", "core", "approve", state.run_id, "--as", "team_lead", "--home", str(home.root)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 30
        while home.store.load(state.run_id).status != "executing" or home.store.load(state.run_id).operations[0].calls < 1:
            assert time.monotonic() < deadline and first.poll() is None, "the approve never reached its call"
            time.sleep(0.1)
        time.sleep(3.5)  # well past the 2 s lease: only the heartbeat keeps it
        second = subprocess.run(
            [sys.executable, "-m", "core", "resume", state.run_id, "--home", str(home.root)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        _out, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert second.returncode != 0 and "is being executed by" in second.stdout + second.stderr
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, err
    final = home.store.load(state.run_id)
    assert (final.status, final.operations[0].calls) == ("done", 1)
    assert _refunds(home) == 1 and _lease(home, state.run_id) == (None, None)


def test_the_heartbeat_renews_the_lease_while_a_call_runs(home):
    from core.engine import executor

    state = home.run("T-65273")
    owner = lease_owner_name()
    home.store.acquire_lease(state.run_id, owner, ttl_s=0.3)
    before = _lease(home, state.run_id)[1]
    home.clock.sleep(60)  # the fixed clock moves on; a renewal stamps the new time
    beat = executor.Heartbeat(home.store, state.run_id, owner, ttl_s=0.3)
    beat.start()
    try:
        deadline = time.monotonic() + 10
        while _lease(home, state.run_id)[1] == before:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
    finally:
        beat.stop()
    assert _lease(home, state.run_id)[0] == owner and not beat.running


def test_an_execution_of_three_operations_starts_one_heartbeat_thread(home, monkeypatch):
    """No thread per service call; one heartbeat per execution, stopped before the lease is given
    back."""
    import threading

    started: list[str] = []
    real_start = threading.Thread.start

    def start(self: threading.Thread) -> None:
        started.append(self.name)
        real_start(self)

    monkeypatch.setattr(threading.Thread, "start", start)
    state = home.run("T-90103")
    done = home.approve(state.run_id, "team_lead")
    assert done.status == "done" and len(done.operations) == 3
    beats = [name for name in started if name.startswith("lease-heartbeat-")]
    assert beats == [f"lease-heartbeat-{state.run_id}"]
    assert not any(t.name in beats for t in threading.enumerate())  # stopped with the execution
    assert _lease(home, state.run_id) == (None, None)


# -- two resumes of one crashed loop ----------------------------------------------------------------


def test_a_resume_of_a_loop_that_another_process_is_running_is_refused_before_any_model_call(home, monkeypatch):
    from core.models import recorded_model

    state = home.run("T-65273", max_steps=1)  # the loop stops after step 1 ... make it running again
    with sqlite3.connect(home.store.path) as conn:
        raw = json.loads(conn.execute("SELECT state FROM runs WHERE run_id = ?", (state.run_id,)).fetchone()[0])
        raw["status"], raw["max_steps"] = "running", 8
        conn.execute("UPDATE runs SET state = ?, status = 'running' WHERE run_id = ?", (json.dumps(raw), state.run_id))
    home.store.acquire_lease(state.run_id, "resolver@elsewhere:1:live", ttl_s=600)
    asked = []
    monkeypatch.setattr(recorded_model.RecordedModel, "complete", lambda self, messages: asked.append(1))
    before = home.store.load(state.run_id)
    with pytest.raises(LeaseHeld, match="is being executed by resolver@elsewhere"):
        home.resume(state.run_id)
    assert asked == []
    after = home.store.load(state.run_id)
    assert (after.version, after.usage.model_calls) == (before.version, before.usage.model_calls)


@pytest.mark.slow
def test_two_resumes_of_a_killed_loop_pay_for_the_3_model_calls_once(tmp_path):
    home = Home(tmp_path / "h")
    killed = run_process(home.root, "run", "T-65273", env={"RESOLVER_KILL_AT": "step:1"})
    assert killed.returncode == -9
    run_id = T65273_RUN
    assert home.store.load(run_id).usage.model_calls == 1
    env = {k: v for k, v in os.environ.items() if k != "RESOLVER_KILL_AT"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "core", "resume", run_id, "--home", str(home.root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(2)
    ]
    results = [p.communicate(timeout=60) for p in procs]
    assert all("Traceback" not in err for _out, err in results)
    final = home.store.load(run_id)
    assert (final.status, final.usage.model_calls, final.usage.tokens_in) == ("waiting_approval", 3, 7155)
    assert _lease(home, run_id) == (None, None)


def test_a_loop_crash_in_this_process_gives_the_lease_back(home):
    from core.engine.runner import LoopCrash, crash_after_step

    with pytest.raises(LoopCrash):
        home.run("T-65273", on_step=crash_after_step(1))
    assert _lease(home, T65273_RUN) == (None, None)
    resumed = home.resume(T65273_RUN)
    assert (resumed.state.status, resumed.state.usage.model_calls) == ("waiting_approval", 3)


# -- a missing or damaged practice world ------------------------------------------------------------


def test_a_directory_in_place_of_the_practice_world_gives_a_sentence(tmp_path):
    (tmp_path / "h" / "larkfield.sqlite").mkdir(parents=True)
    with pytest.raises(WorldMissing, match="is not a file"):
        Home(tmp_path / "h")


@pytest.mark.parametrize("damage", ["deleted", "zero-length"])
def test_a_lost_practice_world_is_not_rebuilt_over_a_home_with_runs(tmp_path, damage):
    home = Home(tmp_path / "h")
    state = home.run("T-65273")
    with pytest.raises(Exception, match="simulated crash"):
        home.approve(state.run_id, "team_lead", interrupt="after-write")  # the refund is in the register
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.world_path}{suffix}").unlink(missing_ok=True)
    if damage == "zero-length":
        home.world_path.touch()
    resume = run_process(home.root, "resume", state.run_id)
    assert resume.returncode != 0 and "Traceback" not in resume.stderr
    assert "rebuilding it would lose its operations register" in resume.stdout + resume.stderr
    assert "resolver reset --all" in resume.stdout + resume.stderr
    with sqlite3.connect(home.world_path) as conn:  # nothing rebuilt: no tables, no fresh register
        assert conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
    assert home.store.load(state.run_id).status == "executing"  # the run unchanged
    again = run_process(home.root, "resume", state.run_id)  # and again, from the file the first left
    assert again.returncode != 0 and "would lose its operations register" in again.stdout + again.stderr
    assert "T-65273" in run_process(home.root, "runs").stdout  # the queue can still be read
    reset = run_process(home.root, "reset", "--all")
    assert reset.returncode == 0, reset.stderr
    assert World(home.world_path).get_order("LK-507862")["order_id"] == "LK-507862"


def test_a_world_deleted_while_the_home_is_open_is_not_rebuilt_either(home):
    state = home.run("T-65273")
    again = Home(home.root, clock=home.clock)  # checked with history: protected in this process
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.world_path}{suffix}").unlink(missing_ok=True)
    with pytest.raises(WorldMissing, match=r"larkfield\.sqlite is missing, but this home has runs"):
        again.world().get_order("LK-507862")
    assert not home.world_path.exists()
    assert state.run_id


def test_a_world_moved_away_under_an_open_home_is_refused_and_keeps_its_register_when_put_back(home, tmp_path):
    """A trial: ``larkfield.sqlite`` moved away (``mv``, its WAL left behind) while the app was
    open; the app's next read made an empty world in its place, and closing it took the real
    one's WAL, the register's refund: put back, the world said 0 changes for a run done. Now the
    read is refused, nothing is made, and the file put back holds the refund."""
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    world = home.world()
    assert [c["kind"] for c in world.changes()].count("refund") == 1
    moved = tmp_path / "larkfield.moved"
    os.rename(home.world_path, moved)
    for _ in range(2):
        with pytest.raises(FileMoved, match="is gone"):
            world.changes()
        assert not home.world_path.exists()
    os.rename(moved, home.world_path)
    assert [c["kind"] for c in world.changes()].count("refund") == 1
    assert [c["kind"] for c in World(home.world_path).changes()].count("refund") == 1


def test_a_fresh_home_still_builds_its_world_and_reset_all_rebuilds_it(tmp_path):
    home = Home(tmp_path / "h")
    assert home.world_path.stat().st_size > 0
    home.run("T-65273")
    home.reset(everything=True)
    assert World(home.world_path).get_order("LK-507862")["order_id"] == "LK-507862"


# -- a zero-length or foreign runs.sqlite -----------------------------------------------------------


def test_a_foreign_sqlite_file_is_not_adopted_as_the_checkpoint_store(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, jpeg BLOB)")
    with pytest.raises(UnsupportedStoreFormat, match="not a resolver checkpoint store"):
        store_at(path)
    with sqlite3.connect(path) as conn:
        assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} == {"photos"}


def test_a_file_marked_by_another_application_is_refused(tmp_path):
    path = tmp_path / "runs.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA application_id = 1234")
    with pytest.raises(UnsupportedStoreFormat, match="another application's database"):
        store_at(path)


def test_a_zero_length_store_in_a_used_home_is_refused_and_in_a_new_home_is_fine(home, tmp_path):
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.store.path}{suffix}").unlink(missing_ok=True)
    home.store.path.touch()
    for _ in range(2):  # refused every time: the refusal writes nothing (it used to write SQLite's header,
        # and the second open then took the lost store for a new one; a new user paid a second refund)
        with pytest.raises(UnsupportedStoreFormat, match="is empty, but this home has been used"):
            store_at(home.store.path)
        assert home.store.path.stat().st_size == 0
    fresh = tmp_path / "new" / "runs.sqlite"
    fresh.parent.mkdir()
    fresh.touch()
    assert store_at(fresh).counts() == {}


@pytest.mark.parametrize("lost", ["missing", "empty"])
def test_a_lost_store_in_a_used_home_is_refused_by_every_command_but_reset_all_and_restore(home, tmp_path, lost):
    """A trial: ``runs.sqlite`` moved away from a home with an approval key and a register, then
    ``resolver run`` made a new, empty store there without a word, and ``resolver runs`` said
    there was no home folder. A missing store is refused as an empty one is, by every command,
    and nothing is made; ``reset --all`` (which the sentence names, and which was refused too)
    and ``restore`` (likewise) are the two ways out."""
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    backup = tmp_path / "before.tar.gz"
    assert run_process(home.root, "backup", str(backup)).returncode == 0
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.store.path}{suffix}").unlink(missing_ok=True)
    if lost == "empty":
        home.store.path.touch()
    said = f"The checkpoint store {home.store.path} is {lost}, but this home has been used"
    for argv in (("run", "T-90104"), ("approve", state.run_id, "--as", "team_lead"), ("runs",), ("show", state.run_id)):
        done = run_process(home.root, *argv)
        assert done.returncode != 0, argv
        if argv[0] in ("runs", "show") and lost == "missing":
            assert "has no runs.sqlite: its runs were moved or deleted. Nothing was created." in done.stderr, argv
        else:
            assert said in done.stderr, (argv, done.stderr)
        assert "Traceback" not in done.stderr
        assert home.store.path.exists() == (lost == "empty")
    done = run_process(home.root, "restore", str(backup))
    assert done.returncode == 0, done.stderr
    assert state.run_id in run_process(home.root, "runs").stdout
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.store.path}{suffix}").unlink(missing_ok=True)
    done = run_process(home.root, "reset", "--all")
    assert done.returncode == 0, done.stderr
    assert "Deleted 0 saved run(s). Rebuilt the practice world from data/." in done.stdout
    assert run_process(home.root, "run", "T-90104").returncode == 0


def test_a_missing_store_beside_a_world_is_lost_though_nothing_was_approved(home):
    """A trial: the lesson's Friday (a run waiting, claimed and handed over; no approval key, no
    register write), ``runs.sqlite`` moved away: ``claim`` said "No run" and made a new, empty
    store, which ``runs`` then listed as empty. A home's first use makes the store before the
    world, so a store missing beside a world was lost: refused, nothing made."""
    state = home.run("T-65273")
    assert not home.key_path.exists()
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.store.path}{suffix}").unlink(missing_ok=True)
    done = run_process(home.root, "claim", state.run_id, "--as", "team_lead", "--name", "X")
    assert done.returncode != 0
    assert f"The checkpoint store {home.store.path} is missing, but this home has been used" in done.stderr
    assert not home.store.path.exists()


@pytest.mark.parametrize("argv", [("run", "T-90103"), ("show", "{run}")])
def test_a_world_missing_beside_runs_is_refused_before_anything_is_made_or_saved(home, argv):
    """A trial: with ``larkfield.sqlite`` moved away, ``resolver run`` saved a new run at step 0
    before it found no world, and ``run`` and ``show`` each left an empty 4 KB world that every
    later command took for an emptied one. Now each is refused with the missing sentence, no
    world file is made and no run is saved."""
    state = home.run("T-65273")
    for suffix in ("", "-wal", "-shm"):
        Path(f"{home.world_path}{suffix}").unlink(missing_ok=True)
    done = run_process(home.root, *(a.format(run=state.run_id) for a in argv))
    assert done.returncode != 0
    assert f"The practice world {home.world_path} is missing, but this home has runs" in done.stderr
    assert "Traceback" not in done.stderr
    assert not home.world_path.exists()
    assert [s.run_id for s in store_at(home.store.path).page()] == [state.run_id]


def test_a_new_store_is_marked_as_resolver_s(tmp_path):
    store_at(tmp_path / "runs.sqlite")
    with sqlite3.connect(tmp_path / "runs.sqlite") as conn:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == 0x52534C56


# -- audit triggers ---------------------------------------------------------------------------------


def test_missing_audit_triggers_are_created_again_at_open_and_reported(home):
    state = home.run("T-65273")
    home.approve(state.run_id, "team_lead")
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("DROP TRIGGER audit_no_delete")
    store = store_at(home.store.path)
    assert any("audit_no_delete, audit_no_update" in r for r in store.repairs)
    with sqlite3.connect(home.store.path) as conn, pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM audit")
    assert store_at(home.store.path).repairs == []


# -- one broken trace row ---------------------------------------------------------------------------


def _entries(home: Home, run_id: str, sql: str, *args) -> None:
    with sqlite3.connect(home.store.path) as conn:
        conn.execute(sql, (*args, run_id))


def test_one_truncated_event_row_gives_a_sentence_and_the_trace_still_shows(home, cli):
    state = home.run("T-65273")
    _entries(home, state.run_id, "UPDATE entries SET body = substr(body, 1, 20) WHERE list = 'events' AND seq = 2 AND run_id = ?")
    with pytest.raises(CorruptCheckpoint, match=f"The checkpoint of run {state.run_id} is corrupt"):
        Home(home.root, clock=home.clock).store.load(state.run_id)
    events = home.store.events(state.run_id)
    assert events[1]["kind"] == "corrupt" and "is damaged" in events[1]["message"]
    code, out, err = cli("trace", state.run_id)
    assert code == 0 and "Traceback" not in out + err and f"this event of run {state.run_id} is damaged" in out


def test_a_deeply_nested_state_gives_a_sentence_not_a_recursion_error(home, cli):
    state = home.run("T-65273")
    deep = '{"a":' * 100_000 + "1" + "}" * 100_000
    _entries(home, state.run_id, "UPDATE entries SET body = ? WHERE list = 'events' AND seq = 1 AND run_id = ?", deep)
    with pytest.raises(CorruptCheckpoint, match=r"nested too deeply|corrupt|does not match"):
        Home(home.root, clock=home.clock).store.load(state.run_id)
    assert home.store.events(state.run_id)[0]["kind"] == "corrupt"
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", ('{"x":' * 100_000 + "1" + "}" * 100_000, state.run_id))
    with pytest.raises(CorruptCheckpoint):
        Home(home.root, clock=home.clock).store.load(state.run_id)
    code, out, err = cli("trace", state.run_id)
    assert code == 0 and "Traceback" not in out + err and "RecursionError" not in out + err


# -- a row whose stored run ID differs from its key -------------------------------------------------


def test_a_row_whose_state_names_another_run_is_corrupt_and_approving_it_writes_nothing(home):
    a = home.run("T-65273")
    b = home.run("T-65273")
    with sqlite3.connect(home.store.path) as conn:
        header = conn.execute("SELECT state FROM runs WHERE run_id = ?", (a.run_id,)).fetchone()[0]
        conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (header.replace(a.run_id, b.run_id), a.run_id))
    fresh = Home(home.root, clock=home.clock)
    with pytest.raises(CorruptCheckpoint, match=f"stored under run {a.run_id} says it is run {b.run_id}"):
        fresh.store.load(a.run_id)
    b_before = fresh.store.load(b.run_id)
    with pytest.raises(ResolverError):
        fresh.approve(a.run_id, "team_lead")
    b_after = fresh.store.load(b.run_id)
    assert (b_after.version, b_after.status) == (b_before.version, "waiting_approval")
    assert _refunds(fresh) == 0 and fresh.store.audit() == []


# -- run IDs come back after reset ------------------------------------------------------------------


def test_a_run_that_reuses_a_readable_id_after_reset_is_never_taken_for_the_old_one(home):
    """Operation IDs are bound to run_uid: a run that reuses a readable ID after a runs-only
    reset plans new operation IDs for the same proposal, so the first run's register entries are
    never taken for its own "already done" writes. The new run never waits at all: the practice
    world records PAY-507862-2 as refunded in full, so its proposal breaks the proposal rules
    (P5) and it is handed to a person; and were it waiting, its approval would be refused (one
    effect per ticket outlives the deleted run)."""
    from core.engine.approval import plan_operations, world_problem

    first = home.run("T-65273")
    done = home.approve(first.run_id, "team_lead")
    assert done.status == "done" and _refunds(home) == 1
    home.reset()
    again = home.run("T-65273")
    assert again.run_id == first.run_id and again.run_uid != first.run_uid
    assert again.status == "handed_to_person" and [e.data["rule"] for e in again.events if e.kind == "rule_broken"] == ["P5"]
    same = again.model_copy(update={"proposal": first.proposal, "status": "waiting_approval"})
    assert plan_operations(same)[0].operation_id != done.operations[0].operation_id
    problem = world_problem(home.store, same, home.clock.now(), world=home.world())
    assert problem is not None and problem[0] == "duplicate" and f"{first.run_id} already refunded on LK-507862" in problem[1]
    assert _refunds(home) == 1 and _register(home) == 2  # the refund and its reply: nothing more


# -- many processes at once -------------------------------------------------------------------------

_OPEN = "import sys; from core.api.home import Home; Home(sys.argv[1]); print('ok')"


@pytest.mark.slow
def test_five_processes_opening_a_fresh_home_at_once_all_succeed(tmp_path):
    for n in range(3):
        root = tmp_path / f"h{n}"
        procs = [
            subprocess.Popen([sys.executable, "-c", _OPEN, str(root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(5)
        ]
        results = [p.communicate(timeout=120) for p in procs]
        assert [r[0].strip() for r in results] == ["ok"] * 5, [r[1][-400:] for r in results]
        assert World(root / "larkfield.sqlite").get_order("LK-507862")["order_id"] == "LK-507862"


@pytest.mark.slow
def test_concurrent_runs_of_one_ticket_get_distinct_run_ids(tmp_path):
    root = tmp_path / "h"
    Home(root)
    env = {k: v for k, v in os.environ.items() if k != "RESOLVER_KILL_AT"}
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "core", "run", "T-65273", "--home", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(4)
    ]
    results = [(p.communicate(timeout=120), p.returncode) for p in procs]
    assert all(code == 0 for _r, code in results), [r[1][-400:] for r, _c in results]
    ids = {s.run_id for s in Home(root).store.runs_of_task("T-65273")}
    assert len(ids) == 4


# -- a broken approval.key --------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"not hex at all\n", b"abc\n", "clé-é".encode(), b"\xff\xfe\x00"])
def test_a_damaged_approval_key_gives_a_sentence(tmp_path, content):
    key = tmp_path / "approval.key"
    key.write_bytes(content)
    key.chmod(0o600)
    with pytest.raises(ApprovalKeyError, match="is damaged"):
        load_key(key)
    assert key.read_bytes() == content


@pytest.mark.parametrize("content", [b"", b"ab\n", b"00" * 31 + b"\n"])
def test_an_empty_or_short_approval_key_is_refused(tmp_path, content):
    key = tmp_path / "approval.key"
    key.write_bytes(content)
    key.chmod(0o600)
    with pytest.raises(ApprovalKeyError, match="too short"):
        load_key(key)


def test_a_directory_in_place_of_the_approval_key_gives_a_sentence(tmp_path):
    (tmp_path / "approval.key").mkdir()
    with pytest.raises(ApprovalKeyError, match="is not a file"):
        load_key(tmp_path / "approval.key")


def test_an_approval_key_others_can_read_is_refused_with_chmod_600(tmp_path):
    key = tmp_path / "approval.key"
    load_key(key)
    key.chmod(0o644)
    with pytest.raises(ApprovalKeyError, match="chmod 600"):
        load_key(key)
    key.chmod(0o600)
    assert len(load_key(key)) == 32


def test_a_missing_key_while_approvals_are_in_flight_is_not_made_again(home):
    from core.engine.executor import SimulatedCrash

    other = home.run("T-65273")
    with pytest.raises(SimulatedCrash):
        home.approve(other.run_id, "team_lead", interrupt="before-write")
    home.key_path.unlink()
    with pytest.raises(ApprovalKeyError, match="missing while 1 approved run"):
        home.approval_key()
    assert not home.key_path.exists()
    assert home.store.load(other.run_id).status == "executing"


def test_a_missing_key_in_a_home_with_nothing_in_flight_is_made_0600(home):
    key = home.approval_key()
    assert len(key) == 32 and stat.S_IMODE(home.key_path.stat().st_mode) == 0o600


# -- file modes -------------------------------------------------------------------------------------


def test_database_files_and_their_wal_and_shm_are_0600(home):
    home.run("T-65273")
    files = [p for p in home.root.iterdir() if p.name.startswith(("runs.sqlite", "larkfield.sqlite"))]
    assert {p.name for p in files} >= {"runs.sqlite", "runs.sqlite-wal", "larkfield.sqlite"}
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in files} == dict.fromkeys((p.name for p in files), 0o600)


def test_an_old_0644_database_keeps_the_mode_its_owner_set(home):
    """Files are left as their owner set them (a shop home that cannot be downgraded), instead of
    the earlier narrowing of modes at open: resolver never changes the mode of a file it did not
    make; `resolver doctor` says the file is readable by others, with the chmod to run."""
    home.store.db.close()
    home.store.path.chmod(0o644)
    store_at(home.store.path)
    assert stat.S_IMODE(home.store.path.stat().st_mode) == 0o644
