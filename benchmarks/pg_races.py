"""The PostgreSQL races of issue 23 (item 5), 100 rounds of each, in real ``python -m core`` processes.

Run: ``python benchmarks/pg_races.py`` (100 rounds of each; about 15 minutes on the reference
2-core machine), ``--rounds N`` for another count, ``--quick`` for 2 of each, ``--only race``
(``race``, ``sweep``, ``resume``; repeatable). Needs PostgreSQL (``RESOLVER_TEST_PG``, else
``postgresql://127.0.0.1:5432/test``) and a schema of its own, made and dropped here.

- ``race``: 8 processes approve the same waiting T-65273 run at once: winners, losers' sentences
  by kind, refunds, approvals in the audit, the chain, wall time from their start to the last end.
- ``sweep``: ``resolver approve`` killed with SIGKILL at one crash point, the resume after it
  killed at the same point, then resumed to the end; the rounds go through every point of the
  executor (``save``, ``row``, ``call``, ``write``) in turn, so 100 rounds visit each several times.
- ``resume``: the loop killed after step 1, then two ``resolver resume`` at once: model calls
  made by the two (counted in each process), extra calls, the checkpoint's numbers.

The rounds and their rules are ``tests/pg_rounds.py``'s (the suite runs a few of each in
``tests/test_pg_races.py``). Every broken rule is printed and counted; nothing stops the run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "tests"
sys.path.insert(0, str(TESTS))

from harness import figure, heading  # noqa: E402

SECTIONS = ("race", "sweep", "resume")


def _problems(label: str, problems: list[str], shown: list[int]) -> None:
    for p in problems:
        if shown[0] < 10:
            print(f"    {label}: {p}")
        shown[0] += 1


def bench_race(url: str, root: Path, rounds: int) -> None:
    from pg_rounds import race_round

    heading(f"8 approvers at once on one waiting T-65273 run, {rounds} rounds")
    winners, refunds, approvals, bad = Counter(), Counter(), Counter(), 0
    refusals: Counter[str] = Counter()
    seconds, shown = [], [0]
    t0 = time.perf_counter()
    for r in range(rounds):
        got = race_round(root, url)
        winners[got.winners] += 1
        refunds[got.refunds] += 1
        approvals[got.approvals] += 1
        refusals.update(got.refusals)
        seconds.append(got.seconds)
        bad += bool(got.problems)
        _problems(f"round {r + 1}", got.problems, shown)
    figure("rounds with exactly one winner", f"{winners[1]} of {rounds} ({dict(winners)})", f"{rounds}", winners[1] == rounds)
    figure("refunds made per round", f"{dict(refunds)}", "{1: rounds}", refunds[1] == rounds)
    figure("approve rows in the audit per round", f"{dict(approvals)}", "{1: rounds}", approvals[1] == rounds)
    figure(
        "losers told in one sentence, exit 4",
        f"{sum(refusals.values())} of {7 * rounds} ({', '.join(f'{k} {v}' for k, v in refusals.most_common())})",
        f"{7 * rounds}",
        sum(refusals.values()) == 7 * rounds,
    )
    figure("rounds with any broken rule (chain included)", f"{bad}", "0", bad == 0)
    figure(
        "8 processes, start to last exit",
        f"median {statistics.median(seconds):.2f} s, max {max(seconds):.2f} s",
        "(printed)",
        None,
    )
    print(f"  wall time of the section: {time.perf_counter() - t0:.0f} s")


def bench_sweep(url: str, root: Path, rounds: int) -> None:
    from pg_rounds import crash_points, sweep_round

    points = crash_points(root, url)
    heading(f"SIGKILL of approve and resume at every crash point ({len(points)} points), {rounds} rounds")
    print(f"  points of one approve of T-65273: {', '.join(points)}")
    reached = resumed_killed = bad = 0
    refunds, register = Counter(), Counter()
    visited: Counter[str] = Counter()
    shown = [0]
    t0 = time.perf_counter()
    for r in range(rounds):
        point = points[r % len(points)]
        got = sweep_round(root, url, point)
        visited[point] += 1
        reached += got.reached
        resumed_killed += got.resume_killed
        refunds[got.refunds] += 1
        register[got.register] += 1
        bad += bool(got.problems)
        _problems(f"round {r + 1} ({point})", got.problems, shown)
    figure("kills that hit their point", f"{reached} of {rounds}", f"{rounds}", reached == rounds)
    figure("resumes killed again at the same point", f"{resumed_killed} of {rounds}", "(printed)", None)
    figure("refunds at the end of a round", f"{dict(refunds)}", "{1: rounds}", refunds[1] == rounds)
    figure("register entries at the end (refund + reply)", f"{dict(register)}", "{2: rounds}", register[2] == rounds)
    figure("rounds with any broken rule (chain included)", f"{bad}", "0", bad == 0)
    times = [visited[p] for p in points]
    print(f"  each point visited {min(times)}-{max(times)} times; wall time {time.perf_counter() - t0:.0f} s")


def bench_resume(url: str, root: Path, rounds: int) -> None:
    from pg_rounds import resume_round

    heading(f"Two resumes of one loop killed after step 1, {rounds} rounds")
    extra, seed, bad = Counter(), 0, 0
    exits: Counter[str] = Counter()
    shown = [0]
    t0 = time.perf_counter()
    for r in range(rounds):
        got = resume_round(root, url)
        extra[got.extra] += 1
        seed += (got.model_calls, got.tokens_in) == (3, 7155)
        exits[" and ".join(map(str, sorted(got.exits)))] += 1
        bad += bool(got.problems)
        _problems(f"round {r + 1}", got.problems, shown)
    figure("extra model calls per round", f"{dict(extra)}", "{0: rounds}", extra[0] == rounds)
    figure("rounds ending with 3 model calls, 7,155 tokens in", f"{seed} of {rounds}", f"{rounds}", seed == rounds)
    figure("exit codes of the two resumes", ", ".join(f"{k}: {v}" for k, v in exits.most_common()), "(printed)", None)
    figure("rounds with any broken rule", f"{bad}", "0", bad == 0)
    print(f"  wall time {time.perf_counter() - t0:.0f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=100, help="rounds of each section (default 100)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of each, for a smoke run")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections (repeatable)")
    args = parser.parse_args(argv)
    rounds = 2 if args.quick else args.rounds
    from pg import _server, fresh_schema

    url, why = _server()
    if url is None:
        sys.exit(f"No PostgreSQL to race on: {why}.")
    only = [s for s in SECTIONS if s in set(args.only or SECTIONS)]
    print(f"pg_races ({rounds} rounds): {', '.join(only)}; python {sys.version.split()[0]}; server {url}")
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="pg-races-"))
    try:
        with fresh_schema() as schema_url:
            for section in only:
                {"race": bench_race, "sweep": bench_sweep, "resume": bench_resume}[section](schema_url, folder / section, rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\npg_races done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
