"""The store contract: what the core calls on a checkpoint store, whatever holds it.

:class:`Store` is a ``typing.Protocol``, grouped as the core uses it:

- **runs**: :meth:`~Store.save` (a compare-and-set on ``version``, an audit row in the same
  transaction, the executor's lease folded in), :meth:`~Store.load`, :meth:`~Store.latest`,
  :meth:`~Store.runs_of_task`, :meth:`~Store.run_ids`, :meth:`~Store.exists`,
  :meth:`~Store.events`, :meth:`~Store.delete`, :meth:`~Store.reset`;
- **queue**: :meth:`~Store.page` (keyset pages over the queue's columns), :meth:`~Store.counts`,
  :meth:`~Store.summary`;
- **leases**: :meth:`~Store.claim`, :meth:`~Store.acquire_lease`, :meth:`~Store.renew_lease`,
  :meth:`~Store.release_lease`, :meth:`~Store.expire_lease`, :meth:`~Store.clear_dead_lease`,
  under the rules of :func:`lease_held_by_other` (one holder; taken over only when expired by
  the clock or when its holder is a process of this host that no longer exists);
- **audit** (:class:`AuditLog`, its read side :class:`AuditReader`): :meth:`~AuditLog.append_audit`, :meth:`~AuditLog.audit`,
  :meth:`~AuditLog.audit_rows`, :meth:`~AuditLog.chain_tip`, :meth:`~AuditLog.find_audit_row`,
  :meth:`~AuditLog.later_ending`, :meth:`~AuditLog.audit_triggers` and
  :meth:`~AuditLog.signed_approvals`, which :func:`core.engine.auditchain.verify_audit` reads to verify
  the chain. The hashing of a row (:func:`core.contract.audit.row_hash`) is the core's; a back-end
  stores the columns of :data:`core.contract.audit.COLUMNS` (``binds`` included) and keeps the table append-only;
- **marks**: :meth:`~Store.run_marks`, :meth:`~Store.put_marks`: who claimed a run,
  to whom it was handed, until when it is set aside (a run's marks go with it when it is deleted);
- **events**: :meth:`~Store.queue_events`, :meth:`~Store.record_lapse`: what a watcher
  tells people, written by the store in the transaction of the write that makes each;
- **housekeeping**: :meth:`~Store.has_history`, :meth:`~Store.approvals_in_flight`,
  :attr:`~Store.repairs` (what opening it repaired, for ``resolver doctor``),
  :meth:`~Store.backup` (a consistent copy), :meth:`~Store.scrubbed` (deletes that leave nothing
  readable behind, ``resolver prune``), :meth:`~Store.end_thread` (a worker thread that is
  about to end gives back what it holds), and for the lesson's exercises only
  :meth:`~Store.overwrite_checkpoint` (a checkpoint as a damaged disk would leave it).

**The queue's columns are part of every save**: a store is made with the function
that gives them (:data:`Summarize`, :func:`core.api.queue.queue_columns`) and calls it inside
:meth:`~Store.save`, so a run saved by any caller (the lesson's Python API included, whose
``store.save(state)`` keeps its one argument) shows its total, role and actions in the queue and
in an approver's "mine". The store itself knows no policy: it is handed the function.

The value types (:class:`RunSummary`, :class:`Lease`, :class:`QueueColumns`), the sorts
(:data:`SORTS`), the page size and the crash points of the crash tests live here with the
contract. The back-ends are SQLite (:mod:`core.stores.sqlite`) and PostgreSQL
(:mod:`core.stores.postgres`), sharing what is not SQL (:mod:`core.stores.common`);
:mod:`core.stores` picks one in one place. The conformance suite (``tests/conformance/``) runs every contract test against
every back-end.

Errors a back-end raises are the core's (:mod:`core.ground.errors`): :class:`~core.ground.errors.RunNotFound`,
:class:`~core.ground.errors.StaleCheckpoint` (and :class:`RunExists`), :class:`~core.ground.errors.LeaseHeld`,
:class:`~core.ground.errors.CorruptCheckpoint`, :class:`~core.ground.errors.UnsupportedSchemaVersion`,
:class:`~core.ground.errors.StoreBusy`, :class:`UnsupportedStoreFormat`, and a
:class:`~core.ground.errors.ResolverError` with one sentence for anything else the back-end meets.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from core.ground.clock import Clock, parse_time, supported
from core.ground.errors import LeaseHeld, ResolverError, StaleCheckpoint

if TYPE_CHECKING:
    from core.ground.state import RunView, TaskState

__all__ = [
    "PAGE_SIZE",
    "SORTS",
    "AuditLog",
    "AuditReader",
    "AuditRow",
    "CallStore",
    "CrashHook",
    "EventStore",
    "Housekeeping",
    "JournalKey",
    "Lease",
    "Leases",
    "MarkStore",
    "QueueChanges",
    "QueueColumns",
    "QueueReader",
    "RunExists",
    "RunStore",
    "RunSummary",
    "Store",
    "StoreNotEmpty",
    "StoreRows",
    "Summarize",
    "UnsupportedStoreFormat",
    "blank_columns",
    "crash_point",
    "holder_alive",
    "lease_held_by_other",
    "lease_owner_name",
    "lease_unexpired",
    "set_crash_hook",
]


class RunExists(StaleCheckpoint):
    """A new run's ID was saved by another process first (two ``run``s of one ticket at once)."""


class StoreNotEmpty(ResolverError):
    """A copy's target already holds runs, audit rows, approvers or register entries: a store is
    copied only into an empty one, nothing is merged."""


class UnsupportedStoreFormat(ResolverError):
    """The store holds a layout this resolver cannot read or migrate (a newer release's, another
    application's, or one lost in a used home)."""


PAGE_SIZE = 200
"""Rows per page for :meth:`Store.page`."""

SORTS: dict[str, tuple[str, bool]] = {
    "age": ("updated_ts", True),
    "updated": ("updated_ts", False),
    "created": ("created_ts", False),
    "amount": ("amount_cents", False),
    "role": ("role_rank", False),
}
"""Queue sorts: name -> (column, ascending). ``age`` is oldest change first (the waiting queue's
default), ``updated`` newest first (every other status), ``created`` newest run first,
``amount`` largest total CAD first, ``role`` highest role needed first. Ties go by run ID in the
same direction, so a cursor ``(key, run_id)`` names one place in the order."""

CrashHook = Callable[[str], None]
"""A crash test's hook: called with the point's kind (``save``, ``row``, ``call``, ``write``,
``step`` or ``answer``) at each crash point; it may end the process there."""

_crash_hook: CrashHook | None = None

JournalKey = Callable[[Callable[[], int]], bytes]
"""Where a SQLite store gets its home's approval key, from which the key that seals its journal
of model calls is derived (:func:`core.stores.common.journal_key`): called with a function that
counts the approvals in flight (:func:`core.contract.approval_key.load_key`'s ``in_flight``, asked only when
the key must be made), it returns the key's bytes or raises ApprovalKeyError. A team store needs
none: its database stamps each journal row with the user that wrote it."""


def set_crash_hook(hook: CrashHook | None) -> None:
    """Install ``hook`` as this process's crash hook (None removes it).

        Only the test suite calls this (no test hook in the product): its entry point
        ``tests/crash_entry.py``, which the package does not install, arms a kill at the point named
        by ``RESOLVER_KILL_AT`` (``save:N``, ``row:N``, ``call:N``, ``write:N`` or ``step:N``: right
        after the N-th checkpoint save, row write inside a save (before its commit), executor attempt
        (counted and saved, the service not yet called), executor write, loop step or live model
    answer (journaled, the step not yet taken)). The product
        reads no environment variable for it; ``--interrupt`` is the lesson's documented crash."""
    global _crash_hook
    _crash_hook = hook


def crash_point(kind: str) -> None:
    """A point where a crash test may end this process (see :func:`set_crash_hook`); nothing
    happens unless the test suite installed a hook."""
    hook = _crash_hook
    if hook is not None:
        hook(kind)


class QueueColumns(TypedDict):
    """The columns of one run in the queue.

    ``customer``: the customer's name (the ID when unknown); ``total_amount``: CAD as a decimal
    string (``"119.00"``, ``""`` without actions); ``amount_cents``: the same total in cents (0
    without actions), for sorting; ``required_role``: the role the proposal needs under the
    current policy (``""`` without actions); ``role_rank``: 0 agent, 1 team lead, 2 grace (-1
    without actions), for sorting; ``actions``: the actions, short (``request_refund LK-507862``).
    """

    customer: str
    total_amount: str
    amount_cents: int
    required_role: str
    role_rank: int
    actions: str


def blank_columns(state: TaskState) -> QueueColumns:
    """Columns without policy or customer data: what a run without a readable proposal shows (a
    test's store may be handed it; the product's stores are handed :func:`core.api.queue.queue_columns`)."""
    return QueueColumns(customer=state.customer_id, total_amount="", amount_cents=0, required_role="", role_rank=-1, actions="")


Summarize = Callable[["TaskState"], QueueColumns]
"""The function that gives the queue's columns of a state (:func:`core.api.queue.queue_columns`),
handed to every store when it is made and called inside every save."""


@dataclass(frozen=True)
class RunSummary:
    """One row of the queue, read from indexed columns only (no state is parsed).

    ``total_amount`` is CAD as a decimal string; ``updated_at`` ISO 8601 with offset;
    ``state_ok`` is False once the row is known to be corrupt (its header is not JSON, or a load
    failed). ``updated_ts`` / ``created_ts`` (seconds since the epoch), ``amount_cents`` and
    ``role_rank`` are the sort keys (see :data:`SORTS` and :meth:`cursor`).
    """

    run_id: str
    task_id: str
    variant: str
    model: str
    status: str
    created_at: str
    updated_at: str
    version: int
    customer: str
    order_id: str
    total_amount: str
    required_role: str
    actions: str
    lease_owner: str | None
    lease_expires: str | None
    state_ok: bool = True
    updated_ts: float = 0.0
    created_ts: float = 0.0
    amount_cents: int = 0
    role_rank: int = -1

    def cursor(self, sort: str) -> tuple[Any, str]:
        """The keyset cursor after this row for ``sort``: ``(sort key, run_id)``.

        Raises KeyError for a sort not in :data:`SORTS`."""
        return (getattr(self, SORTS[sort][0]), self.run_id)


@dataclass(frozen=True)
class Lease:
    """Who holds a run's lease and until when."""

    owner: str
    expires: datetime


def lease_owner_name(label: str = "resolver") -> str:
    """A lease owner that names the process: ``label@host:pid:token``."""
    import socket  # lazy: a listing never takes a lease, so it never pays for these imports
    import uuid  # lazy: as above

    return f"{label}@{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_alive(owner: str) -> bool:
    """False when ``owner`` is a process on this host that no longer exists (a crash)."""
    try:
        where = owner.rsplit("@", 1)[1]
        host, pid, _token = where.split(":")
    except (IndexError, ValueError):
        return True
    import socket  # lazy: only a lease's holder is asked after, never by a listing

    if host != socket.gethostname():
        return True
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError):
        return True
    return True


def lease_unexpired(until: str, now: datetime) -> bool:
    """Whether the lease time ``until`` (ISO 8601, from the runs table) is after ``now``. A time
    that cannot be read or is outside the supported range counts as unexpired: the
    lease is then held for as long as its holder lives, never taken from a live executor."""
    try:
        return supported(parse_time(until)) > now
    except ValueError:
        return True


def lease_held_by_other(run_id: str, holder: str | None, until: str | None, owner: str, now: datetime) -> LeaseHeld | None:
    """The lease rule every back-end applies: the error to raise when the run's lease,
    held by ``holder`` until ``until`` (ISO 8601), stops ``owner`` from taking it at ``now``; None
    when ``owner`` may take it (no holder, ``owner`` itself, expired by the clock, or a holder
    that is a process of this host that no longer exists)."""
    if holder and holder != owner and until and lease_unexpired(until, now) and holder_alive(holder):
        return LeaseHeld(
            f"Run {run_id} is being executed by {holder.split(':')[0]} (lease until {until}); "
            "wait for it to finish or for the lease to expire."
        )
    return None


AuditRow = dict[str, Any]
"""One audit row: the values of :data:`core.contract.audit.COLUMNS` by name (``id``, ``run_id``,
``decision``, ``role``, ``name``, ``digest``, ``at`` (ISO 8601), ``detail``, ``run_uid``,
``prev`` (the previous row's hash, None for a row from before the chain), ``sig``)."""


class AuditReader(Protocol):
    """The read side of a store's audit: what :func:`core.engine.auditchain.verify_audit` and the shop
    home's checks (:mod:`core.engine.signing`) read. A store is one; so is a store's file opened
    read-only by ``resolver doctor`` (:class:`core.stores.sqlite.audit.SqliteAudit`)."""

    def audit_rows(self) -> list[AuditRow]:
        """Every audit row, oldest first, with every column of :data:`core.contract.audit.COLUMNS`."""
        ...

    def chain_tip(self) -> tuple[str, int]:
        """``(hash of the newest row, number of rows)``; ``(core.contract.audit.GENESIS, 0)`` when empty."""
        ...

    def find_audit_row(self, run_id: str, decision: str, sig: str) -> AuditRow | None:
        """The newest row of ``run_id`` recording ``decision`` with signature ``sig`` (hex), or None."""
        ...

    def later_ending(self, run_uid: str, after_id: int) -> AuditRow | None:
        """The first row of the run ``run_uid`` after the row ``after_id`` that ends the approval
        recorded there (:func:`core.contract.audit.ends_approval`: a later decision, a refresh, any
        ``refused...`` row), or None."""
        ...

    def audit_triggers(self) -> set[str]:
        """The names of the guards that keep the audit append-only and are in place now (of
        :data:`core.contract.audit.TRIGGERS`); :func:`core.engine.auditchain.verify_audit` reports any
        missing one."""
        ...

    def signed_approvals(self, prefix: str) -> list[tuple[str, str]]:
        """``(run_id, header JSON)`` of every run whose saved approval's signature starts with
        ``prefix`` (``ed25519:``), for the check that each has its audit row."""
        ...


class AuditLog(AuditReader, Protocol):
    """The append-only, hash-chained audit of a store, as the core reads and appends it.

    A back-end keeps the rows in the order appended (``id`` rising from 1), refuses any edit or
    delete of a row (SQLite: triggers), and chains each appended row to the one before it
    (:func:`core.contract.audit.row_hash`). Reads never raise for an empty audit."""

    def append_audit(self, audit: dict[str, Any]) -> None:
        """Append one audit row outside any save (a refusal, a registry change), chained to the
        row before it. ``audit`` holds ``run_id``, ``decision``, ``role``, ``name``, ``digest``,
        ``at``, and optionally ``detail``, ``run_uid`` and a signed row's ``prev`` and ``sig``.

        Raises:
            core.contract.audit.AuditMoved: a signed ``prev`` is no longer the newest row's hash.
            StoreBusy, ReadOnlyFile: the store could not be written; nothing was.
        """
        ...

    def audit(self, run_id: str | None = None, *, name: str | None = None) -> list[dict[str, Any]]:
        """Rows of the audit (oldest first), of one run or all, and with ``name`` one approver's:
        ``{"run_id", "decision", "role", "name", "digest", "at", "detail", "run_uid"}``."""
        ...


class RunStore(Protocol):
    """The runs of a home: save with its compare-and-set, load, latest, a ticket's runs, delete, reset.

    ``path``: where the store lives (SQLite: ``runs.sqlite``), for sentences and the backup;
    ``clock``: stamps ``updated_at`` at every save and decides leases' expiry; ``summarize``: gives
    the queue's columns of a state, called inside every save.
    """

    path: Path
    clock: Clock
    summarize: Summarize

    def save(
        self,
        state: TaskState,
        *,
        audit: dict[str, Any] | None = None,
        lease_owner: str | None = None,
        lease_ttl_s: float | None = None,
    ) -> TaskState:
        """Write ``state`` as its run's checkpoint with its queue columns (:attr:`summarize`),
        stamping ``updated_at`` from the clock; a compare-and-set on ``state.version`` (0 for a
        new run), which becomes ``version + 1`` in ``state``. ``audit`` is appended in the same
        transaction (as :meth:`append_audit`). With ``lease_owner`` the save also requires that
        owner's lease and renews it for ``lease_ttl_s`` seconds (releases it when None).

        Raises:
            RunExists: a new run whose ID another process saved first.
            StaleCheckpoint: someone saved the run since this copy was read.
            LeaseHeld: ``lease_owner`` no longer holds the lease.
            core.contract.audit.AuditMoved: a signed decision's ``prev`` moved.
            core.ground.state.PartialState: ``state`` is a read-side :meth:`load_view` (nothing written).
            StoreBusy, ReadOnlyFile: nothing was written.
        """
        ...

    def load(self, run_id: str) -> TaskState:
        """The run's checkpoint, migrated to the current schema.

        Raises:
            RunNotFound, CorruptCheckpoint, UnsupportedSchemaVersion.
        """
        ...

    def load_view(self, run_id: str) -> RunView:
        """The run as the read side shows it: header, proposal, every evidence
        and event and the opening messages (:data:`core.ground.state.OPENING_MESSAGES`), never the
        message history; the proposal's digest is the whole load's. ``save`` refuses it
        (:class:`core.ground.state.PartialState`): only resume and the executor load the whole state.

        Raises:
            RunNotFound, CorruptCheckpoint, UnsupportedSchemaVersion.
        """
        ...

    def latest(self, task_id: str) -> TaskState | None:
        """The most recently created run of ``task_id``, loaded; None if the ticket has none."""
        ...

    def runs_of_task(self, task_id: str) -> list[RunSummary]:
        """Every run of one ticket, oldest first."""
        ...

    def run_ids(self, prefix: str) -> list[str]:
        """Run IDs starting with ``prefix`` (for numbering new runs)."""
        ...

    def exists(self, run_id: str) -> bool:
        """True when a run ``run_id`` is saved (corrupt or not)."""
        ...

    def events(self, run_id: str) -> list[dict[str, Any]]:
        """The run's trace, in order: ``{"seq", "at" (ISO 8601), "kind", "message", "data"}``;
        a damaged event reads as kind ``corrupt``. Raises RunNotFound."""
        ...

    def delete(self, run_id: str, audit: dict[str, Any] | None = None) -> None:
        """Delete one run (the audit keeps its rows), with ``audit`` appended in the same
        transaction. Raises RunNotFound."""
        ...

    def reset(self, audit: Callable[[list[str]], dict[str, Any]] | None = None) -> int:
        """Delete every run (the audit is kept); ``audit``, given the deleted run IDs, makes the
        audit row appended in the same transaction under run ID ``*``. Returns the count."""
        ...


class QueueReader(Protocol):
    """The queue's reads: a page of runs by status and filter, the counts by status, one run's summary."""

    def page(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: RunSummary | tuple[Any, str] | None = None,
        limit: int = PAGE_SIZE,
        max_role_rank: int | None = None,
    ) -> list[RunSummary]:
        """One page of the queue, keyset-paginated: ``status`` (None: all), ``search`` (a
        case-insensitive substring of ticket, order, customer or run ID), ``sort`` (a name of
        :data:`SORTS`; default ``age`` for ``waiting_approval``, else ``updated``), ``after``
        (the previous page's last row or its cursor), at most ``limit`` rows, ``max_role_rank``
        (only runs with a proposal whose ``role_rank`` is 0 to it and a readable checkpoint:
        an approver's "mine"). Raises ResolverError for an unknown sort."""
        ...

    def counts(self) -> dict[str, int]:
        """Runs per status (absent when none); runs flagged corrupt count under ``"corrupt"``
        instead of their status."""
        ...

    def summary(self, run_id: str) -> RunSummary:
        """The queue row of one run. Raises RunNotFound."""
        ...


class Leases(Protocol):
    """Who works a run now: a lease is claimed, renewed and released by its owner, and taken over
    once it expires (seconds of ``ttl_s``)."""

    def claim(self, run_id: str, owner: str, ttl_s: float = 60.0) -> TaskState:
        """Take the run's lease for ``ttl_s`` seconds and load it, atomically (the executor's
        start). Raises LeaseHeld, RunNotFound, CorruptCheckpoint (the lease given back)."""
        ...

    def acquire_lease(self, run_id: str, owner: str, ttl_s: float = 60.0) -> Lease:
        """Take the run's lease for ``ttl_s`` seconds. Raises LeaseHeld, RunNotFound."""
        ...

    def renew_lease(self, run_id: str, owner: str, ttl_s: float) -> bool:
        """Extend ``owner``'s lease to now + ``ttl_s`` seconds; False when it no longer holds it."""
        ...

    def release_lease(self, run_id: str, owner: str) -> None:
        """Give the lease back if ``owner`` still holds it."""
        ...

    def expire_lease(self, run_id: str) -> None:
        """Mark the run's lease as expired (a simulated crash ends its process this way)."""
        ...

    def clear_dead_lease(self, run_id: str) -> bool:
        """Remove a lease whose holder is gone (expired, or a dead process of this host); True
        if one was removed. A live holder's lease is left alone."""
        ...


class CallStore(Protocol):
    """The journal of live model calls as a back-end stores it."""

    # the journal of live model calls: written through, each its own transaction. Rows are
    # keyed by (run, step, attempt): an attempt is written before it is sent, then answered with
    # the raw answer or a failure record ({"error": {"status", "body"}}). Only the run's runner
    # writes them, and every read checks it (core.stores.common.ModelCallJournal): a SQLite row
    # carries a seal made with the home's key, a team store's row the database user that wrote
    # it (stamped by the database, migration 17). A row that fails the check is never taken for
    # an answer nor counted as paid: a planted answer would become the runner's proposal.

    def journal_attempt(self, run_id: str, step: int, route: str) -> int:
        """Record, committed, that the next attempt at ``step``'s model call (``route``, the run's
        model route) is about to be sent; returns its number (1, 2, ... per step).

        Raises ResolverError (one sentence, nothing written) when this store may not write the
        journal: a SQLite store opened without its home's key; a team store's user that is not
        the runner's (a refusal of the database, as :class:`~core.ground.errors.ApprovalRefused` or
        :class:`~core.ground.errors.DatabaseRefused`)."""
        ...

    def journal_answer(self, run_id: str, step: int, attempt: int, answer: str, tokens_in: int, tokens_out: int) -> None:
        """Save, committed, what an attempt came back with, before the runner acts on it.

        ``answer`` is the provider's raw JSON text (a chat completion), or a **failure record**
        (:func:`core.models.model.failure`): ``{"error": {"status": HTTP status, or 0 for a request that
        never left, "body": the first 2,000 characters the server said}}``, for an attempt the
        server refused (HTTP 4xx or 5xx: not paid, tokens 0) or answered with HTTP 200 in a shape
        that cannot be used (paid: its usage in tokens as the answer reported it, 0 when it did
        not). :func:`core.models.model.is_failure` tells the two apart: a chat completion never has a
        top-level ``error``. ``tokens_in`` and ``tokens_out`` are the answer's usage in tokens.
        Raises ResolverError for an attempt never recorded or a store that may not write it
        (:meth:`journal_attempt`), JournalUntrusted when the attempt's row was changed since its
        runner wrote it."""
        ...

    def journal_answered(self, run_id: str, step: int) -> str | None:
        """The raw answer of ``step``'s latest answered attempt, else None (resume uses it instead
        of a second call). It may be a failure record (:meth:`journal_answer`): the caller checks
        :func:`core.models.model.is_failure` and asks again rather than act on it.

        Raises:
            JournalUntrusted: a row of the step was not written by the run's runner (one
                sentence naming the run, step and attempt): the resume stops before any call.
            ResolverError: the store cannot check its rows (a SQLite store opened without its
                home's key).
        """
        ...

    def model_calls(self, run_id: str) -> list[dict[str, Any]]:
        """The run's journal by step and attempt: ``{"step", "attempt", "route", "sent_at",
        "answer", "tokens_in", "tokens_out", "answered_at", "trusted", "why"}``; ``answer`` is
        None while the attempt is in flight (sent, never answered: a kill or a timeout, counted
        as paid), else the raw answer or a failure record (:meth:`journal_answer`); ``trusted``
        is True for a row the run's runner wrote, False for one that failed the check (``why``
        says how, one clause), None where the store cannot tell (a SQLite store opened without
        its home's key). ``delete``, ``reset`` and so ``prune`` remove a run's journal with it."""
        ...

    def journal_problems(self) -> list[dict[str, Any]]:
        """Every journal row of the store that its run's runner did not write, by run, step and
        attempt: ``{"run_id", "step", "attempt", "why"}`` (``resolver doctor`` says one FAIL line
        per run). Raises ResolverError when the store cannot check its rows."""
        ...


class MarkStore(Protocol):
    """The marks of runs (claim, hand-over, snooze; :mod:`core.stores.marks`)."""

    def run_marks(self, run_ids: list[str] | None = None) -> dict[str, dict[str, Any]]:
        """The marks rows of ``run_ids`` (None: every marked run) by run ID, each a dict of
        :data:`core.stores.marks.MARK_COLUMNS`; an unmarked run is absent."""
        ...

    def put_marks(self, row: dict[str, Any], audit: dict[str, Any], *, version: int) -> int:
        """Write one run's marks ``row``, a compare-and-set on ``version`` (0: no row yet), with
        ``audit`` appended in the same transaction; returns the new version.

        Raises:
            StaleCheckpoint: the marks changed since ``version`` was read; nothing was written.
            core.contract.audit.AuditMoved: a signed row's ``prev`` moved; nothing was written.
        """
        ...


class EventStore(Protocol):
    """The queue's events (:mod:`core.stores.events`) and the lapses written among them."""

    def queue_events(self, after: int, limit: int = 500) -> list[dict[str, Any]]:
        """Up to ``limit`` events with an ID above ``after``, lowest ID first, each a dict of
        :data:`core.stores.events.EVENT_COLUMNS` (written by the store's triggers in the
        transaction of the write that made each)."""
        ...

    def lapse_times(self, run_ids: list[str]) -> dict[str, list[str]]:
        """The ``at`` of every ``lapse`` event of ``run_ids``, by run ID (absent: none), in one
        read (so a read of the waiting queue loads no run whose lapse is written)."""
        ...

    def record_lapse(self, run_id: str, digest: str, at: str, required_role: str | None) -> bool:
        """Write the ``lapse`` event of one request (run and ``digest``) unless written already
        (a compare-and-set on a unique index); True when this call wrote it."""
        ...


class Housekeeping(Protocol):
    """What opening, backing up and scrubbing a store need, and what it repaired.

    ``repairs``: sentences about what opening the store repaired, for ``resolver doctor``;
    ``repaired_triggers``: the audit's guards found missing and made again when it opened
    (``resolver audit verify`` reports them).
    """

    repairs: list[str]
    repaired_triggers: list[str]

    def has_history(self) -> bool:
        """True when the store holds any run or audit row (the home has been used)."""
        ...

    def approvals_in_flight(self) -> int:
        """Runs ``executing`` whose approval this home signed (an ``approve`` audit row)."""
        ...

    def backup(self, target: Path) -> None:
        """Write a consistent copy of the whole store to the new file ``target`` (mode 0600),
        while other processes go on using it. Raises ResolverError with one sentence."""
        ...

    def overwrite_checkpoint(self, run_id: str, change: Callable[[str], str]) -> None:
        """Replace the stored checkpoint text of ``run_id`` (JSON) by ``change(text)``, as a
        damaged disk or an older release would have left it: only the lesson's exercises (a cut
        JSON, a schema-1 state) and tests call this. Raises RunNotFound."""
        ...

    def scrubbed(self, work: Callable[[], object]) -> None:
        """Run ``work`` (deletes through this store, ``resolver prune``) so that what it deletes
        is overwritten, not left readable in free space or a log."""
        ...

    def end_thread(self) -> None:
        """The calling thread is about to end: give back what the store holds for it (SQLite:
        its connection). The store stays usable from every other thread."""
        ...


class Store(RunStore, QueueReader, Leases, CallStore, MarkStore, EventStore, Housekeeping, AuditLog, Protocol):
    """A checkpoint store: every part of one home's storage, as the narrow protocols above compose it.

    A back-end implements the whole of it (the conformance suite in ``tests/conformance/`` runs
    every contract test against each back-end); each consumer is typed against the narrow part
    it uses, so what a module needs of storage is read from its signature.
    """


class StoreRows(Protocol):
    """Every row of a home's store, table by table: what ``resolver store copy`` reads from one
    store and writes into another, whatever back-ends they are. A back-end
    opens it on a place (:func:`core.stores.open_rows`: a SQLite home folder holding
    ``runs.sqlite``, ``larkfield.sqlite`` and ``approvers.sqlite``, or a PostgreSQL URL).

    The parts and their tables are :data:`core.stores.common.COPY_PARTS` (``runs``, ``audit``,
    ``events``, ``registry``, ``world``), the columns of each table :func:`core.stores.common.copy_columns`:
    the ones both back-ends keep, so a row read from one is written into the other unchanged
    (``state_ok`` read as 0 or 1 on both). The audit's rows are copied verbatim, ``id`` and
    ``prev`` included, so the hash chain is the same chain; the register's ``seq`` numbers too.

    Attributes:
        label: the place for a sentence (a folder, or the database without its password).
    """

    label: str

    def has_part(self, part: str) -> bool:
        """True when the place holds ``part`` at all (SQLite: its file exists; PostgreSQL: the
        world was built, the registry made; ``runs`` and ``audit`` once the store exists)."""
        ...

    def row_counts(self) -> dict[str, int]:
        """Rows per table of every part the place holds (a part it lacks counts 0), read
        without changing anything."""
        ...

    def export_rows(self, part: str) -> Iterator[tuple[str, tuple[str, ...], list[tuple[Any, ...]]]]:
        """The rows of ``part``, table by table, in batches of at most
        :data:`core.stores.common.COPY_BATCH` rows: ``(table, columns, rows)``, each table in the
        order its rows were written (:func:`core.stores.common.copy_order`), read in one
        consistent snapshot of the part. Nothing when the place lacks the part.

        Raises: ResolverError (one sentence) when the place cannot be read; KeyError for an
        unknown part."""
        ...

    def import_rows(self, part: str, batches: Iterable[tuple[str, tuple[str, ...], list[tuple[Any, ...]]]]) -> dict[str, int]:
        """Write ``batches`` (as :meth:`export_rows` yields them) as ``part``'s rows in one
        transaction, making the part first if the place lacks it; the world's tables are
        emptied first (a built world holds ``data/``'s rows). Returns rows written per table.

        Raises:
            StoreNotEmpty: the part already holds rows of a table in
                :data:`core.stores.common.GUARDED`; nothing was written.
            ResolverError: a batch of another table or layout, or the place cannot be written
                (one sentence); the part's transaction is rolled back.
        """
        ...

    def copied(self) -> None:
        """Called once at the end of a copy into this place: a team store tells its listeners to
        read the whole queue again (its :meth:`import_rows` sends no notification per
        run); a SQLite store does nothing (its readers poll)."""

    def recorded_kind(self) -> str | None:
        """The kind of home (``practice`` or ``shop``) the store records of itself, or None
        where it records none (a SQLite store: its folder's ``home.json`` says)."""

    def db_users(self) -> tuple[dict[str, str], str | None]:
        """Role separation as the store records it: approver's name -> the database
        user the entry is mapped to (``approvers.db_user``, only the mapped ones), and the role
        that owns the tables once ``resolver store roles setup`` ran (else None). A SQLite
        store has neither: ``({}, None)``."""
        ...

    def map_db_users(self, mapping: dict[str, str]) -> int:
        """Write ``mapping`` (approver's name -> database user) into ``approvers.db_user``, as
        ``store copy`` carries it; returns the entries mapped. Grants are not made:
        ``resolver store roles setup`` does that. Raises ResolverError on a SQLite store, which
        has no database users."""
        ...


class QueueChanges(Protocol):
    """A listener of a store's live queue: PostgreSQL's ``LISTEN`` on the
    channel its triggers ``NOTIFY`` (:class:`core.stores.postgres.listen.QueueListener`). A
    SQLite store has none (:func:`core.stores.queue_listener` gives None): its readers poll."""

    def start(
        self,
        on_change: Callable[[list[tuple[str, str | None]]], object],
        on_state: Callable[[str], object] | None = None,
    ) -> None:
        """Listen in a thread of its own; returns at once. ``on_change`` gets each batch of
        ``(kind, run_id)`` changes (run_id None: many runs), ``on_state`` ``"lost"`` when the
        connection drops and ``"reconnected"`` when it listens again (what was sent in between
        is lost: read the queue again). Both are called on the listener's thread."""
        ...

    def listening(self, timeout: float | None = None) -> bool:
        """Wait up to ``timeout`` seconds until the first ``LISTEN`` is done; True when it is."""
        ...

    def stop(self) -> None:
        """Stop listening and wait for the thread to end."""
        ...

    @property
    def alive(self) -> bool:
        """True while the listener's thread runs."""
        ...


SHOP_PARTS = ("approvers.json", "audit.head", "approval.key", "clock.json")
"""The per-shop parts kept beside the tables: the owner's registry seal, the signed
audit head, the practice HMAC key and the trainer's clock, each under its file's name. The
home's kind is the fourth per-shop fact; a team store keeps it in ``store_meta``."""


class ShopParts(Protocol):
    """Where a home keeps its per-shop parts (:data:`SHOP_PARTS`), each an opaque byte string
    under its name. The SQLite back-end keeps them as the files they always were, in
    the home folder (:class:`core.stores.sqlite.files.FolderParts`: mode 0600, written
    atomically); the team store keeps them in its ``shop_parts`` table
    (:class:`core.stores.postgres.parts.PostgresParts`), so every machine pointed at it reads
    the same seal, head, key and clock. Opened by :func:`core.stores.open_shop_parts`."""

    def read(self, name: str) -> bytes | None:
        """The part ``name``, or None when it was never written (or was removed).
        Raises OSError (a folder in a file's place, no permission) or ResolverError (the store
        cannot be reached)."""
        ...

    def write(self, name: str, data: bytes) -> None:
        """Replace the part ``name`` by ``data``, all or nothing: a reader sees the old part or
        the new one. Raises OSError or ResolverError; nothing half-written is left."""
        ...

    def create(self, name: str, data: bytes) -> bytes:
        """Write ``data`` as ``name`` only if there is none yet, and return the part as it is
        stored then: two processes creating it at once both get the one that won. Raises
        OSError or ResolverError."""
        ...

    def remove(self, name: str) -> None:
        """Remove the part ``name`` (nothing when absent). Raises OSError or ResolverError."""
        ...

    def label(self, name: str) -> str:
        """Where the part ``name`` is, for a sentence: the file's path, or the team store's
        table and row."""
        ...
