"""The races of a team store on PostgreSQL, a few rounds each in real ``python -m core`` processes
on a team store of its own (:func:`pg.fresh_schema`): 8 approvers at once, a SIGKILL at every crash
point of the executor, two resumes of one crashed loop. ``benchmarks/pg_races.py`` runs 100 rounds
of each and prints the figures. The rounds and their rules are :mod:`pg_rounds`'."""

from __future__ import annotations

import pytest

from pg import fresh_schema
from pg_rounds import KINDS, crash_points, race_round, resume_round, sweep_round

pytestmark = pytest.mark.slow


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def test_eight_approvers_at_once_one_wins_the_rest_are_told_in_one_sentence(url, tmp_path):
    for n in range(2):
        got = race_round(tmp_path / "home", url)
        assert got.problems == [], (n, got)
        assert (got.winners, sum(got.refusals.values()), got.refunds, got.approvals) == (1, 7, 1, 1)


def test_a_sigkill_at_every_crash_point_of_approve_and_resume_writes_each_operation_once(url, tmp_path):
    points = crash_points(tmp_path / "home", url)
    # 16 since a decision is one round trip (6 saves, 6 rows, 2 calls, 2 writes; 17 before, 23 before a step's save was one statement)
    assert {p.split(":")[0] for p in points} == set(KINDS) and len(points) >= 15, points
    for point in points:
        got = sweep_round(tmp_path / "home", url, point)
        assert got.reached, point
        assert got.problems == [], got
        assert (got.status, got.refunds, got.register) == ("done", 1, 2)
    assert sweep_round(tmp_path / "home", url, f"write:{sum(p.startswith('write') for p in points) + 1}").reached is False


def test_two_resumes_of_a_loop_killed_after_step_1_ask_the_model_once_per_step(url, tmp_path):
    for n in range(2):
        got = resume_round(tmp_path / "home", url)
        assert got.problems == [], (n, got)
        assert (got.calls, got.extra, got.model_calls, got.tokens_in) == (2, 0, 3, 7155)
