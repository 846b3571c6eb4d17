"""Decisions on the team store never deadlock and losers are told who decided: 8 approver
processes, each its own home, reject waiting runs at once for 15 s on distinct runs and 15 s on
the same runs (``deadlock_timeout`` raised on their connections, so a lock cycle would show as a
wait and then an error), with 0 deadlocks, 0 conflicts raised by the store (retried ones
included), 0 lock timeouts; on the same runs, every run decided once and every other decider
told who decided it. The benchmark prints the same rounds' figures
(``benchmarks/pg_races.py --only deciders``)."""

from __future__ import annotations

import pytest
from core.api.home import Home
from core.engine.auditchain import verify_audit
from core.ground.clock import FixedClock

from helpers import FRIDAY
from pg import fresh_schema
from pg_rounds import decide_round

pytestmark = pytest.mark.slow

SECONDS = 15.0


@pytest.fixture
def url():
    with fresh_schema() as url:
        yield url


def _rejections(root, url) -> dict[str, int]:
    home = Home(root, clock=FixedClock(FRIDAY), store=url)
    rows = home.store.audit_rows()
    out: dict[str, int] = {}
    for row in rows:
        if row["decision"] == "reject":
            out[row["run_uid"]] = out.get(row["run_uid"], 0) + 1
    assert verify_audit(home.store).problems == []
    return out


def test_eight_deciders_on_distinct_runs_never_deadlock(tmp_path, url):
    got = decide_round(tmp_path / "home", url, 8, SECONDS)
    assert got.said == [], got.said
    assert set(got.outcomes) == {"decided"}, got.outcomes
    assert got.conflicts == [] and got.deadlocks == 0, (got.conflicts[:3], got.deadlocks)
    assert got.wall >= SECONDS - 1.0, got.wall  # it decided for the whole round, never out of runs
    rejected = _rejections(tmp_path / "home", url)
    assert sum(rejected.values()) == got.outcomes["decided"] and set(rejected.values()) == {1}


def test_eight_deciders_on_the_same_runs_decide_each_once_and_tell_the_others_who(tmp_path, url):
    got = decide_round(tmp_path / "home", url, 8, SECONDS, same_run=True)
    assert got.said == [], got.said
    assert set(got.outcomes) <= {"decided", "told"}, got.outcomes
    assert got.conflicts == [] and got.deadlocks == 0, (got.conflicts[:3], got.deadlocks)
    rejected = _rejections(tmp_path / "home", url)
    assert set(rejected.values()) == {1} and len(rejected) == got.outcomes["decided"]
    assert got.outcomes["told"] >= got.outcomes["decided"]  # most tries find the run decided by another
    assert got.wall >= SECONDS - 1.0, got.wall
