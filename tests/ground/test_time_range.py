"""Time values outside what the product can mean.

``resolver clock set 1026-10-09T17:00:00-04:00`` was accepted (Toronto's local mean time then,
offset -05:17:32); the approval made under it was saved with its offset cut to whole minutes, no
longer matched its own signature, and the genuine approval was refused as "signature does not
verify". Every time resolver takes (``clock set``, ``clock advance``, ``prune --older-than``,
``clock.json``, a saved state, any clock) is now checked against one supported range, 2000-01-01
to 2099-12-31 in America/Toronto, with a sentence; nothing is written for a time out of range.
"""

from __future__ import annotations

import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta, timezone

import pytest
from core.api.home import Home
from core.cli import EXIT_ERROR, EXIT_USAGE
from core.contract.approval_key import load_key
from core.engine.approval import verify
from core.ground.clock import END, FileClock, FixedClock, TimeOutOfRange, iso, parse_time, supported
from core.ground.errors import CorruptCheckpoint

from helpers import FRIDAY, T65273_RUN

RANGE_WORDS = "2000-01-01 00:00 to 2099-12-31 23:59:59, America/Toronto"


def _clock_file(cli) -> str | None:
    path = cli.home / "clock.json"
    return path.read_text() if path.exists() else None


def test_a_clock_set_to_the_year_1026_is_refused_and_the_genuine_approval_is_not_called_forged(cli):
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    before = _clock_file(cli)
    code, out, err = cli("clock", "set", "1026-10-09T17:00:00-04:00")
    assert code == EXIT_USAGE and out == ""
    assert "outside the times resolver supports" in err and RANGE_WORDS in err and "Traceback" not in err
    assert _clock_file(cli) == before  # nothing written
    code, out, err = cli("approve", T65273_RUN, "--as", "team_lead", "--name", "Grace")
    assert "does not verify" not in out + err
    assert code == 0 and "Status: done" in out, out + err
    assert len(Home(cli.home).world().refunds_of("LK-507862")) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ("clock", "set", "1026-10-09T17:00:00-04:00"),
        ("clock", "set", "1894-12-31T23:00:00-05:00"),
        ("clock", "set", "1999-12-31T23:59:59-05:00"),
        ("clock", "set", "2100-01-01T00:00:00-05:00"),
        ("clock", "set", "9999-12-31T23:59:59-14:00"),
        ("clock", "set", "0001-01-01T00:00:00+14:00"),
        ("clock", "set", "2026-10-09T17:00:00-04:00:30"),
        ("clock", "advance", "30000d"),
        ("clock", "advance", "back 10000d"),
        ("clock", "advance", "99999999d"),
        ("prune", "--older-than", "10000d"),
        ("prune", "--older-than", "99999999d"),
    ],
)
def test_every_time_typed_is_checked_against_the_supported_range(cli, argv):
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    before, runs_before = _clock_file(cli), cli("runs")[1]
    code, out, err = cli(*argv)
    assert code == EXIT_USAGE, (argv, code, out, err)
    assert out == "" and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "supports" in err or "has a UTC offset with seconds" in err, err
    assert _clock_file(cli) == before and cli("runs")[1] == runs_before
    assert cli("clock", "show")[1].startswith("Clock: 2026-10-09T17:")


@pytest.mark.parametrize("when", ["2000-01-01T00:00:00-05:00", "2099-12-31T23:00:00-05:00", "2026-11-01T01:30:00-05:00"])
def test_the_edges_of_the_range_are_accepted(cli, when):
    code, out, _ = cli("clock", "set", when)
    assert code == 0 and out.startswith(f"Clock: {when[:16]}")


@pytest.mark.parametrize(
    "content",
    [
        {"at": "1026-10-09T15:42:28-05:17:32", "set_at": "2026-11-30T21:09:26-05:00"},  # what main once wrote for the year 1026
        {"at": "2150-01-01T00:00:00-05:00", "set_at": "2026-11-30T21:09:26-05:00"},
        {"at": "2026-10-09T17:00:00-04:00", "set_at": "1970-01-01T00:00:00+00:00"},
    ],
)
def test_a_clock_file_holding_a_time_out_of_range_is_damaged_not_a_forgery(cli, content):
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    (cli.home / "clock.json").write_text(json.dumps(content))
    for argv in (("clock", "show"), ("approve", T65273_RUN, "--as", "team_lead", "--name", "Grace")):
        code, out, err = cli(*argv)
        assert code == EXIT_ERROR and "clock file" in err and "outside the times resolver supports" in err, (argv, out, err)
        assert "does not verify" not in out + err and "Traceback" not in err
    assert Home(cli.home, clock=FixedClock(FRIDAY)).store.load(T65273_RUN).status == "waiting_approval"
    code, out, _ = cli("doctor")
    assert code == EXIT_ERROR and any(line.startswith("FAIL") and "clock file" in line for line in out.splitlines())
    assert cli("clock", "real")[0] == 0 and cli("clock", "show")[0] == 0
    code, out, _ = cli("doctor")
    assert "clock: " in out and "within the supported times" in out


def test_a_trainer_clock_that_runs_past_the_range_says_so(tmp_path):
    path = tmp_path / "clock.json"
    real = datetime.now(UTC)
    path.write_text(json.dumps({"at": iso(END - timedelta(seconds=30)), "set_at": iso(real - timedelta(hours=1))}))
    with pytest.raises(TimeOutOfRange, match="has run outside the times resolver supports"):
        FileClock(path).now()


def test_a_saved_state_holding_a_time_out_of_range_is_unreadable_with_a_sentence_and_kept(cli):
    """A run saved under main's out-of-range clock: its checkpoint is refused as out of range
    (nothing changed, the row kept), never approved, never reported as a forged approval."""
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    with sqlite3.connect(cli.home / "runs.sqlite") as conn:  # the trainer's clock runs on: created_at may be 17:00:01
        state = conn.execute("SELECT state FROM runs WHERE run_id = ?", (T65273_RUN,)).fetchone()[0]
        forged = re.sub(r'"created_at":"[^"]+"', '"created_at":"1026-10-09T15:41:56-05:17"', state, count=1)
        conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (forged, T65273_RUN))
        saved = conn.execute("SELECT state FROM runs WHERE run_id = ?", (T65273_RUN,)).fetchone()[0]
    assert "1026-10-09" in saved
    with pytest.raises(CorruptCheckpoint, match="outside the times resolver supports"):
        Home(cli.home).store.load(T65273_RUN)
    code, out, err = cli("approve", T65273_RUN, "--as", "team_lead", "--name", "Grace")
    assert code == EXIT_ERROR and "outside the times resolver supports" in err and "does not verify" not in out + err
    with sqlite3.connect(cli.home / "runs.sqlite") as conn:
        assert conn.execute("SELECT state FROM runs WHERE run_id = ?", (T65273_RUN,)).fetchone()[0] == saved
    assert Home(cli.home).world().refunds_of("LK-507862") == []


@pytest.mark.parametrize(
    "at",
    [
        datetime(2026, 10, 12, 9, 0, tzinfo=timezone(timedelta(hours=-5, minutes=-17, seconds=-32))),  # an offset with seconds
        datetime(2026, 10, 12, 9, 0),  # no offset
        datetime(1999, 12, 31, 23, 0, tzinfo=UTC),
        datetime(2100, 1, 1, 6, 0, tzinfo=UTC),
    ],
)
def test_no_clock_hands_out_a_time_resolver_cannot_keep(at):
    with pytest.raises(TimeOutOfRange):
        FixedClock(at)
    clock = FixedClock(FRIDAY)
    with pytest.raises(TimeOutOfRange):
        clock.set(at)
    with pytest.raises(TimeOutOfRange):
        clock.advance(timedelta(days=40000))
    assert iso(clock.now()) == FRIDAY


@pytest.mark.parametrize(
    "when",
    [
        "2000-01-01T00:00:00-05:00",
        "2026-03-08T03:00:00-04:00",  # the hour after the spring change
        "2026-11-01T01:30:00-04:00",  # an hour that happens twice: the first
        "2026-11-01T01:30:00-05:00",  # ... and the second
        "2099-12-31T23:59:59-05:00",
    ],
)
def test_an_approval_made_at_any_supported_time_verifies_after_a_save(tmp_path, when):
    """The approval's signature covers its time as stored: whatever the supported time, the
    approval read back from the checkpoint verifies and the executor writes once."""
    home = Home(tmp_path / "home", clock=FixedClock(when))
    home.run("T-65273")
    state = home.approve(T65273_RUN, "team_lead", "Grace")
    assert state.status == "done", state.events[-1].message
    saved = home.store.load(T65273_RUN)
    assert saved.approval is not None and iso(saved.approval.at) == iso(parse_time(when))
    assert verify(saved, load_key(home.root / "approval.key")) is None
    assert len(home.world().refunds_of("LK-507862")) == 1


def test_supported_names_the_range_and_returns_the_time_itself():
    inside = parse_time(FRIDAY)
    assert supported(inside) is inside
    with pytest.raises(TimeOutOfRange, match=RANGE_WORDS):
        supported(parse_time("1026-10-09T17:00:00-04:00"))


@pytest.mark.parametrize("expires", ["1026-10-09T17:00:00-04:00", "not a time", "9999-12-31T23:59:59+00:00"])
def test_a_lease_time_out_of_range_in_the_store_never_hands_a_live_lease_over(tmp_path, expires):
    """A lease whose expiry cannot be read or is out of range counts as unexpired: held while its
    holder lives (a sentence, nothing written), taken over once the holder is gone."""
    from core.contract.store import lease_owner_name
    from core.engine.executor import SimulatedCrash
    from core.ground.errors import LeaseHeld

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    home.run("T-65273")
    with pytest.raises(SimulatedCrash):
        home.approve(T65273_RUN, "team_lead", "Grace", interrupt="before-write")
    live = lease_owner_name("other")  # this very process: alive
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?", (live, expires, T65273_RUN))
    with pytest.raises(LeaseHeld, match="is being executed by other"):
        home.resume(T65273_RUN)
    assert home.world().refunds_of("LK-507862") == []
    dead = "resolver@" + live.split("@", 1)[1].split(":")[0] + ":999999999:dead"
    with sqlite3.connect(home.store.path) as conn:
        conn.execute("UPDATE runs SET lease_owner = ? WHERE run_id = ?", (dead, T65273_RUN))
    assert home.resume(T65273_RUN).state.status == "done"
    assert len(home.world().refunds_of("LK-507862")) == 1


@pytest.mark.parametrize(
    "at",
    [
        "2026-10-09T17:00:00-04:00",
        "2000-01-01T00:00:00-05:00",  # the first supported time
        "2000-01-01T05:00:00Z",  # the same moment in UTC
        "2099-12-31T23:59:59.999999-05:00",
        "2100-01-01T04:59:59Z",
        "1999-12-31T23:59:59-05:00",  # one second early
        "2000-01-01T04:59:59+00:00",
        "2100-01-01T00:00:00-05:00",  # END itself
        "2100-01-01T05:00:00Z",
        "1026-10-09T15:41:56-05:17",
        "2026-10-09T17:00:00",  # no offset
        "2026-10-09T17:00:00+05:17:32",  # an offset with seconds
        "not a time",
    ],
)
def test_a_time_read_from_a_checkpoints_json_is_checked_as_a_time_made_in_python(at):
    """A checkpoint's times are checked in pydantic's Rust when read as JSON, rows whose checksum
    matched too (an event's ``at`` once skipped the check for them); JSON accepts exactly what
    :func:`core.ground.clock.supported` accepts, and a time it refuses is refused by the careful path
    (Python input) with the sentence."""
    from core.ground.state import Event
    from pydantic import ValidationError

    row = {"seq": 1, "at": at, "kind": "created", "message": "m"}
    try:
        Event.model_validate(row)
        python_ok = True
    except ValidationError as exc:
        python_ok = False
        assert exc.errors()[0]["msg"].startswith(("Value error, The time", "Input should be a valid datetime")), exc
    try:
        Event.model_validate_json(json.dumps(row))
        json_ok = True
    except ValidationError:
        json_ok = False
    assert json_ok == python_ok, at


def test_iso_is_the_text_of_astimezone_replace_isoformat():
    """:func:`iso` cuts the fraction out of ``isoformat``'s text instead of making a second
    datetime with ``replace``; the text is the formula's over DST changes (both folds),
    microseconds or none, offsets of whole hours, minutes and seconds (Toronto's local mean time),
    four-digit padded years, other zones and naive times."""
    from core.ground.clock import SHOP_TZ

    def formula(value: datetime) -> str:
        return value.astimezone(SHOP_TZ).replace(microsecond=0).isoformat()

    starts = [
        datetime(2026, 3, 8, 6, 0, tzinfo=UTC),  # spring forward at 07:00 UTC
        datetime(2026, 11, 1, 5, 0, tzinfo=UTC),  # fall back at 06:00 UTC: the 01:xx hour twice
        datetime(2026, 10, 9, 21, 0, tzinfo=UTC),
        datetime(1026, 10, 9, 21, 0, tzinfo=UTC),  # local mean time, -05:17:32
        datetime(2099, 12, 31, 23, 59, 59, 999_999, tzinfo=timezone(timedelta(hours=5, minutes=45))),
        datetime(2026, 6, 1, 12, 0, tzinfo=timezone(-timedelta(hours=3, minutes=30))),
    ]
    checked = 0
    for start in starts:
        for minutes in range(0, 180, 7):
            for micro in (0, 1, 500_000, 999_999):
                value = start + timedelta(minutes=minutes, microseconds=micro)
                assert iso(value) == formula(value), value
                naive = value.replace(tzinfo=None)
                assert iso(naive) == formula(naive), naive
                checked += 2
    assert checked == len(starts) * 26 * 4 * 2
    assert iso(datetime(2026, 11, 1, 5, 30, 0, 250, tzinfo=UTC)) == "2026-11-01T01:30:00-04:00"
    assert iso(datetime(2026, 11, 1, 6, 30, 0, 250, tzinfo=UTC)) == "2026-11-01T01:30:00-05:00"
