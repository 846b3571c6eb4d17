"""The trainer kit: seed 000's Friday-to-Monday lesson, one moment at a time, and the
exercises of seeds 000 and 001.

Each moment is a function ``moment_<name>(home, ...) -> list[str]`` that changes the home for
real (the runner, the approval code, the executor, the world's services) and returns what to
tell the class. They are deterministic after ``resolver reset --all``; the app's trainer mode
offers the same functions in its command palette.

Moments (``resolver class MOMENT``): friday, crash-in-loop [--after-step N],
crash-before-write, crash-after-write, resume-crashed, weekend-call, monday, run-again, all.
Exercises (``resolver exercise NAME``): crash-at-step, corrupt-checkpoint, migrate-v1,
resume-twice, lease-owner.

Every moment and exercise runs in a practice home only: in a shop home each is refused
(:class:`~core.ground.errors.ShopRefused`) before it changes anything.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from core.api.home import Home
from core.api.homekind import require_practice
from core.api.views import after_resume
from core.contract.store import lease_owner_name
from core.contract.world import ServiceRefused
from core.engine.executor import SimulatedCrash
from core.engine.runner import LoopCrash, crash_after_step, outcome_line
from core.ground.clock import FileClock, FixedClock, iso, parse_time
from core.ground.errors import LeaseHeld, ResolverError

FRIDAY = "2026-10-09T17:00:00-04:00"
"""Friday 2026-10-09 17:00 America/Toronto: Amira runs the tickets (seed 000)."""
SATURDAY = "2026-10-10T11:00:00-04:00"
"""Saturday 11:00: the customer phones and a colleague refunds by hand."""
MONDAY = "2026-10-12T09:00:00-04:00"
"""Monday 09:00: Grace comes in (2d 16h later)."""

T65273_RUN = "T-65273-agent-chat-small-1"

F = TypeVar("F", bound=Callable[..., list[str]])


def practice_only(what: str) -> Callable[[F], F]:
    """Refuse the decorated moment or exercise (``fn(home, ...)``) in a shop home."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def guarded(home: Home, *args: Any, **kwargs: Any) -> list[str]:
            require_practice(home.root, what, home.kind)
            return fn(home, *args, **kwargs)

        return guarded  # type: ignore[return-value]

    return wrap


moment = practice_only("the trainer's `class`")
exercise = practice_only("the trainer's `exercise`")


def _set_clock(home: Home, when: str) -> None:
    clock = home.clock
    if isinstance(clock, FileClock | FixedClock):
        clock.set(parse_time(when))
    else:
        raise ResolverError("This home's clock cannot be set; run the class with the trainer's clock.")


@moment
def moment_friday(home: Home) -> list[str]:
    """Friday 17:00: Amira runs T-65273 (waits for a team lead or above) and T-90103 repeat 1."""
    _set_clock(home, FRIDAY)
    lines = [f"Clock: {iso(home.clock.now())} (Friday)"]
    for task, repeat in (("T-65273", 1), ("T-90103", 1)):
        state = home.run(task, repeat=repeat)
        lines.append(f"Amira ran {task}: {state.run_id} is {state.status}. {outcome_line(state)}")
    return lines


@moment
def moment_crash_in_loop(home: Home, after_step: int = 1) -> list[str]:
    """T-65273 crashes after step N of its loop: run ``T-65273-crash-N``, saved as running."""
    run_id = f"T-65273-crash-{after_step}"
    try:
        home.run("T-65273", repeat=1, run_id=run_id, on_step=crash_after_step(after_step))
    except LoopCrash as crash:
        state = home.store.load(run_id)
        return [
            f"{crash}.",
            f"{run_id} is {state.status} at step {state.step} with {state.usage.model_calls} model call(s) saved.",
            f"Resume with: resolver resume {run_id}",
        ]
    state = home.store.load(run_id)
    return [f"{run_id} finished before step {after_step + 1}: {state.status}."]


def _crash_at_write(home: Home, point: str) -> list[str]:
    """T-90104 approved by Amira and stopped at ``point``. One effect per ticket: when
    a run of T-90104 already waits, crashed before its write, that run is resumed and stopped
    again just after the write, rather than a second run approved for the same refund."""
    waiting = [r for r in home.store.runs_of_task("T-90104") if r.status == "executing"]
    try:
        if waiting and point == "after-write":
            run_id = waiting[0].run_id
            home.execute(run_id, interrupt="after-write")
            return [f"{run_id} finished without reaching the write."]
        state = home.run("T-90104", "agent_structured", "chat-strong", 1)
        run_id = state.run_id
        home.approve(state.run_id, "agent", "Amira", interrupt=point)  # type: ignore[arg-type]
    except SimulatedCrash as crash:
        if waiting:
            return [f"{run_id} was resumed; the process stopped again: {crash}.", f"Resume with: resolver resume {run_id}"]
        return [f"Amira approved {run_id} as agent; the process stopped: {crash}.", f"Resume with: resolver resume {run_id}"]
    return [f"{run_id} finished without reaching the write."]


@moment
def moment_crash_before_write(home: Home) -> list[str]:
    """T-90104 approved by an agent and stopped just before the refund is written."""
    return _crash_at_write(home, "before-write")


@moment
def moment_crash_after_write(home: Home) -> list[str]:
    """T-90104 approved by an agent and stopped just after the refund, before its checkpoint."""
    return _crash_at_write(home, "after-write")


@moment
def moment_resume_crashed(home: Home) -> list[str]:
    """Friday, still within the approval's validity: resume every T-90104 run left executing by
    a crash (what ``resolver resume RUN`` prints). An approval whose execution had not called
    the service lapses after ``approval_valid_s``, so the lesson resumes its crash
    before the clock moves to the weekend and Monday."""
    lines: list[str] = []
    for run in home.store.runs_of_task("T-90104"):
        if run.status != "executing":
            continue
        resumed = home.resume(run.run_id)
        lines += after_resume(resumed.kind, resumed.before, resumed.state)
    return lines or ["No run of T-90104 is executing: nothing to resume."]


@moment
def moment_weekend_call(home: Home) -> list[str]:
    """The colleague's manual refund of PAY-507862-2 (operation ``manual-1``), made on Saturday
    11:00 whatever the clock says: the call happened over the weekend. When the clock is already
    later (TRAINER.md plays Monday first), it is set to Saturday 11:00 for the refund and then
    back to where it was, so the request shows the refund "on Saturday 11:00" in either order.
    The register numbers entries in commit order (``seq``), so "since" is unchanged."""
    later = home.clock.now()
    _set_clock(home, SATURDAY)
    try:
        r = home.manual_refund("manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2")
    except ServiceRefused as exc:
        return [f"The phone call's refund was refused: {exc}."]
    finally:
        if later > parse_time(SATURDAY):
            _set_clock(home, iso(later))
    return [f"Over the weekend a colleague refunded {r['payment_id']} by hand: {r['refund_id']} {r['amount']} CAD."]


@moment
def moment_monday(home: Home) -> list[str]:
    """The clock moves to Monday 09:00."""
    _set_clock(home, MONDAY)
    return [f"Clock: {iso(home.clock.now())} (Monday). Grace opens a new terminal."]


@moment
def moment_run_again(home: Home) -> list[str]:
    """The common mistake: T-90103 run again (repeat 2), so two runs wait with different proposals.
    If Friday's run of T-90103 is gone (a reset since), it is made first, as on Friday."""
    if not home.store.runs_of_task("T-90103"):
        home.run("T-90103", repeat=1)
    state = home.run("T-90103", repeat=2)
    first = home.store.runs_of_task("T-90103")[0].run_id
    actions = state.proposal.actions if state.proposal else []
    return [
        f"Tomás ran T-90103 again: {state.run_id} is {state.status} with {len(actions)} action(s).",
        f"Compare: resolver diff {first} {state.run_id}",
    ]


MOMENTS: dict[str, Callable[..., list[str]]] = {
    "friday": moment_friday,
    "crash-in-loop": moment_crash_in_loop,
    "crash-before-write": moment_crash_before_write,
    "crash-after-write": moment_crash_after_write,
    "resume-crashed": moment_resume_crashed,
    "weekend-call": moment_weekend_call,
    "monday": moment_monday,
    "run-again": moment_run_again,
}
"""Every moment of the lesson, in the order ``all`` plays them and the app's palette lists them:
the crashed T-90104 is resumed on Friday, before the weekend and Monday, while its approval is
still valid (an execution that never called the service lapses after ``approval_valid_s``)."""

TITLES = {
    "friday": "Simulate: Friday, Amira runs T-65273 and T-90103",
    "crash-in-loop": "Simulate: crash T-65273 after step 1",
    "crash-before-write": "Simulate: crash T-90104 before the write",
    "crash-after-write": "Simulate: crash T-90104 after the write",
    "resume-crashed": "Simulate: resume T-90104 after the crash (Friday, before the approval lapses)",
    "weekend-call": "Simulate: weekend phone call (manual refund of PAY-507862-2)",
    "monday": "Simulate: Monday 09:00",
    "run-again": "Simulate: run T-90103 again (the common mistake)",
}
"""The command-palette titles of the moments in the app's trainer mode."""


@moment
def moment_all(home: Home) -> list[str]:
    """Every moment in order."""
    lines: list[str] = []
    for name, moment in MOMENTS.items():
        lines.append(f"== {name}")
        lines += moment(home)
    return lines


# --- exercises ------------------------------------------------------------------------------------


@exercise
def exercise_crash_at_step(home: Home, after_step: int = 2) -> list[str]:
    """Seed 000: crash after step N, predict, resume; the outcome still reads 3 model calls."""
    lines = moment_crash_in_loop(home, after_step)
    run_id = f"T-65273-crash-{after_step}"
    done = home.resume(run_id)
    steps = [e["message"] for e in home.store.events(run_id) if e["kind"] in ("tool_call", "outcome")]
    return lines + [f"Resumed: {outcome_line(done.state)}", "Trace:"] + [f"  {s}" for s in steps]


@exercise
def exercise_corrupt_checkpoint(home: Home) -> list[str]:
    """Seed 001 exercise 1: corrupt a checkpoint's JSON and see the clear error."""
    run_id = f"T-65273-corrupt-{uuid.uuid4().hex[:6]}"
    home.run("T-65273", repeat=1, run_id=run_id)
    home.store.overwrite_checkpoint(run_id, lambda text: text[:200])
    try:
        home.store.load(run_id)
    except ResolverError as exc:
        return [
            f"Cut the checkpoint of {run_id} to 200 characters.",
            f"Loading it says: {exc}",
            "The other runs still list: resolver runs",
        ]
    return ["The corrupt checkpoint loaded; that is a bug."]


@exercise
def exercise_migrate_v1(home: Home) -> list[str]:
    """Seed 001 exercise 2: a v1 checkpoint (no ``reply_channel``) loads as v2 with ``email``."""
    state = home.run("T-90103", repeat=1, run_id=f"T-90103-v1-{uuid.uuid4().hex[:6]}")
    raw = json.loads(state.model_dump_json())
    raw["schema_version"] = 1
    raw.pop("reply_channel")
    raw.pop("meta")
    raw.pop("run_uid")
    home.store.overwrite_checkpoint(state.run_id, lambda _text: json.dumps(raw))
    back = home.store.load(state.run_id)
    return [
        f"Saved {state.run_id} as schema version 1 without reply_channel.",
        f"Loaded as schema version {back.schema_version}: reply_channel = {back.reply_channel!r}, "
        f"run_uid = {back.run_uid!r} (the run ID, as for every run saved before schema 3).",
    ]


@exercise
def exercise_resume_twice(home: Home) -> list[str]:
    """Seed 001 exercise 3: resume twice without idempotency keys (two replies), then with (one)."""
    world = home.world("exercise")
    before = len(world.changes())
    for _ in range(2):  # each "resume" makes up a fresh key: the gateway cannot tell
        world.send_reply(f"fresh-{uuid.uuid4().hex}", "LK-507862", "C-1001", "Your refund is on its way.")
    without = len(world.changes()) - before
    key = f"reply-{uuid.uuid4().hex[:8]}"
    for _ in range(2):  # the same operation ID on both resumes
        world.send_reply(key, "LK-507862", "C-1001", "Your refund is on its way.")
    with_key = len(world.changes()) - before - without
    return [f"Without idempotency keys: {without} replies sent.", f"With the same operation ID: {with_key} reply sent."]


LEASE_TICKET = "T-24410"
"""The ticket of ``exercise lease-owner``: no moment of the lesson touches it (tests/trainer/test_lesson.py
checks), so the exercise runs after the class, and again, without a reset."""


@exercise
def exercise_lease_owner(home: Home) -> list[str]:
    """Seed 001 exercise 4: a resume from another lease owner is refused while the lease lives.

    A run of :data:`LEASE_TICKET` stops after step 1 of its loop (saved as running, no approval,
    so one effect per ticket never comes into it); window 1 takes its lease; a resume from this
    process is refused with :class:`~core.ground.errors.LeaseHeld` naming window 1."""
    run_id = f"{LEASE_TICKET}-lease-{uuid.uuid4().hex[:6]}"
    with contextlib.suppress(LoopCrash):  # the loop stops after step 1, saved as running
        home.run(LEASE_TICKET, repeat=1, run_id=run_id, on_step=crash_after_step(1))
    home.store.acquire_lease(run_id, lease_owner_name("window-1"), 60)
    try:
        home.resume(run_id)
    except LeaseHeld as exc:
        return [f"Window 1 holds the lease of {run_id}.", f"Resume from another owner: {exc}"]
    return ["The second owner was not refused; that is a bug."]


EXERCISES: dict[str, Callable[[Home], list[str]]] = {
    "crash-at-step": exercise_crash_at_step,
    "corrupt-checkpoint": exercise_corrupt_checkpoint,
    "migrate-v1": exercise_migrate_v1,
    "resume-twice": exercise_resume_twice,
    "lease-owner": exercise_lease_owner,
}


def play(home: Home, args: argparse.Namespace) -> list[str]:
    """``resolver class MOMENT`` / ``resolver exercise NAME``: play it; the lines to print."""
    if getattr(args, "exercise", None):
        return EXERCISES[args.exercise](home)
    if args.moment == "all":
        return moment_all(home)
    if args.moment == "crash-in-loop":
        return moment_crash_in_loop(home, args.after_step)
    return MOMENTS[args.moment](home)


def main(home: Home, args: argparse.Namespace) -> int:
    """``resolver class MOMENT`` / ``resolver exercise NAME``: print what happened."""
    for line in play(home, args):
        print(line)
    return 0
