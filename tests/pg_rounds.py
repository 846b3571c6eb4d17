"""Rounds of the PostgreSQL races, shared by the suite and the benchmark.

Each round works one home folder on a team store (a ``postgresql://`` URL, the schema of
:func:`pg.fresh_schema`) through real ``python -m core`` processes, and returns what it saw: the
tests (``tests/stores/test_pg_races.py``) assert on a few rounds, ``benchmarks/pg_races.py`` runs 100
of each and prints the figures. A round never asserts itself; it records each broken rule as one
sentence in ``problems``, so the benchmark counts them instead of stopping at the first.

- :func:`race_round`: 8 processes approve the same waiting T-65273 run at once (one refund of
  119.00 CAD, team lead or above).
- :func:`sweep_round`: ``resolver approve`` of T-65273 killed with SIGKILL at one crash point,
  the ``resolver resume`` after it killed at the same point, then resumed to the end.
- :func:`resume_round`: the loop of T-65273 killed after step 1, then two ``resolver resume``
  at once (the model counted by ``tests/count_entry.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers import CRASH_ENTRY, FRIDAY, T65273_RUN

ROOT = Path(__file__).resolve().parent.parent
COUNT_ENTRY = Path(__file__).parent / "count_entry.py"
ORDER = "LK-507862"
"""T-65273's order: its double charge of 119.00 CAD is refunded once."""
KINDS = ("save", "row", "call", "write")
"""The executor's crash points (:func:`core.contract.store.crash_point`): each checkpoint save, each row
a save writes, each service call (counted before it is made), each write done (before its
result is saved)."""
ROLE = "grace"
TIMEOUT_S = 120.0


def _env(url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RESOLVER_KILL_AT", "RESOLVER_COUNT_CALLS")}
    return {**env, "RESOLVER_STORE": url, **extra}


def _argv(root: Path, args: tuple[str, ...], entry: Path | None) -> list[str]:
    head = [sys.executable, str(entry)] if entry else [sys.executable, "-m", "core"]
    return [*head, *args, "--home", str(root)]


def cli(root: Path, url: str, *args: str, kill: str | None = None) -> subprocess.CompletedProcess:
    """``resolver ARGS --home ROOT`` on the team store ``url`` in a new process; with ``kill``
    (``kind:N``) the crash tests' entry point kills itself there (``tests/crash_entry.py``)."""
    env = _env(url, **({"RESOLVER_KILL_AT": kill} if kill else {}))
    return subprocess.run(
        _argv(root, args, CRASH_ENTRY if kill else None), capture_output=True, text=True, env=env, timeout=TIMEOUT_S, cwd=ROOT
    )


def at_once(root: Path, url: str, commands: list[tuple[str, ...]], count_file: Path | None = None) -> list[tuple[int, str, str]]:
    """Start every command in ``commands`` as its own process at once; ``(exit code, stdout,
    stderr)`` of each, in order. With ``count_file`` each counts its model calls there."""
    env = _env(url, **({"RESOLVER_COUNT_CALLS": str(count_file)} if count_file else {}))
    entry = COUNT_ENTRY if count_file else None
    procs = [
        subprocess.Popen(_argv(root, c, entry), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        for c in commands
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=TIMEOUT_S)
        out.append((p.returncode, stdout, stderr))
    return out


def fresh_home(root: Path, url: str):  # -> core.api.home.Home
    """The practice home at ``root`` on the team store ``url``, its runs deleted and its world
    built again from ``data/`` (so T-65273's refund can be made once more), its trainer's clock
    (``clock.json``, which every process of the round reads) set to seed 000's Friday."""
    from core.api.home import Home
    from core.ground.clock import FileClock, parse_time

    root.mkdir(parents=True, exist_ok=True)
    clock = FileClock(root / "clock.json")
    clock.set(parse_time(FRIDAY))
    home = Home(root, clock=clock, store=url)
    home.reset(everything=True)
    return home


def _refunds(home) -> int:
    return len(home.world().refunds_of(ORDER))


def _register(url: str) -> list[dict]:
    from core.stores import register_entries

    return register_entries(url)


def _chain_problems(home) -> list[str]:
    from core.engine.auditchain import verify_audit

    return [f"audit: {p}" for p in verify_audit(home.store).problems]


def _one_sentence(err: str) -> bool:
    text = err.strip()
    return bool(text) and "\n" not in text and "Traceback" not in text and text.endswith(".")


# -- 8 approvers at once --------------------------------------------------------------------------


REFUSALS = {
    "already approved": "was already approved by",
    "approved while deciding": "while you were deciding",
    "world changed": "The world changed while you read",
}
"""The loser's sentences, by kind. The third is said when the loser's second look at the world (the
lookups run again as its decision is recorded) already sees the winner's refund: true, but it does
not name the winner."""


@dataclass
class RaceRound:
    """One race: ``winners`` (exit 0), ``refusals`` (kind of :data:`REFUSALS` -> count),
    ``refunds`` made, ``approvals`` (audit rows ``approve`` of this run, by its ``run_uid``), ``seconds`` from the
    processes' start to the last one's end, ``problems`` (broken rules, one sentence each)."""

    winners: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    refunds: int = 0
    approvals: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)


def race_round(root: Path, url: str, approvers: int = 8) -> RaceRound:
    """``approvers`` processes run ``resolver approve T-65273-... --as grace --name Approver-i``
    at once on the waiting run. Rules: exactly one exits 0 with the run done; every other exits
    4 with one sentence on stderr; one refund in the world; one ``approve`` row in the audit,
    and the chain whole."""
    home = fresh_home(root, url)
    before = _refunds(home)
    state = home.run("T-65273")
    got = RaceRound()
    commands = [("approve", state.run_id, "--as", ROLE, "--name", f"Approver-{i}") for i in range(approvers)]
    t = time.perf_counter()
    results = at_once(root, url, commands)
    got.seconds = time.perf_counter() - t
    for code, out, err in results:
        if code == 0:
            got.winners += 1
            if "Status: done" not in out:
                got.problems.append(f"the winner did not finish the run: {out.strip().splitlines()[-1:]}")
            continue
        kind = next((k for k, said in REFUSALS.items() if said in err), None)
        if code != 4 or kind is None or not _one_sentence(err):
            got.problems.append(f"a loser exited {code} saying {err.strip()!r}")
            continue
        got.refusals[kind] = got.refusals.get(kind, 0) + 1
    if got.winners != 1:
        got.problems.append(f"{got.winners} processes won, not 1")
    got.refunds = _refunds(home) - before
    if got.refunds != 1:
        got.problems.append(f"{got.refunds} refunds were made, not 1")
    rows = home.store.audit(state.run_id)  # the run ID comes back after each reset: this run's rows by its run_uid
    got.approvals = sum(1 for row in rows if row["decision"] == "approve" and row["run_uid"] == state.run_uid)
    if got.approvals != 1:
        got.problems.append(f"{got.approvals} approvals in the audit, not 1")
    if home.store.load(state.run_id).status != "done":
        got.problems.append("the run is not done")
    got.problems += _chain_problems(home)
    return got


# -- a SIGKILL at one crash point -----------------------------------------------------------------


@dataclass
class SweepRound:
    """One kill: ``point`` (``kind:N``), ``reached`` (the approve died there), ``resume_killed``
    (the resume after it died at the same point too), ``refunds`` and ``register`` (entries in
    the operations register) at the end, ``status`` at the end, ``problems``."""

    point: str
    reached: bool = False
    resume_killed: bool = False
    refunds: int = 0
    register: int = 0
    status: str = ""
    problems: list[str] = field(default_factory=list)


def sweep_round(root: Path, url: str, point: str) -> SweepRound:
    """``resolver approve`` of a fresh T-65273 run killed with SIGKILL at ``point``, then
    ``resolver resume`` killed at the same point (when it gets there), then ``resolver resume``
    to the end (and, when the kill came before the approval was saved, ``approve`` again).
    Rules: the run ends done; one refund; the register holds each of the run's two operations
    (the refund and the reply) once and nothing else; each operation done; the lease given back."""
    home = fresh_home(root, url)
    before = _refunds(home)
    state = home.run("T-65273")
    got = SweepRound(point)
    killed = cli(root, url, "approve", state.run_id, "--as", ROLE, "--name", "Grace", kill=point)
    if killed.returncode == 0:
        return got  # the approve never reached this point: nothing to sweep
    got.reached = True
    if killed.returncode != -9:
        got.problems.append(f"the approve killed at {point} exited {killed.returncode}: {killed.stderr.strip()[-300:]}")
        return got
    again = cli(root, url, "resume", state.run_id, kill=point)
    got.resume_killed = again.returncode == -9
    done = cli(root, url, "resume", state.run_id)
    if done.returncode != 0:
        got.problems.append(f"the resume after a kill at {point} exited {done.returncode}: {done.stderr.strip()[-300:]}")
    if home.store.load(state.run_id).status == "waiting_approval":  # killed before the approval was saved
        if _refunds(home) != before or _register(url):
            got.problems.append(f"a kill at {point} before the approval was saved left a write behind")
        cli(root, url, "approve", state.run_id, "--as", ROLE, "--name", "Grace")
    final = home.store.load(state.run_id)
    got.status = final.status
    got.refunds = _refunds(home) - before
    entries = _register(url)
    got.register = len(entries)
    if final.status != "done":
        got.problems.append(f"the run ended {final.status} after a kill at {point}")
    if got.refunds != 1:
        got.problems.append(f"{got.refunds} refunds after a kill at {point}, not 1")
    ops = sorted(op.operation_id for op in final.operations)
    if sorted(e["operation_id"] for e in entries) != ops or len(ops) != 2:
        got.problems.append(
            f"the register holds {[e['operation_id'] for e in entries]} after a kill at {point}, not {ops} once each"
        )
    if any(op.status != "done" for op in final.operations):
        got.problems.append(f"operations {[op.status for op in final.operations]} after a kill at {point}")
    if home.store.summary(state.run_id).lease_owner is not None:
        got.problems.append(f"a lease is left on the done run after a kill at {point}")
    got.problems += _chain_problems(home)
    return got


def crash_points(root: Path, url: str) -> list[str]:
    """Every crash point an uninterrupted ``resolver approve`` of a fresh T-65273 run reaches,
    ``kind:N`` in :data:`KINDS` order, counted in that process by ``tests/count_entry.py``."""
    home = fresh_home(root, url)
    state = home.run("T-65273")
    with tempfile.TemporaryDirectory(prefix="pg-points-") as folder:
        points = Path(folder) / "points"
        env = _env(url, RESOLVER_COUNT_POINTS=str(points))
        argv = _argv(root, ("approve", state.run_id, "--as", ROLE, "--name", "Grace"), COUNT_ENTRY)
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=TIMEOUT_S, cwd=ROOT)
        if done.returncode != 0:
            raise RuntimeError(f"the counting approve failed: {done.stderr.strip()[-300:]}")
        seen = {kind: int(n) for kind, n in (line.split() for line in points.read_text().splitlines())}
    return [f"{kind}:{n}" for kind in KINDS for n in range(1, seen.get(kind, 0) + 1)]


# -- two resumes of one crashed loop --------------------------------------------------------------


@dataclass
class ResumeRound:
    """One pair of resumes: ``calls`` (recorded model calls the two resumes made, counted by
    ``tests/count_entry.py``), ``extra`` (calls beyond the two steps left), ``model_calls`` and
    ``tokens_in`` of the checkpoint at the end, ``exits`` of the two, ``problems``."""

    calls: int = 0
    extra: int = 0
    model_calls: int = 0
    tokens_in: int = 0
    exits: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def resume_round(root: Path, url: str) -> ResumeRound:
    """``resolver run T-65273`` killed after step 1 (one model call saved), then two
    ``resolver resume`` at once. Rules: the model is asked for steps 2 and 3 once each in all;
    the run waits for approval with the seed's 3 model calls and 7,155 tokens in; the loser
    exits 0 (nothing left to resume) or 4 (the lease is held) with one sentence; no lease left."""
    fresh_home(root, url)
    got = ResumeRound()
    killed = cli(root, url, "run", "T-65273", kill="step:1")
    if killed.returncode != -9:
        got.problems.append(f"the run killed after step 1 exited {killed.returncode}: {killed.stderr.strip()[-300:]}")
        return got
    from core.api.home import Home
    from core.ground.clock import FileClock

    home = Home(root, clock=FileClock(root / "clock.json"), store=url)
    if home.store.load(T65273_RUN).usage.model_calls != 1:
        got.problems.append("the killed loop did not save exactly its first model call")
    with tempfile.TemporaryDirectory(prefix="pg-resume-") as folder:
        count = Path(folder) / "calls"
        count.touch()
        results = at_once(root, url, [("resume", T65273_RUN)] * 2, count_file=count)
        turns = [int(line.split()[1]) for line in count.read_text().splitlines()]
    got.calls = len(turns)
    got.extra = got.calls - 2
    got.exits = [code for code, _, _ in results]
    if sorted(turns) != [2, 3]:
        got.problems.append(f"the resumes asked the model for turns {sorted(turns)}, not [2, 3] once each")
    for code, _out, err in results:
        if code not in (0, 4) or "Traceback" in err or (code == 4 and not _one_sentence(err)):
            got.problems.append(f"a resume exited {code} saying {err.strip()[-300:]!r}")
    final = home.store.load(T65273_RUN)
    got.model_calls, got.tokens_in = final.usage.model_calls, final.usage.tokens_in
    if (final.status, got.model_calls, got.tokens_in) != ("waiting_approval", 3, 7155):
        got.problems.append(f"the run ended {final.status} with {got.model_calls} model calls and {got.tokens_in} tokens in")
    if home.store.summary(T65273_RUN).lease_owner is not None:
        got.problems.append("a lease is left on the waiting run")
    return got


# -- N approvers deciding at once -----------------------------------------------------------------

DECIDE_ENTRY = Path(__file__).parent / "decide_entry.py"


def with_options(url: str, extra: str) -> str:
    """``url`` with ``extra`` (``-cname=value``) added to libpq's ``options`` parameter."""
    from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["options"] = f"{query.get('options', '')} {extra}".strip()
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def copy_waiting(conn, run_id: str, n: int) -> list[str]:
    """``n`` copies of the waiting run ``run_id`` (its header and every entry), made in SQL in
    the store of ``conn``: each with its own run ID and ``run_uid`` (replaced in every text
    column, the header's JSON included; the copies' entries keep no checksum, so they are
    checked in full when read), then ``ANALYZE``. Returns the copies' run IDs, in order."""
    uid = conn.execute("SELECT state::jsonb->>'run_uid' FROM runs WHERE run_id = %s", (run_id,)).fetchone()[0]
    ids = [f"{run_id}-c{i:05d}" for i in range(n)]
    uids = [f"{uid[:-6]}{i:06d}" for i in range(n)]
    columns = [
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'runs' AND is_generated = 'NEVER' AND is_identity = 'NO' ORDER BY ordinal_position"
        )
    ]
    kinds = dict(
        conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = 'runs'"
        ).fetchall()
    )

    def swapped(column: str, table: str) -> str:
        return f"replace(replace({table}.{column}, %(id)s, c.id), %(uid)s, c.uid)"

    run_exprs = [("c.id" if c == "run_id" else swapped(c, "r") if kinds[c] == "text" else f"r.{c}") for c in columns]
    with conn.transaction():
        conn.execute(
            f"INSERT INTO runs ({', '.join(columns)}) SELECT {', '.join(run_exprs)} FROM runs r, "
            "unnest(%(ids)s::text[], %(uids)s::text[]) c (id, uid) WHERE r.run_id = %(id)s",
            {"id": run_id, "uid": uid, "ids": ids, "uids": uids},
        )
        conn.execute(
            "INSERT INTO entries (run_id, n, list, seq, body, extra, ref, checksum) SELECT c.id, e.n, e.list, e.seq, "
            f"{swapped('body', 'e')}, {swapped('extra', 'e')}, e.ref, NULL FROM entries e, "
            "unnest(%(ids)s::text[], %(uids)s::text[]) c (id, uid) WHERE e.run_id = %(id)s",
            {"id": run_id, "uid": uid, "ids": ids, "uids": uids},
        )
    # As tests/pg_bulk.py's copies: the planner's statistics of the tables just filled in bulk,
    # so a load is planned for the rows there now (a store filled and emptied round after round
    # under the same run IDs kept the first round's statistics, and loads took ten times longer).
    conn.execute("ANALYZE runs, entries")
    return ids


@dataclass
class DecideRound:
    """One round of :func:`decide_round`: ``outcomes`` (kind -> count over every decider:
    ``decided``, ``told`` who decided, ``conflict``, ``deadlock``, ``busy``, ``refused``,
    ``error``), ``seconds`` of every decision, ``conflicts`` the store raised (retried ones
    too), ``deadlocks`` the server counted in the round, ``wall`` seconds, ``said`` (sentences
    of the unexpected outcomes, a few)."""

    outcomes: dict[str, int] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    deadlocks: int = 0
    wall: float = 0.0
    said: list[str] = field(default_factory=list)

    def per_second(self) -> float:
        return self.outcomes.get("decided", 0) / self.wall if self.wall else 0.0

    def percentile(self, q: float) -> float:
        """The ``q`` quantile (0-1) of the decisions' seconds, in milliseconds."""
        if not self.seconds:
            return 0.0
        ordered = sorted(self.seconds)
        return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _deadlocks(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        return int(conn.execute("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()").fetchone()[0])


RUNS_PER_S = {False: 2000, True: 500}
"""Waiting runs made per second of a round (distinct runs, the same runs): about twice what 8
deciders get through on the reference 2-core machine, so a round lasts its seconds."""


def decide_round(
    root: Path, url: str, deciders: int, seconds: float, *, same_run: bool = False, runs: int | None = None
) -> DecideRound:
    """``deciders`` processes, each its own home on the team store ``url`` (``deadlock_timeout``
    raised to 5 s on their connections, so a lock cycle would show as a long wait and then an
    error), start at one instant and reject waiting runs for ``seconds``: each its own share of
    ``runs`` copies of T-65273's waiting run (default: :data:`RUNS_PER_S` per second; ``same_run``:
    all of them the same runs, in the same order, so every run is raced for by all)."""
    runs = runs or max(200, int(RUNS_PER_S[same_run] * seconds))
    home = fresh_home(root, url)
    state = home.run("T-65273")
    with home.store.db.read() as conn:
        ids = [state.run_id, *copy_waiting(conn, state.run_id, runs - 1)]
    slow_deadlocks = with_options(url, "-cdeadlock_timeout=5s")
    start_at = time.time() + 1.5 + 0.2 * deciders  # every process imported and connected first
    before = _deadlocks(url)
    procs = []
    for i in range(deciders):
        mine = ids if same_run else ids[i::deciders]
        argv = [sys.executable, str(DECIDE_ENTRY), str(root), slow_deadlocks, f"Approver-{i}", str(start_at), str(seconds), *mine]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(url), cwd=ROOT))
    got = DecideRound()
    import json

    for p in procs:
        out, err = p.communicate(timeout=TIMEOUT_S + seconds)
        if p.returncode != 0:
            got.said.append(f"a decider exited {p.returncode}: {err.strip()[-400:]}")
            continue
        one = json.loads(out)
        for kind, n in one["outcomes"].items():
            got.outcomes[kind] = got.outcomes.get(kind, 0) + n
        got.seconds += one["seconds"]
        got.conflicts += one["conflicts"]
        got.said += one["said"]
        got.wall = max(got.wall, one["elapsed"])
    time.sleep(1.0)  # the server's statistics are flushed within a second
    got.deadlocks = _deadlocks(url) - before
    return got
