"""Moving a store: ``resolver store copy`` SQLite -> PostgreSQL -> SQLite with the demo home, a
waiting run approved on each copy paying exactly once; a shop home's files and approvers folder to
folder; a used target refused; a copy that differs said so (exit 1); ``resolver store check`` and
``resolver store migrate``."""

from __future__ import annotations

import shutil

import pytest
from core.api.home import Home
from core.cli import main
from core.ground.clock import FixedClock
from core.ops.storecopy import HOME_FILES, copy_store, verify_copy
from core.stores import open_rows, register_entries, store_path
from core.stores.sqlite.files import STORE_FORMAT

from helpers import MONDAY, copy_frozen_home, shop_cli
from pg import fresh_schema

WAITING = "T-65273-agent-chat-small-1"
GRACE = "grace-passphrase"


def _store(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["store", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def _paid_once(home: Home) -> None:
    """Approve the waiting T-65273 run on ``home``: one refund and one reply, and a resume writes
    nothing more; the register's numbers go on from the copied ones."""
    before = [e for e in register_entries(home.world_at) if e["actor"] == WAITING]
    assert before == []
    refunds_before = [c for c in home.queue.changes() if c["kind"] == "refund"]
    done = home.approve(WAITING, "grace", "Grace")
    assert done.status == "done"
    home.resume(WAITING)
    mine = [e for e in register_entries(home.world_at) if e["actor"] == WAITING]
    assert sorted(e["service"] for e in mine) == ["request_refund", "send_reply"]
    refunds = [c for c in home.queue.changes() if c["kind"] == "refund"]
    assert len(refunds) == len(refunds_before) + 1
    assert [c["operation_id"] for c in refunds if c not in refunds_before] == [
        e["operation_id"] for e in mine if e["service"] == "request_refund"
    ]
    seqs = [e["seq"] for e in register_entries(home.world_at)]
    assert seqs == list(range(1, len(seqs) + 1))


def _equal(out: str, runs: int) -> None:
    assert "Verified:" in out and "FAIL" not in out
    assert "  counts equal: runs " in out
    assert f"  runs: {runs} of {runs} with the same version and proposal digest" in out
    assert "  audit: chain intact," in out and "the source's tip" in out
    assert "the same operations in the same order with the same numbers" in out


@pytest.mark.slow
def test_the_demo_home_moves_to_postgresql_and_back_and_pays_once(demo_home, tmp_path, capsys):
    source = demo_home.root
    runs = sum(demo_home.store.counts().values())
    tip = demo_home.store.chain_tip()
    with fresh_schema() as url:
        code, out, err = _store(capsys, "copy", "--from", f"sqlite://{source}", "--to", url)
        assert code == 0, err
        _equal(out, runs)
        assert "kind: practice, recorded in the team store" in out
        assert "per-shop parts: approval.key copied into the team store's shop_parts" in out

        back = tmp_path / "back"
        code, out, err = _store(capsys, "copy", "--from", url, "--to", f"sqlite://{back}")
        assert code == 0, err
        _equal(out, runs)
        assert open_rows(back).row_counts() == open_rows(source).row_counts() == open_rows(url).row_counts()
        assert Home(back, clock=FixedClock(MONDAY)).store.chain_tip() == tip

        assert f"per-shop parts: approval.key copied into files of {back} (mode 0600)" in out
        # the key that signed the demo's approval in flight went with the store both ways (the
        # store's shop_parts, then the folder's file): its run is verified and paid once
        assert (back / "approval.key").read_bytes() == (source / "approval.key").read_bytes()
        on_pg = tmp_path / "on-pg"
        on_pg.mkdir(mode=0o700)
        _paid_once(Home(on_pg, clock=FixedClock(MONDAY), store=url))
        _paid_once(Home(back, clock=FixedClock(MONDAY)))
    assert [e for e in register_entries(demo_home.world_at) if e["actor"] == WAITING] == []  # the source paid nothing


def test_a_folder_copy_carries_the_files_and_the_approvers_of_a_shop(tmp_path, capsys, monkeypatch):
    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    assert shop("approve", "--yes", WAITING, "--name", "Grace", passphrase=GRACE)[0] == 0
    target = tmp_path / "copy"
    code, out, err = _store(capsys, "copy", "--from", f"sqlite://{shop.root}", "--to", f"sqlite://{target}")
    assert code == 0, err
    _equal(out, 1)
    assert "registry: 1 approvers, one transaction" in out
    copied = [name for name in HOME_FILES if (shop.root / name).exists()]
    assert {"home.json", "approvers.json", "audit.head"} <= set(copied)
    for name in copied:
        assert (target / name).read_bytes() == (shop.root / name).read_bytes()
        assert (target / name).stat().st_mode & 0o077 == 0
    copy = shop_cli(target, capsys, monkeypatch)
    code, out, err = copy("audit", "verify")
    assert code == 0, out + err


def test_a_used_target_is_refused_with_one_sentence_and_nothing_written(demo_home, tmp_path, capsys):
    target = tmp_path / "target"
    Home(target, clock=FixedClock(MONDAY)).run("T-90104", repeat=1)
    before = open_rows(target).row_counts()
    code, out, err = _store(capsys, "copy", "--from", f"sqlite://{demo_home.root}", "--to", f"sqlite://{target}")
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "already holds 1 runs row(s)" in err and "nothing is merged" in err
    assert open_rows(target).row_counts() == before


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (("--from", "ftp://x", "--to", "sqlite:///tmp/x"), "--from has the scheme 'ftp'"),
        (("--from", "sqlite:///nowhere/at/all", "--to", "sqlite:///tmp/x"), "There is no resolver store in the home folder"),
    ],
)
def test_a_bad_source_is_one_sentence(argv, says, capsys):
    code, out, err = _store(capsys, "copy", *argv)
    assert code in (1, 2) and out == "" and says in err and err.count("\n") == 1


def test_a_copy_into_itself_is_refused(demo_home, capsys):
    code, _out, err = _store(capsys, "copy", "--from", f"sqlite://{demo_home.root}", "--to", f"sqlite://{demo_home.root}/")
    assert code == 1 and "are one store" in err


def test_a_copy_that_differs_says_what_differs(demo_home, tmp_path):
    target = tmp_path / "target"
    assert copy_store(demo_home.root, target).ok
    copy = Home(target, clock=FixedClock(MONDAY))
    copy.store.save(copy.store.load(WAITING))  # one more version on the copy
    copy.world("manual").request_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    report = verify_copy(demo_home.root, target)
    assert not report.ok
    said = "\n".join(report.all_lines())
    assert f"FAIL: 1 of {sum(copy.store.counts().values())} run(s) differ in version or proposal digest: {WAITING}" in said
    assert "FAIL: row count of refunds" in said and "FAIL: register:" in said


def test_check_says_version_rows_and_chain(demo_home, capsys):
    code, out, err = _store(capsys, "check", "--home", str(demo_home.root))
    assert code == 0, out + err
    assert f"Store: the home folder {demo_home.root}" in out and ", this resolver's" in out
    assert "  audit: chain intact," in out and "  rows: runs " in out


def test_check_fails_on_a_folder_without_a_store(tmp_path, capsys):
    code, out, _err = _store(capsys, "check", "--store", f"sqlite://{tmp_path / 'none'}")
    assert code == 1 and "FAIL: there is no resolver store in the home folder" in out


def test_check_fails_on_an_older_store_until_migrate_upgrades_it(tmp_path, capsys):
    old = copy_frozen_home(tmp_path / "old")
    code, out, _err = _store(capsys, "check", "--home", str(old))
    assert code == 1 and "run `resolver store migrate` first" in out
    code, out, err = _store(capsys, "migrate", "--home", str(old))
    assert code == 0, err
    assert f"version 0 before, {STORE_FORMAT} after (migrated from 0)" in out
    code, out, err = _store(capsys, "migrate", "--home", str(old))
    assert f"version {STORE_FORMAT} before, {STORE_FORMAT} after (already this resolver's)" in out
    code, out, _err = _store(capsys, "check", "--home", str(old))
    assert code == 0, out


def test_check_and_migrate_a_team_store(capsys):
    with fresh_schema() as url:
        code, out, _err = _store(capsys, "check", "--store", url)
        assert code == 1 and "FAIL: there is no resolver store in the team store" in out
        code, out, err = _store(capsys, "migrate", "--store", url)
        assert code == 0, err
        from core.stores.postgres.schema import LATEST

        assert f"version 0 before, {LATEST} after (migrated from 0)" in out
        code, out, err = _store(capsys, "check", "--store", url, "--json")
        assert code == 0, err
        assert '"ok": true' in out


def test_a_broken_chain_fails_the_check(demo_home, tmp_path, capsys):
    root = tmp_path / "broken"
    shutil.copytree(demo_home.root, root)
    import sqlite3

    with sqlite3.connect(store_path(root)) as conn:
        conn.execute("DROP TRIGGER audit_no_update")
        conn.execute("UPDATE audit SET detail = 'edited' WHERE id = 1")
    code, out, _err = _store(capsys, "check", "--home", str(root))
    assert code == 1
    assert "FAIL: The checkpoint store" in out and "had lost its trigger(s) audit_no_update" in out
    assert "FAIL: audit: row 2 (" in out and "does not follow the row before it" in out


def test_a_shop_store_keeps_its_kind_through_two_team_stores_and_back(tmp_path, capsys, monkeypatch):
    from core.api.homekind import home_kind

    shop = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert shop("init", "--shop")[0] == 0
    assert shop("approvers", "init", passphrase=GRACE)[0] == 0
    assert shop("run", "T-65273")[0] == 0
    with fresh_schema() as first, fresh_schema() as second:
        code, out, err = _store(capsys, "copy", "--from", f"sqlite://{shop.root}", "--to", first)
        assert code == 0, err
        assert "kind: shop, recorded in the team store" in out
        assert "per-shop parts: approvers.json, audit.head copied into the team store's shop_parts" in out
        code, out, err = _store(capsys, "copy", "--from", first, "--to", second)  # PostgreSQL to PostgreSQL
        assert code == 0, err
        _equal(out, 1)
        # a new user's trial: the copy of a team store had no seal and no head, said "Verified", and
        # could decide nothing; now the per-shop parts go with it, and its audit verifies
        assert "per-shop parts: approvers.json, audit.head copied into the team store's shop_parts" in out
        from core.cli import main

        assert main(["audit", "verify", "--home", str(tmp_path / "on-second"), "--store", second]) == 0, capsys.readouterr()
        assert open_rows(second).recorded_kind() == "shop"
        assert open_rows(second).row_counts()["approvers"] == 1
        back = tmp_path / "back"
        code, out, err = _store(capsys, "copy", "--from", second, "--to", f"sqlite://{back}")
        assert code == 0, err
        assert "home.json written (a shop home)" in out
        assert f"per-shop parts: approvers.json, audit.head copied into files of {back} (mode 0600)" in out
        assert home_kind(back) == "shop"
        capsys.readouterr()
        assert main(["audit", "verify", "--home", str(back)]) == 0, capsys.readouterr()
        assert open_rows(back).row_counts() == open_rows(shop.root).row_counts()
        # a team store made for a practice home refuses a shop store's rows, nothing written
        with fresh_schema() as practice:
            Home(tmp_path / "practice", clock=FixedClock(MONDAY), store=practice)
            code, out, err = _store(capsys, "copy", "--from", second, "--to", practice)
            assert code == 1 and "was made for a practice home and the source is a shop home's" in err
            assert open_rows(practice).row_counts()["approvers"] == 0


def test_check_of_a_team_store_that_cannot_be_reached_is_a_fail_line(capsys):
    code, out, err = _store(capsys, "check", "--store", "postgresql://127.0.0.1:1/test")
    assert code == 1 and err == ""
    assert "FAIL: Cannot reach the PostgreSQL database test on 127.0.0.1:1:" in out


def test_the_marks_and_the_queue_events_go_to_postgresql_and_back(tmp_path):
    """The live queue's tables travel with the runs: each run's marks, and the queue's events with
    their IDs (a watcher's place), SQLite -> PostgreSQL -> SQLite; the events the target's triggers
    write as the runs, marks and audit go in are replaced by the source's, so the counts and the
    rows are equal, and the next event's ID follows the copied ones."""
    from datetime import timedelta

    from core.stores.events import EVENT_COLUMNS

    run = "T-65273-agent-chat-small-1"
    home = Home(tmp_path / "a", clock=FixedClock(MONDAY))
    home.run("T-65273")
    home.run("T-90103")
    home.mark("claim", run, "grace", "Ana")
    home.mark("handover", run, "grace", "Ana", to="Tomás", note="yours")
    other = home.store.page("waiting_approval", limit=10)[-1].run_id
    home.mark("snooze", other, "grace", "Ana", until=home.clock.now() + timedelta(hours=1))
    home.store.record_lapse(run, "digest-1", "2026-01-05T09:00:00+00:00", "grace")
    home.reject(other, "grace", "not now", "Ana")
    source_events = home.store.queue_events(0)
    source_marks = home.store.run_marks()
    assert {"request", "claim", "handover", "lapse", "handed_to_person"} <= {e["kind"] for e in source_events}
    assert source_marks[run]["handed_to"] == "Tomás" and source_marks[other]["snooze_until"]
    with fresh_schema() as url:
        there = copy_store(tmp_path / "a", url)
        assert there.ok, there.lines
        assert any("queue event(s), their IDs kept" in line for line in there.lines)
        back = copy_store(url, tmp_path / "b")
        assert back.ok, back.lines
        team = Home(tmp_path / "t", clock=FixedClock(MONDAY), store=url)
        assert team.store.queue_events(0) == source_events and team.store.run_marks() == source_marks
        team.mark("claim", run, "team_lead", "Tomás")  # the next ID follows the copied ones
        assert team.store.queue_events(source_events[-1]["id"])[0]["kind"] == "claim"
    copied = Home(tmp_path / "b", clock=FixedClock(MONDAY))
    assert copied.store.queue_events(0) == source_events and copied.store.run_marks() == source_marks
    counts = open_rows(tmp_path / "b").row_counts()
    assert counts["queue_events"] == len(source_events) and counts["run_marks"] == len(source_marks)
    assert list(source_events[0]) == list(EVENT_COLUMNS)
