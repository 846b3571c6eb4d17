"""The approvals queue of one home: its columns and the read side both faces use.

:func:`queue_columns` gives the queue's columns for one run. The store knows no policy and no
customer data: every store is made with :func:`queue_columns` as its
``summarize`` function (:func:`core.stores.open_store`; never optional, the lesson's
Python API hands it too), and the store writes the result beside each checkpoint, so a page of
the queue is read from indexed columns only.

:class:`ApprovalQueue` is the only module of ``core`` that the faces read through: a page of
the queue (status, search, sort, cursor), the counts per status, the detail of one run as a
:class:`~core.api.views.RunDetail` for one approver, its trace, the comparison of two runs, the
audit of decisions and the practice world's changes. Writes go through :class:`core.api.home.Home`.

Each call opens its own connection (the store's), so the app calls it from thread workers.
Every read of the checkpoint store by a face passes through :meth:`ApprovalQueue._rows`,
:meth:`ApprovalQueue.counts` and the few ``self._store`` calls below; nothing else in the faces
opens the store or the world.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import suppress
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from core.api.homekind import home_kind
from core.api.views import (
    RunDetail,
    ages_lines,
    approval_request,
    approved_vs_current,
    describe,
    diff_lines,
    proposal_record,
    standing,
    trace_lines,
    unreadable_detail,
)
from core.contract.audit import REGISTRY_PREFIX
from core.contract.store import PAGE_SIZE, QueueColumns, RunSummary, blank_columns
from core.contract.store import Store as CheckpointStore
from core.engine.approval import world_problem
from core.engine.policy import action_value, proposal_role, rank
from core.engine.preconditions import drift, drift_lines, evidence_time, look
from core.engine.rulebook import MARK_ACTIONS, Approver, may_mark
from core.ground.clock import Clock
from core.ground.data import customer_names, load_policy
from core.ground.errors import ResolverError, RunNotFound, StoreBusy, StoreUnreachable
from core.ground.safetext import name_key
from core.ground.state import RunView, TaskState, WorldSeen, action_short
from core.ground.tickets import TICKETS
from core.stores import Place, open_world

__all__ = ["PAGE_SIZE", "ApprovalQueue", "Page", "QueueColumns", "RunSummary", "blank_columns", "queue_columns"]


def queue_columns(state: TaskState) -> QueueColumns:
    """The queue's columns for ``state``: customer name (``data/world.json``), the proposal's total
    in CAD (refund amounts, reships at catalog price: :func:`core.engine.policy.action_value`), the role
    it needs (:func:`core.engine.policy.proposal_role`, the highest of its actions) and its actions.

    It runs at every save, so the result is kept per customer, policy version and actions (each
    action's type and every argument): the same proposal is priced once per process.
    """
    actions = state.proposal.actions if state.proposal else []
    customer = customer_names().get(state.customer_id, state.customer_id)
    if not actions:
        return QueueColumns(customer=customer, total_amount="", amount_cents=0, required_role="", role_rank=-1, actions="")
    key = (customer, load_policy().version, tuple((type(a), *a.__dict__.values()) for a in actions))
    cached = _priced.get(key)
    if cached is None:
        cached = _price(customer, actions)
        with _priced_lock:
            if len(_priced) >= 4096:
                _priced.clear()
            _priced[key] = cached
    return QueueColumns(**cached)


_priced: dict[tuple, QueueColumns] = {}
_priced_lock = threading.Lock()


def _price(customer: str, actions: list) -> QueueColumns:
    total = sum((action_value(a) for a in actions), Decimal("0.00"))
    role = proposal_role(actions)
    return QueueColumns(
        customer=customer,
        total_amount=f"{total:.2f}",
        amount_cents=int(total * 100),
        required_role=role,
        role_rank=rank(role),
        actions="; ".join(action_short(a).split("  ")[0] for a in actions),
    )


@dataclass(frozen=True)
class Page:
    """One page of the queue: ``rows`` (at most ``limit``), the cursor ``next`` to pass as
    ``after`` for the page that follows (None on the last page), and ``now``, the clock time of
    the read (for the ages of the rows)."""

    rows: list[RunSummary]
    next: str | None
    now: datetime
    status: str | None = None
    search: str | None = None
    after: str | None = None


class ApprovalQueue:
    """The read side of one home: ``store`` (the checkpoint store), ``world_at`` (the practice
    world: its SQLite file or the team store's URL, :data:`core.stores.Place`), ``clock`` and
    ``root`` (the home folder, whose kind decides what approve may do).

    Every method may raise :class:`~core.ground.errors.StoreBusy` when another process holds a lock
    past the busy timeout.
    """

    def __init__(self, store: CheckpointStore, world_at: Place, clock: Clock, root: Path, *, kind: str | None = None) -> None:
        """``kind``: the home's kind when the caller knows it (a folder on a team store takes
        its store's); else the folder's (:func:`core.api.homekind.home_kind`), read when needed."""
        self._store = store
        self._world_at = world_at
        self._clock = clock
        self._root = root
        self._kind = kind

    # -- the queue ------------------------------------------------------------------------------

    def _rows(
        self, status: str | None, search: str | None, sort: str | None, after: str | None, limit: int, max_role: str | None = None
    ) -> tuple[list[RunSummary], str | None]:
        """The one call of the store's listing: a page of rows and the cursor of the next page.

        The cursor is opaque to callers: the JSON of the last row's keyset cursor (its sort key
        and run ID, :meth:`~core.contract.store.RunSummary.cursor`), so a page never costs more
        with history (no OFFSET). Raises ResolverError for a cursor that cannot be read or an
        unknown sort.
        """
        key: tuple[Any, str] | None = None
        if after is not None:
            try:
                value, run_id = json.loads(after)
                key = (value, str(run_id))
            except (ValueError, TypeError):
                raise ResolverError(f"Cannot read the page cursor {after!r}; start from the first page.") from None
        rows = self._store.page(
            status, search=search, sort=sort, after=key, limit=limit, max_role_rank=None if max_role is None else rank(max_role)
        )
        if len(rows) < limit:
            return rows, None
        effective = sort or ("age" if status == "waiting_approval" else "updated")
        return rows, json.dumps(list(rows[-1].cursor(effective)))

    def page(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        sort: str | None = None,
        after: str | None = None,
        limit: int = PAGE_SIZE,
        max_role: str | None = None,
        name: str | None = None,
    ) -> Page:
        """One page of run summaries for ``status`` (None: every status) and ``search`` (ticket,
        order, customer or run ID, a substring), from the opaque cursor ``after`` (None: the
        first page; a page's ``next`` gives the following one). Waiting runs come oldest first,
        the others newest first. ``max_role`` (a role name) keeps only runs whose proposal needs
        that role or a lower one, with a readable checkpoint: with ``waiting_approval``, the runs
        that approver may approve (the "mine" filter). With ``waiting_approval`` a run
        set aside until later is left out until its time, and with ``max_role`` and ``name`` a
        run handed to another named colleague (:mod:`core.engine.marks`).

        Raises:
            ResolverError: the cursor cannot be read.
            UnknownRole: ``max_role`` is not a role of the policy.
        """
        rows, nxt = self._rows(status, search, sort, after, limit, max_role)
        now = self._clock.now()
        if status == "waiting_approval" and rows:
            self._lapses(rows, now)
            rows = self._unmarked(rows, now, name if max_role is not None else None)
        return Page(rows, nxt, now, status, search, after)

    def _lapses(self, rows: list[RunSummary], now: datetime) -> None:
        """Write the ``lapse`` event of each request of this waiting page that lapsed with no one
        acting (any read of the queue may, once per request by a compare-and-set;
        :func:`core.engine.watch.sweep_lapses` loads only rows last saved before the age limit). A
        store that cannot be written now (read-only, busy) leaves it to the next read."""
        # lazy: core.engine.watch (and subprocess) loads at the first waiting page, not with the home
        from core.engine.watch import sweep_lapses

        with suppress(ResolverError):
            sweep_lapses(self._store, now, load_policy(), rows)

    def _unmarked(self, rows: list[RunSummary], now: datetime, name: str | None) -> list[RunSummary]:
        """``rows`` of the "waiting" filter without the runs set aside at ``now`` and, for the
        "mine" of ``name``, the runs handed to someone else. A page may come back
        shorter than its limit; its cursor still follows its last row as read."""
        # lazy: core.engine.marks loads at the first read of marks, not with the home
        from core.engine.marks import hides_from_mine, standing

        marks = standing(self._store.run_marks([r.run_id for r in rows]), now)
        if not marks:
            return rows
        return [r for r in rows if not ((m := marks.get(r.run_id)) is not None and (m.snoozed(now) or hides_from_mine(m, name)))]

    def marks_now(self) -> tuple[dict[str, Any], datetime]:
        """The marks that stand now by run ID (:class:`core.engine.marks.RunMarks`) and the
        home's clock time they were read at, as :meth:`core.api.listing.ListingQueue.marks_now`."""
        # lazy: core.engine.marks loads at the first read of marks, not with the home
        from core.engine.marks import standing

        now = self._clock.now()
        return standing(self._store.run_marks(), now), now

    def marked_away(self, marks: dict[str, Any], now: datetime, role: str | None, name: str | None) -> Any:
        """How many waiting runs ``role`` may decide are set aside, handed to someone other than
        ``name`` or claimed by someone else, among the standing ``marks`` (:meth:`marks_now`): the
        line each face shows so that a mark never hides a run silently
        (:func:`core.engine.marks.marked_away`, a :class:`core.engine.marks.MarkedAway`)."""
        # lazy: core.engine.marks loads at the first read of marks, not with the home
        from core.engine.marks import marked_away

        return marked_away(self._store, marks, now, role, name)

    def marks(self, state: TaskState) -> Any:
        """The marks of ``state``'s run (:class:`core.engine.marks.RunMarks`; none from an older run that
        a reset gave the same readable ID)."""
        # lazy: core.engine.marks loads at the first read of marks, not with the home
        from core.engine.marks import read_marks

        return read_marks(self._store, state)

    def pages(
        self,
        status: str | None = None,
        *,
        search: str | None = None,
        limit: int = 1000,
        sort: str | None = None,
        max_role: str | None = None,
        name: str | None = None,
    ) -> Iterator[Page]:
        """Every page in turn (``resolver runs`` prints each as it comes), in ``sort`` order and
        with ``max_role``'s runs only (and ``name``'s "mine"), as :meth:`page`."""
        after: str | None = None
        while True:
            page = self.page(status, search=search, after=after, limit=limit, sort=sort, max_role=max_role, name=name)
            yield page
            if page.next is None:
                return
            after = page.next

    def counts(self) -> dict[str, int]:
        """Runs per status (statuses with no run are absent): every saved run, a run set aside
        too (the store's counts table; the "all" filter lists them all)."""
        return self._store.counts()

    def set_aside(self) -> int:
        """How many waiting runs are set aside now (a snooze not over): what the
        "waiting" filter's count leaves out, as :meth:`page`'s waiting filter does. The store's
        counts table (SQLite's and PostgreSQL's ``run_counts``) counts every waiting run; the
        snoozes are read from ``run_marks`` (one row per marked run) and each snoozed run's
        status checked, so this costs one small query plus one summary per snoozed run."""
        # lazy: core.engine.marks loads at the first read of marks, not with the home
        from core.engine.marks import standing

        now = self._clock.now()
        aside = 0
        for run_id, marks in standing(self._store.run_marks(), now).items():
            if marks.snoozed(now):
                with suppress(ResolverError):  # deleted since, or unreadable: not waiting
                    aside += self._store.summary(run_id).status == "waiting_approval"
        return aside

    def total(self) -> int:
        """How many runs are saved, whatever their status."""
        return sum(self.counts().values())

    def now(self) -> datetime:
        """The home's clock (simulated while a trainer set one)."""
        return self._clock.now()

    @property
    def simulated(self) -> bool:
        """True while a trainer's simulated time is set."""
        return bool(getattr(self._clock, "simulated", False))

    # -- one run --------------------------------------------------------------------------------

    def load(self, run_id: str) -> TaskState:
        """The whole saved state of one run. Raises RunNotFound, CorruptCheckpoint,
        UnsupportedSchemaVersion."""
        return self._store.load(run_id)

    def view(self, run_id: str) -> RunView:
        """One run as the read side shows it (no message history past the
        opening messages; :class:`core.ground.state.RunView`, never saved). Raises as :meth:`load`."""
        return self._store.load_view(run_id)

    def others(self, task_id: str, run_id: str) -> list[str]:
        """The other runs of ``task_id`` than ``run_id``, oldest first."""
        return [r.run_id for r in self._store.runs_of_task(task_id) if r.run_id != run_id]

    def run(self, run_id: str, approver: Approver, keys: Mapping[str, str] | None = None) -> RunDetail:
        """The detail of ``run_id`` for ``approver``: what they may do and why not, and what the
        pane shows (the lookups behind a waiting run's evidence run again: no model call).
        ``keys`` are the face's key for each action, for the sentences that name one
        (:func:`core.api.views.describe`). A run whose checkpoint cannot be read (or is gone) comes
        back as a detail with ``error`` set, never as an exception. A store that does not
        answer (StoreUnreachable, StoreBusy) is raised: it says nothing about the run, whose
        checkpoint may be healthy, and the caller reads again or names the store
        (:func:`core.api.views.unreachable_detail`)."""
        summary = None
        try:
            summary = self._store.summary(run_id)
            others = self.others(summary.task_id, run_id)
            state = self._store.load_view(run_id)
            trace = trace_lines(self._store.events(run_id)) if state.status == "running" else None
        except (StoreUnreachable, StoreBusy):
            raise
        except ResolverError as exc:
            if summary is None:
                return unreadable_detail(run_id, str(exc))
            return unreadable_detail(run_id, str(exc), summary.task_id, summary.status, summary.version)
        detail = describe(state, approver, others, trace, keys, tickets=self._root / TICKETS)
        if state.status == "waiting_approval" and state.proposal is not None:
            detail = replace(detail, mark_offers={a: may_mark(state, approver.role, a) for a in MARK_ACTIONS})
            marks = self.marks(state)  # the claim, hand-over, snooze
            now = self._clock.now()
            marked = marks.lines(now)
            if marked:
                mine = marks.claimed(now) and name_key(marks.claimed_by or "") == name_key(approver.name or "")
                claim = None if mine else marks.claim_line(now)
                detail = replace(detail, notes=[*marked, *detail.notes], claim=claim, my_claim=mine)
            return self._with_world_now(state, detail, approver)
        vs = approved_vs_current(state)
        return replace(detail, body=[*vs, "", *detail.body]) if vs else detail

    # -- the world now ---------------------------------------------------------------------------

    def look(self, state: TaskState) -> WorldSeen:
        """Run the read-only lookups behind ``state``'s evidence again now (no model call): the
        data an approval is bound to (:func:`core.engine.preconditions.look`)."""
        return look(state, open_world(self._world_at, self._clock))

    def world_now(self, state: TaskState, seen: WorldSeen | None = None) -> tuple[list[str], str | None]:
        """The "world now" lines of a waiting run (ages, what changed since the agent looked)
        and why approve is refused now (expiry, one effect per ticket, or in a shop home a
        precondition that already fails), else None. ``seen`` is the lookups' data to show
        (default: :meth:`look` now). No model call is made."""
        world = open_world(self._world_at, self._clock)
        now = self._clock.now()
        policy = load_policy()
        d = drift(state, world, seen)
        lines = [
            *ages_lines(state, now, evidence_time(state), policy.evidence_max_age_s, policy.approval_valid_s),
            *drift_lines(d.differences, d.effects, d.failing, d.unread),
        ]
        practice = (self._kind or home_kind(self._root)) == "practice"
        problem = world_problem(self._store, state, now, world=world, practice=practice, policy=policy)
        if problem is None and d.failing and practice:
            lines.append(
                "A practice home lets approve go on to the write, where the service refuses (the lesson's "
                "moment); a shop home refuses approve here."
            )
        return lines, problem[1] if problem else None

    def _with_world_now(self, state: TaskState, detail: RunDetail, approver: Approver) -> RunDetail:
        seen = None
        try:
            seen = self.look(state)
            lines, refused = self.world_now(state, seen)
        except ResolverError as exc:
            lines, refused = [f"The world cannot be read now: {exc}"], None
        offered = dict(detail.offers)
        if refused and offered.get("approve") is None:
            offered["approve"] = refused
        decision = replace(detail.decision, world=tuple(lines), seen=seen) if detail.decision else None
        notes = list(detail.notes)
        if refused:
            # "may approve" never stands beside a refusal of approve
            said = standing(state, approver.role)
            notes = [standing(state, approver.role, refused) if n == said else n for n in notes]
            notes.insert(0, refused)
        elif any(line.startswith("  Preconditions that fail now") for line in lines):
            notes.insert(0, "World changed since the agent looked: see the section below.")
        cut = detail.body.index("") if "" in detail.body else len(detail.body)  # after the actions and the digest
        return replace(
            detail,
            body=[*detail.body[:cut], "", *lines, *detail.body[cut:]],
            offers=offered,
            decision=decision,
            notes=notes,
            tone="warn" if notes != detail.notes else detail.tone,
        )

    def describe(
        self, state: TaskState, approver: Approver, others: list[str] | None = None, keys: Mapping[str, str] | None = None
    ) -> RunDetail:
        """The detail of a state the caller already holds (the executor's progress); ``keys`` as
        for :meth:`run`."""
        return describe(state, approver, others, keys=keys, tickets=self._root / TICKETS)

    def request(self, state: TaskState) -> list[str]:
        """The approval request of ``state`` (:func:`core.api.views.approval_request`), its ticket
        shipped or this home's own (``resolver ticket add``)."""
        return approval_request(state, self._root / TICKETS)

    def proposal(self, state: TaskState) -> list[str]:
        """The proposal of ``state`` as its record (:func:`core.api.views.proposal_record`), its
        ticket shipped or this home's own."""
        return proposal_record(state, self._root / TICKETS)

    def trace(self, run_id: str) -> list[str]:
        """The run's events, one line each. Raises RunNotFound."""
        return trace_lines(self._store.events(run_id))

    def compare(self, run_a: str, run_b: str, *, oldest_first: bool = False) -> tuple[str, list[str]]:
        """The actions of two runs line by line, and a title ``T-90103: A vs B``; with
        ``oldest_first`` the older run is the ``-`` side. Raises RunNotFound, CorruptCheckpoint."""
        a, b = self._store.load_view(run_a), self._store.load_view(run_b)
        if oldest_first:
            a, b = sorted((a, b), key=lambda s: (s.created_at, s.run_id))
        return f"{a.task_id}: {a.run_id} vs {b.run_id}", diff_lines(a, b)

    def audit(self, run_id: str | None = None, *, name: str | None = None) -> list[dict[str, Any]]:
        """The audit of decisions and refusals, oldest first, for one run or all, and with
        ``name`` only the decisions that approver made: names compared as everywhere else
        (:func:`core.ground.safetext.name_key`: ``tomás`` is ``Tomás``), and the owner's registry rows
        that name them (``registry:add`` ...) left out, since the owner made those. A run that
        was pruned keeps its rows. Raises RunNotFound for a run that has neither a checkpoint nor
        an audit row (a mistyped ID is said, not answered with "0 decisions")."""
        rows = self._store.audit(run_id)
        if name is not None:
            key = name_key(name)
            rows = [
                r for r in rows if name_key(str(r["name"] or "")) == key and not str(r["decision"]).startswith(REGISTRY_PREFIX)
            ]
        if run_id and not rows and not self._store.exists(run_id):
            raise RunNotFound(run_id)
        return rows

    def changes(self) -> list[dict[str, Any]]:
        """What the practice world changed since its last reset, oldest first."""
        return open_world(self._world_at, self._clock).changes()
