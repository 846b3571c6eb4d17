"""A decision the store undid for another writer's sake (StoreConflict: PostgreSQL's deadlock or
serialization failure, nothing written) is made again by the home itself, so the person sees
the decision land or who decided instead; only after :data:`core.api.home.DECIDE_ATTEMPTS` attempts
does the conflict's sentence reach them. PostgreSQL's SQLSTATEs 40P01 and 40001 are
StoreConflict; 55P03 (a lock not granted in time) stays StoreBusy."""

from __future__ import annotations

import pytest
from core.api.home import DECIDE_ATTEMPTS, Home
from core.ground.clock import FixedClock
from core.ground.errors import StoreBusy, StoreConflict

from helpers import FRIDAY
from pg import fresh_schema


def _conflicting(home: Home, times: int) -> list[int]:
    """Make the home's store raise StoreConflict at its next ``times`` saves with an audit row."""
    save = home.store.save
    raised = [0]

    def save_once_free(state, **kwargs):
        if kwargs.get("audit") is not None and raised[0] < times:
            raised[0] += 1
            raise StoreConflict(
                "The store undid this change to let another writer's through; nothing of it was written: try again."
            )
        return save(state, **kwargs)

    home.store.save = save_once_free  # type: ignore[method-assign]
    return raised


def test_a_decision_undone_twice_lands_at_the_third_attempt(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    raised = _conflicting(home, 2)
    done = home.reject(state.run_id, "team_lead", "the customer wrote again", "Tomas")
    assert raised == [2]
    assert done.status == "handed_to_person"
    assert [r["decision"] for r in home.store.audit(state.run_id)] == ["reject"]


def test_a_decision_undone_at_every_attempt_says_so_once_and_writes_nothing(tmp_path):
    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    raised = _conflicting(home, DECIDE_ATTEMPTS)
    with pytest.raises(StoreConflict, match="nothing of it was written: try again"):
        home.reject(state.run_id, "team_lead", "the customer wrote again", "Tomas")
    assert raised == [DECIDE_ATTEMPTS]
    assert home.store.load(state.run_id).status == "waiting_approval"
    assert home.store.audit(state.run_id) == []


def test_a_run_decided_by_another_between_attempts_is_refused_with_who_decided(tmp_path):
    from core.ground.errors import ApprovalRefused

    home = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    other = Home(tmp_path / "home", clock=FixedClock(FRIDAY))
    state = home.run("T-65273")
    save = home.store.save
    first = [True]

    def undone_while_ana_decides(s, **kwargs):
        if kwargs.get("audit") is not None and first[0]:
            first[0] = False
            other.reject(state.run_id, "team_lead", "a duplicate", "Ana")
            raise StoreConflict("undone; nothing of it was written: try again.")
        return save(s, **kwargs)

    home.store.save = undone_while_ana_decides  # type: ignore[method-assign]
    with pytest.raises(ApprovalRefused, match="rejected by Ana"):
        home.reject(state.run_id, "team_lead", "the customer wrote again", "Tomas")


@pytest.mark.parametrize(
    ("sqlstate", "error"),
    [("40P01", StoreConflict), ("40001", StoreConflict), ("55P03", StoreBusy)],
    ids=["deadlock", "serialization", "lock-timeout"],
)
def test_the_team_stores_conflicts_are_store_conflict_and_a_lock_timeout_is_busy(sqlstate, error):
    from core.stores.postgres.database import database

    with fresh_schema() as url:
        db = database(url)
        with pytest.raises(StoreBusy) as got, db.read() as conn:
            conn.execute(f"DO $$ BEGIN RAISE EXCEPTION 'made here' USING ERRCODE = '{sqlstate}'; END $$")
        assert type(got.value) is error
        assert "made here" in str(got.value)
