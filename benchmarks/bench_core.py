"""Core benchmarks: the checkpoint store beside LangGraph, the queue, the executor.

Run: ``python benchmarks/bench_core.py`` (full sizes: 100,000 and 1,000,000 runs, a 300-step run
with 50 KB tool outputs; several minutes, and on release 0.1.0 much longer), ``--quick`` for a
smoke run with small sizes, ``--only SECTION`` (repeatable) for some sections:

- ``anchor``: save and load (the read side and the whole state) beside LangGraph's ``SqliteSaver`` on tmpfs
  (CPU only), each ratio beside its target (README, "Benchmarks"), a garbage collection before each timed load;
- ``disk``: the same on disk with the same durability, with fsyncs and transactions per save;
- ``long``: a 300-step run with 50 KB tool outputs: save cost at step 10 vs 300, bytes written;
- ``listing``: ``resolver runs --status waiting_approval`` over 100,000 and 1,000,000 runs;
- ``executor``: approve + execute overhead per operation, transactions and fsyncs per approve;
- ``startup``: import time of ``resolver --help`` and ``resolver runs``;
- ``instructions``: the instructions (valgrind's callgrind) of a step's save, a decision's save
  and a load beside LangGraph's put and get_tuple: figures a busy machine does not move (skipped with a sentence without valgrind; a few minutes, less with ``--quick``).
  The ``listing`` section counts the whole ``resolver runs`` process the same way (not with
  ``--quick``).

Every figure is printed beside its target with "met" or "MISSED"; nothing is asserted (speed
lives in benchmarks, never in timed tests). ``anchor``, ``disk`` and ``instructions`` need
the bench extra (``pip install -e '.[bench]'``) for LangGraph; the other sections run without it. The fsync
counts need /usr/bin/strace.
"""

from __future__ import annotations

import argparse
import gc
import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from core.api.home import Home
from core.ground.clock import FixedClock
from core.ground.state import TaskState
from core.stores.sqlite.checkpoint import CheckpointStore

from harness import (
    TEMPLATES,
    RealRun,
    TransactionCounter,
    advance,
    approve_and_execute,
    build_home,
    chosen_sections,
    cli_argv,
    count_runs,
    disk_tmp,
    figure,
    fresh_copy,
    fsyncs_by_label,
    heading,
    list_page,
    make_templates,
    mark,
    median,
    ms,
    pct,
    reset_world,
    section_parser,
    service_call_owner,
    shm_tmp,
    store_commits,
    strace_available,
)

FRIDAY = "2026-10-09T17:00:00-04:00"
OWN = "store's own count"
"""Where the store's own commit counter goes beside the traced transactions."""
PAGE = 200
"""Rows of a page of the queue (the app's page size on release 0.1.0)."""
SECTIONS = ("anchor", "disk", "long", "listing", "executor", "startup", "instructions")
ANCHORED = frozenset({"anchor", "disk", "instructions"})
"""The sections measured beside LangGraph's SqliteSaver: only these need the bench extra."""


# -- the LangGraph anchor -----------------------------------------------------------------------


class Anchor:
    """LangGraph's ``SqliteSaver`` on ``path``, WAL and ``synchronous`` as given (FULL by default,
    the durability an acknowledged approval needs). A checkpoint holds the step's whole state as
    channel values (one channel per TaskState field), as a LangGraph graph of that state would."""

    def __init__(self, path: Path, synchronous: str = "FULL") -> None:
        import sqlite3

        from langgraph.checkpoint.sqlite import SqliteSaver

        self.conn = sqlite3.connect(path, check_same_thread=False)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")
        self.saver = SqliteSaver(self.conn)
        self.saver.setup()

    @staticmethod
    def checkpoint(state: TaskState) -> dict[str, Any]:
        from langgraph.checkpoint.base import empty_checkpoint

        cp = dict(empty_checkpoint())
        values = state.model_dump(mode="json")
        cp["channel_values"] = values
        cp["channel_versions"] = {k: state.step + 1 for k in values}
        return cp

    def put(self, thread: str, cp: dict[str, Any], parent: dict[str, Any] | None = None, step: int = 0) -> dict[str, Any]:
        config = parent or {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        new_versions = dict(cp["channel_versions"])
        return self.saver.put(config, cp, {"source": "loop", "step": step, "parents": {}}, new_versions)  # type: ignore[arg-type]

    def get(self, thread: str) -> Any:
        return self.saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})

    def close(self) -> None:
        self.conn.close()


def new_id(prefix: str = "B") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


# Each "prepare" does the untimed set-up of one round and returns the call to time.
Prepare = Callable[[], Callable[[], object]]


def interleaved(rounds: int, ours: Prepare, theirs: Prepare, *, collect: bool = False) -> tuple[list[float], list[float]]:
    """Time ``rounds`` calls of each side, alternating which goes first; with ``collect`` a
    garbage collection runs (untimed) before each timed call, so neither side pays for the
    set-up's copies (the load at step 200 carried that debt, 11.9x against 4.1x)."""
    a: list[float] = []
    b: list[float] = []
    for r in range(rounds):
        first, second = (ours, theirs) if r % 2 == 0 else (theirs, ours)
        calls = [(first, a if first is ours else b), (second, b if first is ours else a)]
        for prepare, out in calls:
            call = prepare()
            if collect:
                gc.collect()
            t = time.perf_counter()
            call()
            out.append(time.perf_counter() - t)
    return a, b


def save_after(store: CheckpointStore, prev: TaskState, nxt: TaskState) -> Prepare:
    """Resolver: a new run saved at ``prev`` (untimed), then the save of ``nxt`` (timed), with the
    state object changed in place as the runner changes it."""

    def prepare() -> Callable[[], object]:
        obj = fresh_copy(prev, new_id())
        store.save(obj)
        advance(obj, nxt)
        return lambda: store.save(obj)

    return prepare


def decision_save(store: CheckpointStore, waiting: TaskState, decision: TaskState, kwargs: dict[str, Any]) -> Prepare:
    """Resolver: a waiting run saved and loaded (untimed), then the decision's save (timed)."""

    def prepare() -> Callable[[], object]:
        rid = new_id()
        store.save(fresh_copy(waiting, rid))
        obj = store.load(rid)
        advance(obj, decision)
        return lambda: store.save(obj, **kwargs)

    return prepare


def put_after(anchor: Anchor, prev: TaskState, nxt: TaskState) -> Prepare:
    """LangGraph: the checkpoint of ``prev`` put (untimed), then the put of ``nxt`` (timed)."""

    def prepare() -> Callable[[], object]:
        thread = new_id("G")
        config = anchor.put(thread, anchor.checkpoint(prev), step=prev.step)
        cp = anchor.checkpoint(nxt)
        return lambda: anchor.put(thread, cp, config, nxt.step)

    return prepare


def load_of(store: CheckpointStore, state: TaskState) -> Prepare:
    rid = new_id()
    store.save(fresh_copy(state, rid))
    return lambda: lambda: store.load(rid)


def view_of(store: CheckpointStore, state: TaskState) -> Prepare:
    """Resolver's read side: what the pane and the approve dialog load."""
    rid = new_id()
    store.save(fresh_copy(state, rid))
    return lambda: lambda: store.load_view(rid)


def get_of(anchor: Anchor, state: TaskState) -> Prepare:
    thread = new_id("G")
    anchor.put(thread, anchor.checkpoint(state), step=state.step)
    return lambda: lambda: anchor.get(thread)


def kib(state: TaskState) -> str:
    return f"{len(state.model_dump_json()) / 1024:.1f} KiB"


def ratio_line(label: str, ours: list[float], theirs: list[float], limit: float, stat: str = "median") -> None:
    pick = median if stat == "median" else (lambda s: pct(s, 50))
    a, b = pick(ours), pick(theirs)
    figure(label, f"{ms(a)} vs {ms(b)} = {a / b:.2f}x", f"<= {limit:.1f}x", a / b <= limit)


# -- sections ------------------------------------------------------------------------------------


def bench_anchor(quick: bool) -> None:
    heading("Checkpoint save and load beside LangGraph SqliteSaver, tmpfs (CPU only), median, interleaved")
    rounds = 7 if quick else 41
    root = shm_tmp("bench-anchor-")
    try:
        real = RealRun(root / "real")
        home = Home(root / "home", clock=FixedClock(FRIDAY))
        anchor = Anchor(root / "langgraph.sqlite")
        k = real.typical
        prev, step = real.steps[k - 1], real.steps[k]
        print(
            f"  the step: step {k} of a real run of T-65273 (model turn, tool call, evidence, event); state {kib(step)}; "
            f"{rounds} rounds; resolver vs LangGraph put/get_tuple"
        )
        # the targets (README, "Benchmarks"), printed beside each figure
        ours, theirs = interleaved(rounds, save_after(home.store, prev, step), put_after(anchor, prev, step))
        ratio_line("save of a typical step vs put (dict)", ours, theirs, 1.5)
        ours, theirs = interleaved(
            rounds,
            decision_save(home.store, real.waiting, real.decision, real.decision_kwargs),
            put_after(anchor, real.waiting, real.decision),
        )
        ratio_line("save of a decision (status, approval, audit) vs put", ours, theirs, 2.0)
        ours, theirs = interleaved(rounds, view_of(home.store, real.waiting), get_of(anchor, real.waiting), collect=True)
        ratio_line(f"load, read side, typical state ({kib(real.waiting)}) vs get_tuple", ours, theirs, 1.0)
        ours, theirs = interleaved(rounds, load_of(home.store, real.waiting), get_of(anchor, real.waiting), collect=True)
        ratio_line("load, whole state, typical (resume) vs get_tuple", ours, theirs, 2.0)  # 27: the whole load's 2x
        n = 40 if quick else 200
        s_prev, s_next = real.long_state(n - 1), real.long_state(n)
        ours, theirs = interleaved(rounds, save_after(home.store, s_prev, s_next), put_after(anchor, s_prev, s_next))
        ratio_line(f"save at step {n} ({kib(s_next)}) vs put", ours, theirs, 1.0)
        note = "" if n >= 100 else " (quick: the target is for steps 100-300)"
        ours, theirs = interleaved(rounds, view_of(home.store, s_next), get_of(anchor, s_next), collect=True)
        ratio_line(f"load at step {n}, read side, vs get_tuple{note}", ours, theirs, 1.0)
        ours, theirs = interleaved(rounds, load_of(home.store, s_next), get_of(anchor, s_next), collect=True)
        ratio_line(f"load at step {n}, whole state, vs get_tuple{note}", ours, theirs, 2.0)
        anchor.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def region(label: str, counter: TransactionCounter, totals: dict[str, Counter[str]], store: CheckpointStore) -> Iterator[None]:
    """Mark a region for the strace count and add its transactions to ``totals[label]`` (and the
    commits the store counted itself, when it counts them, to ``totals[label]["store's own count"]``)."""
    before = Counter(counter.commits)
    own = store_commits(store)
    mark(label, "begin")
    yield
    mark(label, "end")
    totals.setdefault(label, Counter()).update(Counter(counter.commits) - before)
    after = store_commits(store)
    if own is not None and after is not None:
        totals[label][OWN] += after - own


def disk_child(folder: str, k: int, k_approves: int) -> None:
    """Under strace: ``k`` step saves, decision saves and LangGraph puts, and ``k_approves``
    approvals, each in a marked region; prints the transactions per region as JSON."""
    root = Path(folder)
    with TransactionCounter() as counter:
        real = RealRun(root / "real")
        home = Home(root / "home", clock=FixedClock(FRIDAY))
        home.approval_key()  # made before the decision saves below put approved runs in the store
        anchor = Anchor(root / "langgraph.sqlite")
        i = real.typical
        totals: dict[str, Counter[str]] = {}
        plans: list[tuple[str, Prepare]] = [
            ("save-step", save_after(home.store, real.steps[i - 1], real.steps[i])),
            ("save-decision", decision_save(home.store, real.waiting, real.decision, real.decision_kwargs)),
            ("put-step", put_after(anchor, real.steps[i - 1], real.steps[i])),
            ("put-decision", put_after(anchor, real.waiting, real.decision)),
        ]
        for label, prepare in plans:
            for _ in range(k):
                call = prepare()
                with region(label, counter, totals, home.store):
                    call()
        ops = 0
        for _ in range(k_approves):
            reset_world(home)
            state = home.run("T-90103", repeat=1)
            with region("approve", counter, totals, home.store):
                done = approve_and_execute(home, state.run_id)
            ops += _done_operations(done)
        print(
            json.dumps(
                {"transactions": {label: dict(c) for label, c in totals.items()}, "ops": ops, "pragmas": counter_pragmas(root)}
            )
        )
        anchor.close()


def counter_pragmas(root: Path) -> dict[str, str]:
    """The journal mode and synchronous level a fresh connection sees (what is persistent)."""
    import sqlite3

    out = {}
    for name in ("home/runs.sqlite", "langgraph.sqlite"):
        conn = sqlite3.connect(root / name)
        out[name] = f"journal_mode={conn.execute('PRAGMA journal_mode').fetchone()[0]}"
        conn.close()
    return out


def _done_operations(state: TaskState) -> int:
    """Operations really done; anything else means the benchmark is broken, so it stops."""
    if state.status != "done" or any(op.status != "done" for op in state.operations):
        raise RuntimeError(
            f"run {state.run_id} ended {state.status} with operations "
            f"{[op.status for op in state.operations]}: the executor benchmark must count done writes only"
        )
    return len(state.operations)


def bench_disk(quick: bool) -> None:
    heading("On disk, same durability (WAL; LangGraph synchronous=FULL): save p50, fsyncs and transactions per save")
    rounds = 5 if quick else 31
    root = disk_tmp("bench-disk-")
    try:
        real = RealRun(root / "real")
        home = Home(root / "home", clock=FixedClock(FRIDAY))
        anchor = Anchor(root / "langgraph.sqlite")
        i = real.typical
        ours, theirs = interleaved(
            rounds, save_after(home.store, real.steps[i - 1], real.steps[i]), put_after(anchor, real.steps[i - 1], real.steps[i])
        )
        ratio_line("save of one step vs put, p50 on disk", ours, theirs, 1.2, stat="p50")
        ours, theirs = interleaved(
            rounds,
            decision_save(home.store, real.waiting, real.decision, real.decision_kwargs),
            put_after(anchor, real.waiting, real.decision),
        )
        ratio_line("save of a decision vs put, p50 on disk", ours, theirs, 1.2, stat="p50")
        anchor.close()
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if not strace_available():
        print("  fsyncs per save: not measured (no working /usr/bin/strace here)")
        return
    k, k_approves = (5, 3) if quick else (100, 10)
    child = disk_tmp("bench-fsync-")
    try:
        counts = {}
        argv = [sys.executable, str(Path(__file__).resolve()), "--child-disk", str(child), str(k), str(k_approves)]
        total, out = fsyncs_by_label(argv, ["save-step", "save-decision", "put-step", "put-decision", "approve"])
        counts = total
        data = json.loads(out.strip().splitlines()[-1])
    finally:
        shutil.rmtree(child, ignore_errors=True)
    tx = data["transactions"]
    print(
        f"  counted by strace -f in a child process over {k} calls of each kind and {k_approves} approvals (fsync + fdatasync, "
        "WAL checkpoints included where they fall); transactions that wrote, by tracing its connections"
    )
    for label, what in (
        ("save-step", "resolver save of one step"),
        ("save-decision", "resolver save of a decision"),
        ("put-step", "LangGraph put of one step"),
        ("put-decision", "LangGraph put of a decision"),
    ):
        per = counts[label] / k
        t = sum(v for name, v in tx.get(label, {}).items() if name != OWN) / k
        ok = per <= 1.1 if label.startswith("save") else None
        own = tx.get(label, {}).get(OWN) if label.startswith("save") else None
        value = f"{per:.1f} fsyncs, {t:.1f} transactions" + (f" (store counts {own / k:.1f} commits)" if own is not None else "")
        figure(f"{what}: fsyncs, transactions per call", value, "1 fsync (+ckpt)" if ok is not None else "(anchor)", ok)
    ops = data["ops"]
    per_approve = counts["approve"] / k_approves
    tx_approve = tx.get("approve", {})
    figure(
        "approve + execute (T-90103, 3 operations): fsyncs per approve",
        f"{per_approve:.1f} ({counts['approve'] / ops:.1f} per operation)",
        "(printed)",
        None,
    )
    figure(
        "approve + execute: transactions per approve",
        f"{sum(v for n, v in tx_approve.items() if n != OWN) / k_approves:.1f} ("
        + ", ".join(f"{n} {v / k_approves:.1f}" for n, v in sorted(tx_approve.items()))
        + ")",
        "(printed)",
        None,
    )
    print(f"  persistent modes: {data['pragmas']}")


def read_write_bytes() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("write_bytes:"):
            return int(line.split()[1])
    return 0


def big_result(base: Any, step: int, size: int) -> dict[str, Any]:
    """A tool output of about ``size`` bytes of JSON: the real result, then order notes of the step."""
    notes, n = [], 0
    while n < size:
        line = {
            "line": len(notes) + 1,
            "step": step,
            "note": f"carrier scan {step}-{len(notes)}: parcel at depot, "
            "sorted and loaded; customer contacted by email about the delay " + "." * 40,
        }
        notes.append(line)
        n += len(json.dumps(line))
    return {"result": base, "history": notes}


def bench_long(quick: bool) -> None:
    steps, size = (30, 5_000) if quick else (300, 50_000)
    heading(f"A {steps}-step run with {size // 1000} KB tool outputs, on disk: save cost by step, bytes written")
    root = disk_tmp("bench-long-")
    try:
        real = RealRun(root / "real")
        home = Home(root / "home", clock=FixedClock(FRIDAY))
        base = real.steps[real.typical].evidence[-1].result
        obj = fresh_copy(real.steps[real.typical - 1], new_id())
        first = obj.step + 1
        home.store.save(obj)
        times: dict[int, float] = {}
        written: dict[int, int] = {}
        start_bytes = read_write_bytes()
        for n in range(first, steps + 1):
            real.tool_step.apply(obj, n, big_result(base, n, size))
            t = time.perf_counter()
            home.store.save(obj)
            times[n] = time.perf_counter() - t
            written[n] = read_write_bytes() - start_bytes
        w = 5 if not quick else 2
        early_at, late_at = (10, steps) if steps >= 20 else (first + w, steps)
        early = median([times[n] for n in range(early_at - w, early_at + w + 1) if n in times])
        late = median([times[n] for n in range(late_at - 2 * w, late_at + 1)])
        print(
            f"  {steps - first + 1} saves of one state object, changed in place as the runner does; median of the saves around each step"
        )
        for at in sorted({10, steps // 4, steps // 2, 3 * steps // 4, steps}):
            if at in times:
                print(f"    save at step {at:>4}: {ms(times[at])}; written so far {written[at] / 1e6:,.1f} MB")
        figure(
            f"save at step {steps} vs step 10", f"{ms(late)} vs {ms(early)} = {late / early:.2f}x", "<= 2.0x", late / early <= 2.0
        )
        half = steps // 2
        total, first_half = written[steps], written[half]
        growth = total / first_half if first_half else float("nan")
        figure(
            f"bytes written in all ({steps} saves, /proc/self/io write_bytes)",
            f"{total / 1e6:,.1f} MB ({total / (steps - first + 1) / 1e3:,.0f} KB per save)",
            "linear",
            None,
        )
        figure(
            f"growth: bytes of steps 1-{steps} / bytes of steps 1-{half}",
            f"{growth:.2f} (linear 2.0, quadratic 4.0)",
            "<= 2.5",
            growth <= 2.5,
        )
        payload = len(json.dumps(big_result(base, 1, size))) * (steps - first + 1)
        print(f"    (the tool outputs themselves are {payload / 1e6:,.1f} MB; stored once that is the floor)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def time_cli(argv: list[str], cap: float) -> tuple[float, float, int, float]:
    """Run a command; return (seconds to the first line, seconds in all, lines, CPU seconds: user
    + system). A process still running after ``cap`` seconds is killed and its missing figures
    are infinite."""
    import resource
    import threading

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    killed = threading.Event()

    def stop() -> None:
        killed.set()
        proc.kill()

    timer = threading.Timer(cap, stop)
    timer.start()
    first = None
    lines = 0
    try:
        for _line in proc.stdout:
            if first is None:
                first = time.perf_counter() - t0
            lines += 1
        proc.wait()
    finally:
        timer.cancel()
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if killed.is_set():
        return first if first is not None else float("inf"), float("inf"), lines, cpu
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {proc.stderr.read()[-500:] if proc.stderr else ''}")
    return first if first is not None else took, took, lines, cpu


def bench_listing(quick: bool, templates: Home) -> None:
    sizes = [(2_000, 3, 0.3, None), (5_000, 1, None, 1.0)] if quick else [(100_000, 7, 0.3, None), (1_000_000, 1, None, 1.0)]
    heading("resolver runs --status waiting_approval, whole process, homes of SQL copies of real runs")
    compiled = subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(__file__).resolve().parent.parent / "core")])
    print(
        "  core byte-compiled first, as an install does"
        + ("" if compiled.returncode == 0 else " (compileall failed: start-up includes compiling)")
        + "; CPU is user + system time of the process"
    )
    cap = 120.0 if quick else 400.0
    for n, rounds, whole_target, first_target in sizes:
        root = disk_tmp("bench-listing-")
        try:
            took = build_home(root / "home", n, templates)
            counts = count_runs(root / "home")
            print(
                f"  built {sum(counts.values()):,} runs ({', '.join(f'{s} {c:,}' for s, c in sorted(counts.items()))}) in {took:.1f} s"
            )
            argv = [*cli_argv(), "runs", "--status", "waiting_approval", "--home", str(root / "home")]
            results = [time_cli(argv, cap) for _ in range(rounds)]
            first = median([r[0] for r in results])
            whole = median([r[1] for r in results])
            lines = results[0][2]
            cpu = median([r[3] for r in results])
            note = f"CPU {cpu:.2f} s; {lines:,} lines, {counts['waiting_approval']:,} waiting runs"
            if whole_target is not None:
                figure(
                    f"{n:,} runs: whole process (median of {rounds})",
                    f"{whole:.2f} s ({note})" if whole != float("inf") else f"> {cap:.0f} s (stopped)",
                    f"< {whole_target} s",
                    whole < whole_target,
                )
            if first_target is not None:
                shown = f"{first:.2f} s" if first != float("inf") else f"> {cap:.0f} s (stopped)"
                rest = f"whole process {whole:.2f} s" if whole != float("inf") else f"stopped at {cap:.0f} s"
                figure(f"{n:,} runs: first line", shown + f" ({rest}; {note})", f"< {first_target} s", first < first_target)
            if whole_target is not None:
                listing_instructions(argv, quick)
            home = Home(root / "home")
            for status in ("waiting_approval", None):
                took_page = []
                for _ in range(rounds):
                    t = time.perf_counter()
                    rows = list_page(home.store, status, PAGE)
                    took_page.append(time.perf_counter() - t)
                figure(
                    f"{n:,} runs: store, first page of {status or 'all'} in process",
                    f"{ms(median(took_page))} ({len(rows)} rows)",
                    "< 100 ms",
                    median(took_page) < 0.1,
                )
        finally:
            shutil.rmtree(root, ignore_errors=True)


def listing_instructions(argv: list[str], quick: bool) -> None:
    """The instructions of the whole listing process (callgrind), the figure a busy machine
    does not move; not counted by ``--quick`` (about 20 s under valgrind)."""
    import callgrind

    reason = callgrind.why_not()
    if quick or reason is not None:
        print(f"    whole-process instructions: not counted ({'--quick' if quick else reason})")
        return
    regions, _out = callgrind.counted(argv, whole=True)
    print(f"    whole-process instructions (callgrind, start-up and imports included): {regions['whole'][0] / 1e6:,.0f} M")


def bench_executor(quick: bool) -> None:
    heading("Executor: approve + execute of T-90103 (3 operations, all done), tmpfs, overhead beyond the service call")
    rounds = 3 if quick else 20
    root = shm_tmp("bench-exec-")
    owner, method = service_call_owner()
    original = getattr(owner, method)
    service = 0.0

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal service
        t = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            service += time.perf_counter() - t

    try:
        home = Home(root / "home", clock=FixedClock(FRIDAY))
        setattr(owner, method, timed)
        totals, ops = [], 0
        for _ in range(rounds):
            reset_world(home)
            state = home.run("T-90103", repeat=1)
            before = service
            t = time.perf_counter()
            done = approve_and_execute(home, state.run_id)
            took = time.perf_counter() - t
            n = _done_operations(done)
            ops += n
            totals.append((took - (service - before)) / n)
        per_op = median(totals)
        figure(
            f"overhead per operation done ({ops} operations in {rounds} approvals, median)", ms(per_op), "< 2 ms", per_op < 0.002
        )
        print(
            f"    service call per operation: {ms(service / ops)} (mean); statuses checked: every run done, every operation done"
        )
    finally:
        setattr(owner, method, original)
        shutil.rmtree(root, ignore_errors=True)


def bench_startup(quick: bool, templates: Home) -> None:
    heading("Start-up: python -X importtime of resolver --help and resolver runs")
    rounds = 2 if quick else 5
    for label, args in (("resolver --help", ["--help"]), ("resolver runs", ["runs", "--home", str(templates.root)])):
        argv = [*cli_argv(), *args]
        imports: list[float] = []
        walls: list[float] = []
        heavy: list[tuple[str, float, int]] = []
        for _ in range(rounds):
            t = time.perf_counter()
            proc = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            if proc.returncode != 0:
                raise RuntimeError(f"{label} failed: {proc.stderr[-500:]}")
            total, heavy = importtime_total(proc.stderr)
            imports.append(total)
        figure(
            f"{label}: import time (sum of top-level cumulative)",
            f"{median(imports) * 1000:.0f} ms; whole process {median(walls) * 1000:.0f} ms",
            "(printed)",
            None,
        )
        inner = sorted((m for m in heavy if m[2] in (1, 2)), key=lambda x: -x[1])[:8]
        print("    heaviest imports below the top: " + ", ".join(f"{m} {t * 1000:.0f} ms" for m, t, _ in inner))
        names = {m for m, _, _ in heavy}
        print(
            "    imported: "
            + ", ".join(
                f"{p} {'yes' if p in names else 'no'}"
                for p in ("textual", "rich", "pydantic", "sqlite_utils", "core.contract.world", "core.engine.executor")
            )
        )


def importtime_total(stderr: str) -> tuple[float, list[tuple[str, float, int]]]:
    """Seconds of the top-level imports of ``-X importtime`` output, and every module imported
    as (name, cumulative seconds, depth)."""
    mods = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \| (\s*)(\S+)", line)
        if m:
            mods.append((m.group(4), int(m.group(2)) / 1e6, len(m.group(3)) // 2))
    return sum(t for _, t, depth in mods if depth == 0), mods


# -- instructions (callgrind) ----------------------------------------------------------------------

INSTRUCTION_PAIRS = (
    ("save-step", "put-step", "save of one step vs put", 1.5),
    ("save-decision", "put-decision", "save of a decision vs put", 2.0),
    ("view", "get", "load, read side, vs get_tuple", 1.0),
    ("load", "get", "load of the whole state vs get_tuple", 2.0),
)
"""(ours, the anchor's, what is compared, target ratio): the anchor's targets, in instructions; the
read side (``load_view``) has its 1.0x, the whole state (resume) the 2.0x the ``anchor``
section gives it."""


def instructions_child(folder: Path, n: int) -> None:
    """Under callgrind: ``n`` rounds of each measure of :data:`INSTRUCTION_PAIRS`, each call
    one counted region (:class:`callgrind.Meter`), set-up and a garbage collection outside it;
    ``n`` empty regions for the marking's own cost."""
    import gc

    from callgrind import Meter, floor

    meter = Meter()
    real = RealRun(folder / "real")
    home = Home(folder / "home", clock=FixedClock(FRIDAY))
    home.approval_key()
    anchor = Anchor(folder / "langgraph.sqlite")
    k = real.typical
    plans: list[tuple[str, Prepare]] = [
        ("save-step", save_after(home.store, real.steps[k - 1], real.steps[k])),
        ("put-step", put_after(anchor, real.steps[k - 1], real.steps[k])),
        ("save-decision", decision_save(home.store, real.waiting, real.decision, real.decision_kwargs)),
        ("put-decision", put_after(anchor, real.waiting, real.decision)),
        ("view", view_of(home.store, real.waiting)),
        ("load", load_of(home.store, real.waiting)),
        ("get", get_of(anchor, real.waiting)),
    ]
    for _label, prepare in plans:  # one call of each first, uncounted: caches and imports warm
        prepare()()
    for _ in range(n):
        for label, prepare in plans:
            call = prepare()
            gc.collect()
            with meter.region(label):
                call()
    floor(meter, n)
    anchor.close()
    print(json.dumps({"on_valgrind": meter.on_valgrind, "state": kib(real.waiting), "step": k}))


def bench_instructions(quick: bool) -> None:
    import callgrind

    heading("Instructions (valgrind callgrind): save and load beside LangGraph SqliteSaver, one call at a time")
    reason = callgrind.why_not()
    if reason is not None:
        print(f"  {reason}; the wall-clock sections above stand alone.")
        return
    n = 2 if quick else 10
    root = shm_tmp("bench-instr-")
    try:
        argv = [sys.executable, str(Path(__file__).resolve()), "--child-instructions", str(root), str(n)]
        t = time.perf_counter()
        regions, out = callgrind.counted(argv)
        info = json.loads(out.strip().splitlines()[-1])
        base = median(regions.get("floor", [0]))
        print(
            f"  {n} counted calls of each (median, less the marking's own {base:,.0f}), in a driver under callgrind "
            f"({time.perf_counter() - t:.0f} s); step {info['step']} of T-65273, waiting state {info['state']}"
        )

        def per_call(label: str) -> float:
            return median(regions[label]) - base

        for ours, theirs, what, limit in INSTRUCTION_PAIRS:
            a, b = per_call(ours), per_call(theirs)
            spread = max(regions[ours]) / min(regions[ours]) - 1
            figure(
                f"{what}, instructions",
                f"{a / 1e3:,.0f}k vs {b / 1e3:,.0f}k = {a / b:.2f}x (ours vary {spread:.1%} between calls)",
                f"<= {limit:.1f}x",
                a / b <= limit,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> None:
    parser = section_parser(__doc__, SECTIONS)
    parser.add_argument("--child-disk", nargs=3, metavar=("FOLDER", "K", "K_APPROVES"), help=argparse.SUPPRESS)
    parser.add_argument("--child-instructions", nargs=2, metavar=("FOLDER", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_disk:
        disk_child(args.child_disk[0], int(args.child_disk[1]), int(args.child_disk[2]))
        return
    if args.child_instructions:
        instructions_child(Path(args.child_instructions[0]), int(args.child_instructions[1]))
        return
    only = set(chosen_sections(args.only, SECTIONS))
    if only & ANCHORED:
        try:
            import langgraph.checkpoint.sqlite  # noqa: F401
        except ImportError:
            sys.exit(
                "The LangGraph anchor is missing: install the bench extra with `pip install -e '.[bench]'`, "
                f"or run the other sections: --only {' --only '.join(s for s in SECTIONS if s not in ANCHORED)}."
            )
    print(
        f"bench_core ({'quick' if args.quick else 'full'}): {', '.join(s for s in SECTIONS if s in only)}; python {sys.version.split()[0]}"
    )
    started = time.perf_counter()
    templates_root = shm_tmp("bench-templates-")
    try:
        templates = make_templates(templates_root / "home") if only & {"listing", "startup"} else None
        if templates is not None:
            print(f"template runs: {', '.join(f'{t} {s}' for t, _h, s in dict.fromkeys(TEMPLATES))}")
        if "anchor" in only:
            bench_anchor(args.quick)
        if "disk" in only:
            bench_disk(args.quick)
        if "executor" in only:
            bench_executor(args.quick)
        if "startup" in only and templates is not None:
            bench_startup(args.quick, templates)
        if "long" in only:
            bench_long(args.quick)
        if "listing" in only and templates is not None:
            bench_listing(args.quick, templates)
        if "instructions" in only:
            bench_instructions(args.quick)
    finally:
        shutil.rmtree(templates_root, ignore_errors=True)
    print(f"\nbench_core done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
