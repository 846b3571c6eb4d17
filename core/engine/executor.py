"""The executor: every approved write exactly once, across crashes, races and retries.

For each operation in order (seed 000 and seed 001):

1. skip it if ``done``;
2. authorize again (:func:`core.engine.approval.verify`: role under the current policy, digest,
   signature); a failure hands the run to a person with nothing (more) written;
3. reconcile: a ``pending`` operation is looked up in the practice world's operations register
   by its ID; if the service already did it, it is marked done with the recorded result and
   the service is not called again. An entry under that ID whose service or arguments (kind,
   order, amount, payment, item, recipient) differ from the planned write is not this
   operation: the run is handed to a person with a sentence naming both, and
   nothing more is written;
4. mark it ``pending``, count the attempt and save the checkpoint **before** the write (a call
   that ends the process is counted; after :data:`MAX_CALLS` the run goes to a person);
5. call the service (the lease renewed by the execution's one :class:`Heartbeat` while it waits) with the
   operation ID as idempotency key; a transient fault is retried
   (at most :data:`MAX_CALLS` calls, backoff from the clock); a refusal marks it ``failed`` with
   the service's sentence and hands the run to a person;
6. mark it ``done`` with the result and save.

While it runs, the executor holds the run's lease; another executor is refused
(:class:`~core.ground.errors.LeaseHeld`) until it is released or expires.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from core.contract.store import AuditLog, Housekeeping, Leases, RunStore, crash_point, lease_owner_name
from core.contract.world import (
    PreconditionFailed,
    ServiceRefused,
    TransientServiceError,
    World,
    describe_call,
    planned_call,
    same_call,
)
from core.engine.approval import verify
from core.ground.clock import Clock, iso
from core.ground.data import TaskNotFound, find_task, load_policy
from core.ground.errors import ResolverError
from core.ground.state import Operation, TaskState, action_short, execution_started
from core.stores import Place, open_world

MAX_CALLS = 3
"""Calls of one service per operation before the executor gives up."""

BACKOFF_S = (0.2, 0.4)
"""Seconds to wait after the first and second failed call (taken from the clock)."""

LEASE_TTL_ENV = "RESOLVER_LEASE_TTL_S"
"""Test hook: a shorter lease (seconds) for a new process, so a lease shorter than a slow call
can be tried without waiting a minute."""


class ExecutorStore(RunStore, Leases, AuditLog, Housekeeping, Protocol):
    """What the executor needs of a store: the run, its lease, the audit of refusals and the thread's connection."""


def _lease_ttl() -> float:
    try:
        ttl = float(os.environ.get(LEASE_TTL_ENV) or 60.0)
    except ValueError:
        return 60.0
    return ttl if ttl > 0 else 60.0


LEASE_TTL_S = _lease_ttl()
"""Seconds a lease lasts without a heartbeat; a live holder renews it at every save and, while
it waits on a service, every :data:`LEASE_TTL_S` / 3 seconds (:class:`Heartbeat`). A lease is
stale when a heartbeat was missed, not when a call is long."""

Interrupt = Literal["before-write", "after-write"]
OnProgress = Callable[[TaskState, Operation], None]


class SimulatedCrash(ResolverError):
    """``--interrupt`` ended the execution at a write (for demos and tests)."""

    def __init__(self, run_id: str, point: str, op: Operation) -> None:
        super().__init__(f"simulated crash {point.replace('-', ' the ')} of {op.operation_id}")
        self.run_id = run_id
        self.point = point
        self.operation_id = op.operation_id


class Heartbeat:
    """The lease's heartbeat for one execution: one daemon thread, started at
    the execution's first service call (:meth:`start`; later calls find it running), that renews
    ``owner``'s lease of ``run_id`` every ``ttl_s / 3`` seconds (real time) until :meth:`stop`.
    A service call longer than the lease keeps the run; no thread is started per call (a thread
    start cost 0.1-0.6 ms on a quiet machine and 8 ms under load, per call).

    A renewal that finds the lease gone (released by the execution's last save, or taken over
    after a missed heartbeat) ends the thread; the next save then raises LeaseHeld. Errors of the
    renewal itself (a busy store) are left to the next renewal. ``ttl_s`` None: :data:`LEASE_TTL_S`.
    """

    def __init__(self, store: ExecutorStore, run_id: str, owner: str, ttl_s: float | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.ttl_s = ttl_s if ttl_s is not None else LEASE_TTL_S
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        """True while the thread renews the lease."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> None:
        """Start renewing, unless already started (once per execution; a stopped heartbeat does
        not start again)."""
        if self._thread is not None or self._stop.is_set():
            return
        self._thread = threading.Thread(target=self._beat, name=f"lease-heartbeat-{self.run_id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing and wait for the thread (before the lease is given back or expired, so no
        renewal lands after it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl_s / 3):
            try:
                if not self.store.renew_lease(self.run_id, self.owner, self.ttl_s):
                    return
            except ResolverError:
                continue
            finally:
                self.store.end_thread()  # what this thread holds (its connection) ends with it


def _hand_over(store: ExecutorStore, state: TaskState, why: str, owner: str) -> TaskState:
    """Hand the run to a person and give the lease back, in one save."""
    state.status = "handed_to_person"
    state.log("handed_to_person", why, at=store.clock.now())
    store.save(state, lease_owner=owner)
    return state


Authorize = Callable[[TaskState], "str | None"]
"""A shop home's check of the approval (:func:`core.engine.signing.check_approval`), asked
before every write beside :func:`core.engine.approval.verify`; a reason refuses the write."""

REDECIDE = "REDECIDE: "
"""A reason from ``authorize`` that starts so sends the run back to waiting (no write started)."""


def _recheck(
    store: ExecutorStore, state: TaskState, key: bytes, authorize: Authorize | None, owner: str, op: Operation | None
) -> TaskState | None:
    """Check the approval again before the first write (``op`` None) or before ``op``: in a
    shop home the approver's signature, registry entry and audit row (``authorize``),
    then the digest, operations, signature and role (:func:`core.engine.approval.verify`). Returns the
    run refused or handed to a person, with nothing written, or None when the approval holds."""
    where = f"before {op.action.type}" if op is not None else "before any write"
    problem = authorize(state) if authorize else None
    if problem:
        return _refuse_unauthorized(store, state, problem, owner, where)
    problem = verify(state, key, signed=authorize is None)
    if problem:
        return _hand_over(
            store, state, f"refused {where if op is not None else ''}".rstrip() + f": {problem}; nothing written", owner
        )
    return None


def _refuse_unauthorized(store: ExecutorStore, state: TaskState, why: str, owner: str, before: str) -> TaskState:
    """Refuse an approval the shop home's check does not accept, with an audit row
    (``refused``, the reason in ``detail``) in the same save. A decision that was never an
    approver's goes back to ``waiting_approval`` if no operation was started, else to a person."""
    redecide = why.startswith(REDECIDE)
    why = why.removeprefix(REDECIDE)
    a = state.approval
    now = store.clock.now()
    audit = {
        "decision": "refused",
        "role": a.role if a else "",
        "name": a.name if a else "",
        "digest": a.digest if a else "",
        "at": iso(now),
        "detail": f"execution refused: {why}",
        "run_uid": state.run_uid,
    }
    if redecide and all(op.status == "planned" for op in state.operations):
        state.status = "waiting_approval"
        state.approval = None
        state.operations = []
        state.log("back_to_waiting", f"refused: {why}; nothing written, the run waits for a decision again", at=now)
    else:
        state.status = "handed_to_person"
        state.log("handed_to_person", f"refused {before}: {why}; nothing written", at=now)
    store.save(state, audit=audit, lease_owner=owner)
    return state


def execute(
    store: ExecutorStore,
    world_at: Place,
    key: bytes,
    run_id: str,
    *,
    clock: Clock | None = None,
    owner: str | None = None,
    interrupt: Interrupt | None = None,
    on_progress: OnProgress | None = None,
    authorize: Authorize | None = None,
    tickets: Path | None = None,
) -> TaskState:
    """Execute (or finish, after a crash) the approved operations of ``run_id``.

    ``world_at`` is the practice world's place (a SQLite file, or the team store's URL).
    Returns the state, ``done`` or ``handed_to_person`` (or unchanged if not ``executing``).
    ``on_progress(state, op)`` runs after each operation is saved (the app updates its pane).
    ``authorize`` (a shop home): asked before every write too; its refusal writes an
    audit row and nothing else (:func:`_refuse_unauthorized`). ``tickets``: the home's folder of
    its own tickets, whose simulated faults the writes meet as a shipped ticket's do
    (:func:`core.ground.data.find_task`); a home ticket whose file is gone has none.

    Transactions (the fewest that keep the guarantees): one to take the lease and read
    the checkpoint (:meth:`~core.contract.store.Store.claim`); per operation one save
    before the write (``pending``, renewing the lease) and one after it (``done``); a final save
    that also gives the lease back. A retried call adds one save per failed call. Approve and
    execute of 3 operations is 1 (approval) + 1 + 6 + 1 = 9 transactions, one fsync each.

    Raises:
        LeaseHeld: another executor is working on the run (or took it over).
        SimulatedCrash: ``interrupt`` was reached (the lease is left expired, as after a crash).
        RunNotFound, CorruptCheckpoint, StaleCheckpoint, StoreBusy.
    """
    clock = clock or store.clock
    owner = owner or lease_owner_name()
    state = store.claim(run_id, owner, LEASE_TTL_S)
    released = False
    beat = Heartbeat(store, run_id, owner)  # started at the first service call, one per execution
    run = _Execution(store, key, run_id, clock, owner, interrupt, on_progress, authorize, beat)
    try:
        if state.status != "executing":
            return state
        stopped = _recheck(store, state, key, authorize, owner, None)
        if stopped is not None:
            released = True
            return stopped
        try:
            faults = find_task(state.task_id, tickets).faults
        except TaskNotFound:  # a home ticket removed by hand: its writes are still owed, without faults
            faults = []
        world = open_world(world_at, clock, faults=faults, faults_seen=state.faults_seen, actor=run_id)
        if _lapsed(store, state, clock, owner, world):
            released = True
            return state
        own = {o.operation_id for o in state.operations}  # a run's own operations never count against it
        for op in state.operations:
            if op.status == "done":
                continue
            stopped = _execute_operation(run, state, op, world, own)
            if stopped is not None:
                released = True
                return stopped
        state.status = "done"
        state.log("finished", "every operation done", at=clock.now())
        store.save(state, lease_owner=owner)  # the lease is given back in the same save
        released = True
        return state
    finally:
        beat.stop()  # before the lease is given back or expired: no renewal lands after it
        if run.crashed:
            store.expire_lease(run_id)
        elif not released:
            store.release_lease(run_id, owner)


@dataclass
class _Execution:
    """What one :func:`execute` call holds while it works through the operations; ``crashed``
    is set just before a simulated crash is raised, so the lease is left expired."""

    store: ExecutorStore
    key: bytes
    run_id: str
    clock: Clock
    owner: str
    interrupt: Interrupt | None
    on_progress: OnProgress | None
    authorize: Authorize | None
    beat: Heartbeat
    crashed: bool = False


def _execute_operation(run: _Execution, state: TaskState, op: Operation, world: World, own: set[str]) -> TaskState | None:
    """Steps 2 to 6 for one operation that is not done: the run's state to return when the
    execution stops at it (refused, handed to a person), ``None`` to go on to the next."""
    store, owner, clock = run.store, run.owner, run.clock
    if op.status == "failed":
        return _hand_over(store, state, f"operation {op.operation_id} had failed", owner)
    stopped = _recheck(store, state, run.key, run.authorize, owner, op)
    if stopped is not None:
        return stopped
    found = _reconcile(state, op, world)
    if found == "other":
        return _hand_over(store, state, f"{action_short(op.action)}: {op.error}", owner)
    if found == "done":
        state.log("reconciled", f"{op.action.type} {op.operation_id}: found in the register, not called again", at=clock.now())
        store.save(state, lease_owner=owner, lease_ttl_s=LEASE_TTL_S)
        _progress(run.on_progress, state, op)
        return None
    if op.status != "pending":
        op.status = "pending"
        state.log("pending", f"{op.action.type} {op.operation_id}: about to write", at=clock.now())
    if run.interrupt == "before-write":  # the lesson's crash comes before the attempt is counted
        store.save(state, lease_owner=owner, lease_ttl_s=LEASE_TTL_S)
        run.crashed = True
        raise SimulatedCrash(run.run_id, "before-write", op)
    if op.calls >= MAX_CALLS:  # every attempt ended its process: the limit holds across crashes
        op.status = "failed"
        op.error = f"gave up after {op.calls} call(s): the process ended during each call, and the register has no write"
        return _hand_over(store, state, f"{action_short(op.action)}: {op.error}", owner)
    if not _call(store, state, op, world, clock, owner, own, run.beat):
        return _hand_over(store, state, f"{action_short(op.action)}: {op.error}", owner)
    crash_point("write")
    if run.interrupt == "after-write":
        run.crashed = True
        raise SimulatedCrash(run.run_id, "after-write", op)
    state.log("done", f"{op.action.type} {op.operation_id}: done in {op.calls} call(s)", at=clock.now(), result=op.result)
    store.save(state, lease_owner=owner, lease_ttl_s=LEASE_TTL_S)
    _progress(run.on_progress, state, op)
    return None


def _progress(on_progress: OnProgress | None, state: TaskState, op: Operation) -> None:
    if on_progress is not None:
        on_progress(state, op)


def _reconcile(state: TaskState, op: Operation, world: World) -> Literal["done", "other", "absent"]:
    """Look a pending operation up in the register: ``done`` (marked done with the recorded
    result: the service already did it), ``absent`` (not there, or the operation is not
    pending), or ``other``: an entry under this ID records a different write (another
    service, order, amount, payment, item or recipient), so it is not this operation; ``op`` is
    marked failed with a sentence naming both, and the caller hands the run to a person."""
    if op.status != "pending":
        return "absent"
    entry = world.lookup_operation(op.operation_id)
    if entry is None:
        return "absent"
    recorded = (str(entry["service"]), dict(entry["args"]))
    planned = planned_call(op.action)
    if not same_call(recorded, planned):
        op.status = "failed"
        op.error = (
            f"the register's entry for operation {op.operation_id} is not this operation: it records "
            f"{describe_call(recorded)} by {entry['actor']} at {entry['at']}, the approved write is "
            f"{describe_call(planned)}; nothing more written, check with the service what was paid"
        )
        return "other"
    op.status = "done"
    op.result = entry["result"]
    op.calls = max(op.calls, 1)  # the call was counted before it was made (a 0.1 checkpoint had not)
    return "done"


def started(state: TaskState, world: World | None = None) -> bool:
    """Whether the execution of ``state`` has started: a service call was attempted
    (:func:`core.ground.state.execution_started`), or, with ``world``, a pending operation is already
    in the register (a checkpoint of release 0.1.0 did not count a call before making it). An
    operation saved ``pending`` with no call attempted has not started anything."""
    if execution_started(state.operations):
        return True
    if world is None:
        return False
    return any(op.status == "pending" and world.lookup_operation(op.operation_id) is not None for op in state.operations)


def _lapsed(store: ExecutorStore, state: TaskState, clock: Clock, owner: str, world: World) -> bool:
    """Return an approval whose execution has not started (:func:`started`: no service call
    attempted, nothing in the register) by the policy's ``approval_valid_s`` to waiting (fails
    closed: the run needs a fresh decision), with the reason in the audit and the lease given
    back in the same save. A crash just before the write leaves an operation ``pending`` with
    no call: that is not a start. True when it lapsed."""
    a = state.approval
    if a is None or started(state, world):
        return False
    now = clock.now()
    limit = load_policy().approval_valid_s
    age = (now - a.at).total_seconds()
    if age <= limit:
        return False
    why = (
        f"the approval by {a.name} ({a.role}) at {iso(a.at)} lapsed: its execution had not started (no service "
        f"called) after {int(limit)} s (it was {int(age)} s old); nothing written, the run waits for a fresh decision"
    )
    state.approval = None
    state.operations = []
    state.status = "waiting_approval"
    state.log("approval_lapsed", why, at=now)
    store.save(
        state,
        lease_owner=owner,
        audit={
            "decision": "refused:expiry",
            "role": a.role,
            "name": a.name,
            "digest": a.digest,
            "at": iso(now),
            "detail": why,
            "run_uid": state.run_uid,
        },
    )
    return True


def _call(
    store: ExecutorStore,
    state: TaskState,
    op: Operation,
    world: World,
    clock: Clock,
    owner: str,
    own: set[str],
    beat: Heartbeat,
) -> bool:
    """Call the service for ``op`` with retries, handing it the step's preconditions as the
    expected state; True when done, False when failed (a refusal, or a precondition
    that no longer holds).

    Each attempt is counted and saved (with ``op`` pending and the lease renewed) **before** the
    call, so a call that ends the process still counts and :data:`MAX_CALLS` holds across
    crashes; the lease is renewed by ``beat`` (the execution's :class:`Heartbeat`, started here at
    its first call) while the call runs. ``own``: the run's own operation IDs. A failed call's
    ``retry`` event is saved with the next attempt's count (one save per call).
    """
    expect = state.proposal.preconditions_of(op.index) if state.proposal else []
    while True:
        op.calls += 1
        store.save(state, lease_owner=owner, lease_ttl_s=LEASE_TTL_S)  # the checkpoint before the write, and the lease renewed
        crash_point("call")
        try:
            beat.start()
            op.result = world.call_service(op.operation_id, op.action, expect=expect, own=own)
            op.status = "done"
            op.error = None
            return True
        except ServiceRefused as exc:
            op.status = "failed"
            op.error = str(exc)
            if isinstance(exc, PreconditionFailed):
                store.append_audit(
                    {
                        "run_id": state.run_id,
                        "decision": "refused:precondition",
                        "role": "executor",
                        "name": owner,
                        "digest": state.proposal.digest if state.proposal else "",
                        "at": iso(clock.now()),
                        "detail": f"{action_short(op.action)}: {exc}",
                        "run_uid": state.run_uid,
                    }
                )
            return False
        except TransientServiceError as exc:
            op.error = str(exc)
            state.log("retry", f"{op.action.type} {op.operation_id}: call {op.calls} failed ({exc})", at=clock.now())
            if op.calls >= MAX_CALLS:
                op.status = "failed"
                op.error = f"gave up after {op.calls} call(s): {exc}"
                return False
            clock.sleep(BACKOFF_S[min(op.calls - 1, len(BACKOFF_S) - 1)])
