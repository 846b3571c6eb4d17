"""The team store's PostgreSQL races, 100 rounds of each, in real ``python -m core`` processes.

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
- ``deciders``: N approver processes (1, 2, 4, 8), each its own home on the store, start at one
  instant and reject waiting runs for ``--seconds`` (default 10): distinct runs each, then 8 of
  them on the same runs. Decisions per second, p50 and p99 of a decision, outcomes, conflicts
  the store raised (retried ones included) and deadlocks the server counted; N = 8 beside the
  N = 1 figure of the same run (``--only deciders``; ``--quick``: 2 s each).

The rounds and their rules are ``tests/pg_rounds.py``'s (the suite runs a few of each in
``tests/stores/test_pg_races.py``). Every broken rule is printed and counted; nothing stops the run.
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

SECTIONS = ("race", "sweep", "resume", "deciders")


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


def bench_deciders(url: str, root: Path, seconds: float) -> None:
    import os

    from pg_rounds import decide_round

    heading(f"N approvers rejecting waiting runs at once, {seconds:g} s each (distinct runs, then one run for all)")
    print(f"  load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rounds = {}
    for n in (1, 2, 4, 8):
        got = decide_round(root, url, n, seconds)
        rounds[n] = got
        figure(
            f"N = {n}, distinct runs: decisions/s, p50 / p99",
            f"{got.per_second():.1f}/s, {got.percentile(0.5):.1f} / {got.percentile(0.99):.1f} ms",
            "(printed)",
            None,
        )
        bad = {k: v for k, v in got.outcomes.items() if k != "decided"}
        figure(f"N = {n}, distinct runs: errors, conflicts, deadlocks", f"{bad or 0}, {len(got.conflicts)}, {got.deadlocks}", "0, 0, 0",
               not bad and not got.conflicts and got.deadlocks == 0)  # fmt: skip
    one, eight = rounds[1], rounds[8]
    figure("N = 8 decisions/s at least N = 1's", f"{eight.per_second():.1f} vs {one.per_second():.1f}", ">= N = 1",
           eight.per_second() >= one.per_second())  # fmt: skip
    figure("N = 8 p99 of a decision", f"{eight.percentile(0.99):.1f} ms", "< 100 ms", eight.percentile(0.99) < 100)
    same = decide_round(root, url, 8, seconds, same_run=True)
    told, decided = same.outcomes.get("told", 0), same.outcomes.get("decided", 0)
    bad = {k: v for k, v in same.outcomes.items() if k not in ("decided", "told")}
    figure("8 on the same runs: runs decided, losers told who decided", f"{decided}, {told}", "(printed)", None)
    figure("8 on the same runs: other outcomes, conflicts, deadlocks", f"{bad or 0}, {len(same.conflicts)}, {same.deadlocks}",
           "0, 0, 0", not bad and not same.conflicts and same.deadlocks == 0)  # fmt: skip
    figure("8 on the same runs: p50 / p99", f"{same.percentile(0.5):.1f} / {same.percentile(0.99):.1f} ms", "(printed)", None)
    for said in (*one.said, *eight.said, *same.said)[:5]:
        print(f"    said: {said}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=100, help="rounds of each section (default 100)")
    parser.add_argument("--quick", action="store_true", help="2 rounds of each, for a smoke run")
    parser.add_argument("--only", action="append", choices=SECTIONS, help="run only these sections (repeatable)")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds of each deciders' round (default 10)")
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
                if section == "deciders":
                    bench_deciders(schema_url, folder / section, 2.0 if args.quick else args.seconds)
                    continue
                {"race": bench_race, "sweep": bench_sweep, "resume": bench_resume}[section](schema_url, folder / section, rounds)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"\npg_races done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
