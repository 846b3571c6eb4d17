"""Shared pieces of the benchmarks: the adapter, real states, big homes, counters and printing.

Nothing here asserts a speed: the scripts print figures beside their targets, so a
busy machine never fails a build.

The ADAPTER section at the top holds every call that the storage rewrite (branch
``store``) or the seam (the core's public faces) changes. Each adapter works on the code of release 0.1.0 and on
the rewritten store, so the same scripts give the "before" and the "after" figures.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from core.api.home import Home
from core.ground.clock import FixedClock
from core.ground.state import TaskState
from core.stores.common import entry_checksum
from core.stores.sqlite.checkpoint import CheckpointStore

FRIDAY = "2026-10-09T17:00:00-04:00"

# =============================================================================================
# ADAPTER: every call that changes with the store rewrite or the seam, in one place.
# =============================================================================================


def list_page(store: CheckpointStore, status: str | None, limit: int, search: str | None = None) -> list[Any]:
    """The first page of run summaries: keyset ``page`` on the new store, else ``list``."""
    page = getattr(store, "page", None)
    if page is not None:
        result = page(status, search=search, limit=limit)
        return list(getattr(result, "rows", result))
    return store.list(status, search=search, limit=limit)


def store_commits(store: CheckpointStore) -> int | None:
    """Commits counted by the store itself (``store.counters`` of the rewritten store), else None."""
    counters = getattr(store, "counters", None)
    if counters is None:
        return None
    snapshot = counters.snapshot() if hasattr(counters, "snapshot") else vars(counters)
    return snapshot.get("commits")


def approve_and_execute(home: Home, run_id: str, role: str = "grace", name: str = "Bench") -> TaskState:
    """Approve a waiting run and execute its writes (``Home.approve`` today and after the seam)."""
    return home.approve(run_id, role, name)


def reset_world(home: Home) -> None:
    """Rebuild the practice world from ``data/`` and delete the saved runs, so the next approval
    of the same ticket is a fresh one whose writes succeed (one effect per ticket
    refuses a second approval while an earlier run of the ticket is done with the same effect)."""
    home.reset(everything=True)


def cli_argv() -> list[str]:
    """How to start the ``resolver`` command: its console script if installed, else ``-m core``."""
    script = Path(sys.executable).parent / "resolver"
    return [sys.executable, str(script)] if script.exists() else [sys.executable, "-m", "core"]


def service_call_owner() -> tuple[type, str]:
    """The class and method the executor calls for each write (timed as "the service call")."""
    from core.stores.sqlite.world import SqliteWorld as World

    return World, "call_service"


# =============================================================================================
# Printing
# =============================================================================================


def section_parser(doc: str | None, sections: Sequence[str]) -> argparse.ArgumentParser:
    """The command line every benchmark script shares (``bench_core.py``, ``bench_pg.py``; the
    duplicate finder flagged their two copies): ``--quick`` for a smoke run with small sizes and
    ``--only SECTION`` (repeatable, one of ``sections``). ``doc``: the script's docstring, whose
    first line describes it. A script adds its own options to the parser returned."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0] if doc else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--only", action="append", choices=sections, help="run only these sections (repeatable)")
    return parser


def chosen_sections(only: Sequence[str] | None, sections: Sequence[str]) -> list[str]:
    """The sections ``--only`` chose (all of ``sections`` without it), in the order of ``sections``."""
    wanted = set(only or sections)
    return [s for s in sections if s in wanted]


def heading(text: str) -> None:
    """A section heading (the smoke test looks for these)."""
    print(f"\n== {text}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms" if seconds < 0.01 else f"{seconds * 1000:.1f} ms"


def figure(label: str, value: str, target: str, ok: bool | None) -> None:
    """One line: label, value, target, met/MISSED (``ok`` None: printed only, no target)."""
    mark = "" if ok is None else ("met" if ok else "MISSED")
    print(f"  {label:<58} {value:<44} target {target:<16} {mark}", flush=True)


def median(samples: list[float]) -> float:
    return statistics.median(samples)


def pct(samples: list[float], q: float) -> float:
    """The q-th percentile (0-100), nearest rank."""
    ordered = sorted(samples)
    k = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[k]


# =============================================================================================
# Real states of real runs
# =============================================================================================


@contextmanager
def recording_saves(store: CheckpointStore) -> Iterator[list[tuple[TaskState, dict[str, Any]]]]:
    """Record a deep copy of every state handed to ``store.save`` (with its keyword arguments)."""
    saves: list[tuple[TaskState, dict[str, Any]]] = []
    original = store.save

    def save(state: TaskState, **kwargs: Any) -> TaskState:
        saves.append((state.model_copy(deep=True), dict(kwargs)))
        return original(state, **kwargs)

    store.save = save  # type: ignore[method-assign]
    try:
        yield saves
    finally:
        del store.save


def fresh_copy(state: TaskState, run_id: str) -> TaskState:
    """``state`` as a new, never saved run ``run_id`` (version 0)."""
    return state.model_copy(update={"run_id": run_id, "version": 0}, deep=True)


SKIP_FIELDS = {"run_id", "version", "updated_at"}


def advance(obj: TaskState, target: TaskState) -> None:
    """Change ``obj`` in place the way the runner or a decision did to reach ``target``: lists
    that grew get the new items appended, other changed fields are set."""
    for name in type(obj).model_fields:
        if name in SKIP_FIELDS:
            continue
        new, old = getattr(target, name), getattr(obj, name)
        if isinstance(new, list) and isinstance(old, list) and len(new) >= len(old) and new[: len(old)] == old:
            old.extend(item.model_copy(deep=True) if hasattr(item, "model_copy") else item for item in new[len(old) :])
        elif new != old:
            setattr(obj, name, new.model_copy(deep=True) if hasattr(new, "model_copy") else new)


class ToolStep:
    """What one real tool step of T-65273 added (model turn, tool call, its evidence, an event),
    replayable as step N with an optional tool result of another size."""

    def __init__(self, before: TaskState, after: TaskState) -> None:
        self.messages = after.messages[len(before.messages) :]
        self.evidence = after.evidence[len(before.evidence) :]
        self.events = after.events[len(before.events) :]
        self.tokens_in = after.usage.tokens_in - before.usage.tokens_in
        self.tokens_out = after.usage.tokens_out - before.usage.tokens_out
        if not (self.messages and self.evidence and self.events):
            raise RuntimeError("the chosen step of the real run is not a tool step")

    def apply(self, obj: TaskState, step: int, result: Any = None) -> None:
        """Append step ``step`` to ``obj`` as the runner does (``result`` replaces the tool output)."""
        obj.step = step
        obj.max_steps = max(obj.max_steps, step + 1)
        obj.usage.model_calls += 1
        obj.usage.tool_calls += 1
        obj.usage.tokens_in += self.tokens_in
        obj.usage.tokens_out += self.tokens_out
        for m in self.messages:
            content = json.dumps(result, ensure_ascii=False) if (result is not None and m.role == "tool") else m.content
            obj.messages.append(m.model_copy(update={"step": step, "content": content}))
        for e in self.evidence:
            obj.evidence.append(
                e.model_copy(update={"step": step, "result": result if result is not None else e.result}, deep=True)
            )
        for ev in self.events:
            obj.events.append(
                ev.model_copy(
                    update={
                        "seq": len(obj.events) + 1,
                        "message": f"step {step}: {ev.message.split(': ', 1)[-1]}",
                        "data": {**ev.data, "step": step},
                    }
                )
            )


class RealRun:
    """Every checkpoint of a real run of T-65273 through the runner, and of its approval."""

    def __init__(self, root: Path) -> None:
        home = Home(root, clock=FixedClock(FRIDAY))
        with recording_saves(home.store) as saves:
            final = home.run("T-65273", run_id="T-65273-agent-chat-small-1")
        self.steps = [s for s, _ in saves]  # state handed to each save: step 0 (new run) .. the outcome
        self.waiting = final.model_copy(deep=True)
        with recording_saves(home.store) as saves:
            approve_and_execute(home, final.run_id, "team_lead", "Grace")
        decision = next(((s, kw) for s, kw in saves if s.approval is not None), None)
        if decision is None:
            raise RuntimeError("the approval of T-65273 saved no state with an approval")
        self.decision, self.decision_kwargs = decision
        tool_steps = [i for i in range(1, len(self.steps)) if len(self.steps[i].evidence) > len(self.steps[i - 1].evidence)]
        self.typical = tool_steps[-1]  # the last tool step: a model turn, a tool call, its evidence, an event
        self.tool_step = ToolStep(self.steps[self.typical - 1], self.steps[self.typical])

    def long_state(self, steps: int, result: Any = None) -> TaskState:
        """A running state after ``steps`` tool steps, each one like the real tool step."""
        obj = self.steps[self.typical].model_copy(deep=True)
        for n in range(obj.step + 1, steps + 1):
            self.tool_step.apply(obj, n, result)
        return obj


# =============================================================================================
# Counting transactions (in process) and fsyncs (strace on a child)
# =============================================================================================

_WRITE = re.compile(r"^\s*(INSERT|UPDATE|DELETE|REPLACE|CREATE|DROP|ALTER)\b", re.IGNORECASE)
_COMMIT = re.compile(r"^\s*(COMMIT|END)\b", re.IGNORECASE)
_ROLLBACK = re.compile(r"^\s*ROLLBACK\s*$", re.IGNORECASE)


class TransactionCounter:
    """Counts committed write transactions per database file in this process, by tracing every
    ``sqlite3`` connection opened while it is active: each COMMIT of a transaction that ran a
    write statement, plus each write statement run outside a transaction (autocommit). Read-only
    and rolled-back transactions are not counted (they write nothing to the WAL)."""

    def __init__(self) -> None:
        self.commits: Counter[str] = Counter()
        self._original = sqlite3.connect

    def __enter__(self) -> TransactionCounter:
        counter = self

        def connect(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = counter._original(database, *args, **kwargs)
            name = Path(str(database)).name
            wrote = [False]

            def trace(sql: str) -> None:
                if _WRITE.match(sql):
                    if conn.in_transaction:
                        wrote[0] = True
                    else:
                        counter.commits[name] += 1
                elif _COMMIT.match(sql):
                    if wrote[0]:
                        counter.commits[name] += 1
                    wrote[0] = False
                elif _ROLLBACK.match(sql):
                    wrote[0] = False

            conn.set_trace_callback(trace)
            return conn

        sqlite3.connect = connect  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        sqlite3.connect = self._original  # type: ignore[assignment]


STRACE = "/usr/bin/strace"
MARKER = "/nonexistent-bench-marker"


def strace_available() -> bool:
    if not Path(STRACE).exists():
        return False
    probe = subprocess.run([STRACE, "-f", "-o", os.devnull, "true"], capture_output=True)
    return probe.returncode == 0


def mark(label: str, edge: str) -> None:
    """A marker syscall (a failing chdir to ``MARKER/label/edge``) for :func:`fsyncs_by_label`."""
    with suppress(OSError):
        os.chdir(f"{MARKER}/{label}/{edge}")


def fsyncs_by_label(argv: list[str], labels: list[str]) -> tuple[dict[str, int], str]:
    """Run ``argv`` under ``strace -f`` and count fsync and fdatasync calls (all threads) between
    each ``mark(label, "begin")`` and ``mark(label, "end")`` of the child. Returns the counts per
    label and the child's stdout."""
    with tempfile.NamedTemporaryFile(prefix="strace-", suffix=".txt", delete=False) as f:
        out = f.name
    try:
        proc = subprocess.run(
            [STRACE, "-f", "-e", "trace=fsync,fdatasync,chdir", "-o", out, *argv], capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise RuntimeError(f"the strace child failed: {proc.stderr.strip()[-800:]}")
        counts = dict.fromkeys(labels, 0)
        current: str | None = None
        marker = re.compile(re.escape(MARKER) + r"/([^/]+)/(begin|end)")
        for line in Path(out).read_text().splitlines():
            m = marker.search(line)
            if m:
                current = m.group(1) if m.group(2) == "begin" else None
            elif current and re.search(r"\b(fsync|fdatasync)\(", line):
                counts[current] = counts.get(current, 0) + 1
        return counts, proc.stdout
    finally:
        os.unlink(out)


# =============================================================================================
# Big homes: SQL copies of real runs of every status
# =============================================================================================

# (ticket, how the run is made, status it must end in); weights: done twice (as in release 0.1.0's bench)
TEMPLATES = [
    ("T-65273", "waiting", "waiting_approval"),
    ("T-90104", "executing", "executing"),
    ("T-10222", "running", "running"),
    ("T-81029", "handed", "handed_to_person"),
    ("T-17809", "stopped", "stopped"),
    ("T-90103", "done", "done"),
    ("T-90103", "done", "done"),
]


def make_templates(root: Path) -> Home:
    """A home with one real run of each status, made through the runner, approvals and executor."""
    from core.ground.errors import ResolverError

    home = Home(root, clock=FixedClock(FRIDAY))
    for task, how, status in dict.fromkeys(TEMPLATES):
        run_id = f"{task}-agent-chat-small-1"
        if how == "running":
            with suppress(_LoopCrashed):
                home.run(task, run_id=run_id, on_step=lambda s: _crash_after(s, 1))
        elif how == "stopped":
            home.run(task, run_id=run_id, max_steps=1)
        else:
            home.run(task, run_id=run_id)
            if how in ("done", "handed"):
                approve_and_execute(home, run_id)
            elif how == "executing":
                # SimulatedCrash (a ResolverError): the run stays executing, as after a crash
                with suppress(ResolverError):
                    home.approve(run_id, "grace", "Bench", interrupt="before-write")
        got = home.store.load(run_id).status
        if got != status:
            raise RuntimeError(f"template {run_id} ended {got}, expected {status}")
    return home


class _LoopCrashed(Exception):
    pass


def _crash_after(state: TaskState, n: int) -> None:
    if state.step == n:
        raise _LoopCrashed


def _tables_with_run_id(conn: sqlite3.Connection) -> list[str]:
    """Ordinary tables with a ``run_id`` column, ``runs`` first. Virtual tables (a full-text
    index) are left to the triggers that keep them, as in a real save."""
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "AND COALESCE(sql, '') NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name != 'runs', name"
        )
    ]
    return [t for t in names if any(c[1] == "run_id" for c in conn.execute(f'PRAGMA table_info("{t}")'))]


def build_home(root: Path, n: int, templates: Home) -> float:
    """Make ``root`` a home with ``n`` runs: the template runs plus SQL copies of them.

    Generic over the schema: every table of runs.sqlite with a ``run_id`` column gets, for each
    copy, the template's rows with the new run ID (text columns have the old run ID replaced;
    ``task_id`` columns get a distinct made-up ticket ID, about 11 runs each at 1,000,000, while
    the state keeps its real ticket, which the detail pane reads from ``data/``; ``*_ts`` and ``created_at``/``updated_at`` columns the
    copy's time, spread 25 s apart; an entry's ``checksum`` that of its copied body and extra, so
    a copy reads back as a sound checkpoint; INTEGER PRIMARY KEY columns are left to SQLite). One
    transaction of INSERT ... SELECT per table. Returns the seconds it took.
    """
    t0 = time.perf_counter()
    root.mkdir(parents=True, exist_ok=True)
    for name in ("larkfield.sqlite", "runs.sqlite"):
        src = sqlite3.connect(templates.root / name)
        dst = sqlite3.connect(root / name)
        src.backup(dst)
        src.close()
        dst.close()
    for extra in ("approval.key",):
        if (templates.root / extra).exists():
            shutil.copy2(templates.root / extra, root / extra)
    conn = sqlite3.connect(root / "runs.sqlite", isolation_level=None)
    conn.create_function("entry_checksum", 2, entry_checksum, deterministic=True)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA synchronous = OFF")
    template_ids = [f"{task}-agent-chat-small-1" for task, _, _ in TEMPLATES]
    row = conn.execute("SELECT MAX(updated_ts) FROM runs").fetchone() if _has_column(conn, "runs", "updated_ts") else None
    base = float(row[0]) if row and row[0] is not None else time.time()
    conn.execute("BEGIN")
    conn.execute("CREATE TEMP TABLE plan (n INTEGER PRIMARY KEY, template TEXT, new_id TEXT, task TEXT, ts REAL, at TEXT)")
    copies = max(0, n - len(set(template_ids)))
    conn.executemany(
        "INSERT INTO plan VALUES (?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%S+00:00', ?, 'unixepoch'))",
        (
            (
                i,
                template_ids[i % len(template_ids)],
                f"T-{10000 + i % 90000:05d}-agent-chat-small-{i // 90000 + 2}",
                f"T-{10000 + i % 90000:05d}",
                base - 25.0 * (i + 1),
                base - 25.0 * (i + 1),
            )
            for i in range(copies)
        ),
    )
    for table in _tables_with_run_id(conn):
        info = list(conn.execute(f'PRAGMA table_info("{table}")'))
        int_pk = [c[1] for c in info if c[5] and c[2].upper() == "INTEGER" and sum(1 for x in info if x[5]) == 1]
        cols = [c[1] for c in info if c[1] not in int_pk]
        exprs = []
        for _cid, name, ctype, *_ in info:
            if name in int_pk:
                continue
            if name == "checksum" and {"body", "extra"} <= {c[1] for c in info}:
                # an entry's checksum covers its body, which names the run: the copy's own
                # (a kept template checksum made every copy a corrupt checkpoint in the app)
                body, extra = (f"replace(src.{c}, src.run_id, plan.new_id)" for c in ("body", "extra"))
                exprs.append(f"CASE WHEN src.checksum IS NULL THEN NULL ELSE entry_checksum({body}, {extra}) END")
            elif name == "run_id":
                exprs.append("plan.new_id")
            elif name == "task_id":
                exprs.append("plan.task")
            elif name.endswith("_ts"):
                exprs.append("plan.ts")
            elif name in ("created_at", "updated_at"):
                exprs.append("plan.at")
            elif ctype.upper() in ("TEXT", "") or "CHAR" in ctype.upper() or "CLOB" in ctype.upper():
                exprs.append(
                    f'CASE WHEN typeof(src."{name}") = \'text\' THEN replace(src."{name}", src.run_id, plan.new_id) ELSE src."{name}" END'
                )
            else:
                exprs.append(f'src."{name}"')
        conn.execute(
            f'INSERT INTO "{table}" ({", ".join(chr(34) + c + chr(34) for c in cols)}) '
            f'SELECT {", ".join(exprs)} FROM plan JOIN "{table}" AS src ON src.run_id = plan.template ORDER BY plan.n'
        )
    conn.execute("DROP TABLE plan")
    conn.execute("COMMIT")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return time.perf_counter() - t0


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    return any(c[1] == column for c in conn.execute(f'PRAGMA table_info("{table}")'))


def count_runs(root: Path) -> Counter[str]:
    """Runs per status, read with plain SQL from the summary table (untimed bookkeeping)."""
    conn = sqlite3.connect(root / "runs.sqlite")
    try:
        return Counter(dict(conn.execute("SELECT status, COUNT(*) FROM runs GROUP BY status").fetchall()))
    finally:
        conn.close()


def disk_tmp(prefix: str) -> Path:
    """A new folder on disk (not tmpfs), for on-disk figures and big homes."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("BENCH_DISK_DIR", "/var/tmp")))


def shm_tmp(prefix: str) -> Path:
    """A new folder on tmpfs (/dev/shm when present), where only CPU counts."""
    where = "/dev/shm" if Path("/dev/shm").is_dir() else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=where))


def pg_server() -> str:
    """The URL of a PostgreSQL server to measure on: ``RESOLVER_TEST_PG``, else the local
    server by TCP, else by its socket (database ``test``). Exits with a sentence when none
    answers."""
    import psycopg

    for url in (os.environ.get("RESOLVER_TEST_PG") or "", "postgresql://127.0.0.1:5432/test", "postgresql:///test"):
        if not url:
            continue
        try:
            psycopg.connect(url, connect_timeout=3, autocommit=True).close()
            return url
        except psycopg.Error:
            continue
    sys.exit("PostgreSQL is not reachable: set RESOLVER_TEST_PG to a server's URL.")
