"""The watcher: ``resolver watch`` tells a person what happened in the queue.

The events are rows of the store's ``queue_events`` (:mod:`core.stores.events`), written in the
transaction of the write that makes each. A watcher reads them after its **position** (a small
JSON file in the home folder, one per watcher: :class:`Position`), prints one line per event
relevant to its person (:func:`relevant`), runs the config file's ``notify`` command once per
event with the event as JSON on stdin, and moves its position after each event, so a watcher
stopped at any point delivers what it missed when it starts again: **at least once** (a notify
command that fails is retried at the next start; each event's ``id`` lets it drop a repeat).

On PostgreSQL an event's ID is taken before its transaction commits, so an event may appear
after a higher one was read: every read starts :data:`WINDOW` IDs behind the position and drops
the IDs already delivered (the position keeps them, for that window).

**Woken, and alive for days.** On a team store the running watcher (``resolver watch``,
:func:`core.cli.approver.cmd_watch`) ``LISTEN``s with the app's own listener
(:class:`core.stores.postgres.listen.QueueListener`) and reads at once when a notification
comes; its reads every ``--interval`` seconds stay as the safety net for a notification lost
while the listener reconnected, and are SQLite's only way. A store that does not answer (the
server ended the connection or went away, or a lock was held past the timeout) is said once
(:func:`outage_line`) while it lasts, and the watcher goes on from its position when the store
answers: the position is in memory and on disk, so nothing is skipped (at least once, as at a restart).

A **lapse** (a waiting request whose evidence passed the policy's age limit with no one acting)
is written by :func:`sweep_lapses`, once per request by a compare-and-set
(:meth:`core.stores.events.QueueEventRows.record_lapse`): by the watcher at every pass, and by
:meth:`core.api.queue.ApprovalQueue.page` for the rows of a waiting page.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from hashlib import sha256
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.engine.policy import ROLE_LABELS, may_approve, proposal_role
from core.engine.preconditions import evidence_time
from core.ground.clock import iso
from core.ground.errors import ResolverError, StoreBusy, StoreUnreachable
from core.ground.safetext import name_key, one_line

if TYPE_CHECKING:
    from core.contract.store import EventStore, QueueReader, RunStore, RunSummary

    class WatchedStore(RunStore, QueueReader, EventStore, Protocol):
        """What the watcher reads of a store: runs, the queue's pages and its events."""

    from core.ground.data import PolicyData

__all__ = [
    "LAPSE_SWEEP_S",
    "WINDOW",
    "Event",
    "Position",
    "notify_command",
    "outage_line",
    "relevant",
    "run_notify",
    "sweep_lapses",
]

WINDOW = 200
"""How many IDs behind its position a watcher reads again (PostgreSQL's IDs are not commit order:
a transaction that took an ID commits after a later one; 200 concurrent writers is far more than
a shop has)."""

LAPSE_SWEEP_S = 60.0
"""How often a running watcher looks for lapsed requests, in seconds (``--once`` always does)."""

NOTIFY_TIMEOUT_S = 30.0
"""How long a notify command may take, in seconds, before it counts as failed."""


@dataclass(frozen=True)
class Event:
    """One event of the queue (:data:`core.stores.events.EVENT_COLUMNS`): ``id``, ``kind``
    (:data:`core.stores.events.EVENT_KINDS`), ``run_id``, ``at`` (ISO 8601), who made it
    (``name``, ``role``; None for the system's), ``to_name`` (a hand-over's recipient),
    ``required_role`` (what the run's proposal needs) and ``detail``."""

    id: int
    kind: str
    run_id: str
    at: str
    name: str | None = None
    role: str | None = None
    to_name: str | None = None
    required_role: str | None = None
    detail: str | None = None

    def line(self) -> str:
        """The event on one line, its untrusted parts (names, a note, a sentence) made one line;
        the CLI prints it through :mod:`core.ground.safetext`."""
        who = one_line(self.name or "")
        needs = f" (needs {ROLE_LABELS.get(self.required_role or '', self.required_role or '?')})" if self.required_role else ""
        request = f"new approval request{needs}"
        if self.detail:  # a refresh (SQLite format 6, PostgreSQL migration 13): by whom, the new digest
            by = f" by {who}" if who else ""
            request = f"approval request refreshed{by}, new digest {one_line(self.detail)[:12]}{needs}"
        said = {
            "request": request,
            "claim": f"claimed by {who}",
            "handover": f"handed to {one_line(self.to_name or '')} by {who}: {one_line(self.detail or '')}",
            "lapse": f"the request lapsed with no one acting{needs}; refresh it to decide",
            "refusal": f"refused: {one_line(self.detail or '')}",
            "handed_to_person": "handed to a person",
        }.get(self.kind, self.kind)
        return f"#{self.id} {self.at} {self.run_id}: {said}"

    def as_json(self) -> str:
        """The event as one JSON object (what a notify command reads on stdin)."""
        return json.dumps(asdict(self), ensure_ascii=False, sort_keys=True)


def relevant(event: Event, role: str | None, name: str | None) -> bool:
    """Whether ``event`` is for the person ``name`` with ``role`` (None: a watcher of everything):
    a hand-over to them; a request, lapse, claim, hand-over to someone else, refusal or run
    handed to a person on a run their role may approve (or whose role is unknown). A hand-over to
    a colleague takes the run out of every other "mine", so everyone who may decide the run hears
    of it, not only its recipient (a mark never hides a run from those who may decide it without
    saying so). Their own claim or hand-over is not news to them."""
    if role is None and name is None:
        return True
    if event.kind == "handover" and name is not None and name_key(event.to_name or "") == name_key(name):
        return True
    if event.kind in ("claim", "handover") and name is not None and name_key(event.name or "") == name_key(name):
        return False
    if role is None or not event.required_role:
        return True
    try:
        return may_approve(role, event.required_role)
    except Exception:  # a role the policy no longer knows: say it rather than drop it
        return True


@dataclass
class Position:
    """Where a watcher is: ``last`` (the highest ID delivered) and ``seen`` (the IDs delivered
    within :data:`WINDOW` of it), kept in ``path`` (JSON, mode 0600, replaced atomically after
    every event)."""

    path: Path
    last: int = 0
    seen: set[int] = field(default_factory=set)
    fresh: bool = True

    @classmethod
    def of(cls, root: Path, role: str | None, name: str | None) -> Position:
        """The position of the watcher of ``name`` / ``role`` in the home folder ``root``
        (``watch-<12 hex>.json``: one file per person, so two people's watchers on one machine
        keep their own). Raises ResolverError for a file that cannot be read."""
        key = sha256(f"{name_key(name or '')}\n{role or ''}".encode()).hexdigest()[:12]
        path = root / f"watch-{key}.json"
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise ResolverError(f"Cannot read the watcher's position {path} ({exc}); move it away to start again.") from None
        try:
            return cls(path, int(body["last"]), {int(i) for i in body.get("seen", [])}, False)
        except (KeyError, TypeError, ValueError):
            raise ResolverError(f"The watcher's position {path} is damaged; move it away to start again.") from None

    def start_at(self, newest: int) -> None:
        """A watcher's first start: its position is the newest event now (it tells what happens
        from now on, not the whole history)."""
        self.last, self.fresh = newest, False
        self.seen = set(range(max(1, newest - WINDOW + 1), newest + 1))
        self.save()

    def after(self) -> int:
        """The ID to read after: :data:`WINDOW` behind the position."""
        return max(0, self.last - WINDOW)

    def deliver(self, event_id: int) -> None:
        """Note ``event_id`` delivered and write the position."""
        self.seen.add(event_id)
        self.last = max(self.last, event_id)
        self.seen = {i for i in self.seen if i > self.last - WINDOW}
        self.save()

    def save(self) -> None:
        """Write the position atomically (a temporary file renamed over it), mode 0600."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"last": self.last, "seen": sorted(self.seen)}, fh)
        os.replace(tmp, self.path)


def new_events(store: WatchedStore, position: Position) -> list[Event]:
    """The events after ``position`` not yet delivered, lowest ID first."""
    out: list[Event] = []
    after = position.after()
    while True:
        rows = store.queue_events(after)
        out += [Event(**r) for r in rows if r["id"] not in position.seen and r["id"] > position.after()]
        if len(rows) < 500:
            return out
        after = rows[-1]["id"]


def newest_event(store: WatchedStore) -> int:
    """The highest event ID now (0 for none)."""
    last = 0
    while True:
        rows = store.queue_events(last)
        if not rows:
            return last
        last = int(rows[-1]["id"])


def notify_command(config: dict[str, Any]) -> list[str] | None:
    """The config file's ``notify`` command as an argument list (split as a shell would, run
    without one: write ``sh -c '…'`` for a pipe), or None when absent.

    Raises:
        ResolverError: ``notify`` is not a non-empty string, or cannot be split (an open quote)."""
    value = config.get("notify")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ResolverError('The config file\'s notify must be a command line, e.g. notify = "notify-send resolver".')
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise ResolverError(f"The config file's notify {value!r} cannot be read as a command line ({exc}).") from None


def run_notify(command: list[str], event: Event) -> str | None:
    """Run ``command`` with ``event`` as JSON on stdin; why it failed (one sentence), or None."""
    try:
        done = subprocess.run(command, input=event.as_json() + "\n", text=True, timeout=NOTIFY_TIMEOUT_S, capture_output=True)
    except FileNotFoundError:
        return f"The notify command {command[0]!r} was not found; fix notify in the config file."
    except subprocess.TimeoutExpired:
        return f"The notify command took more than {NOTIFY_TIMEOUT_S:.0f} s for event #{event.id}."
    except OSError as exc:
        return f"The notify command cannot run ({exc.strerror or exc})."
    if done.returncode != 0:  # one sentence, whatever the command printed (a new user's trial: a double space)
        said = one_line(done.stderr.strip()[:200]).strip()
        if said and not said.endswith((".", "!", "?")):
            said += "."
        return f"The notify command exited {done.returncode} for event #{event.id}" + (f": {said}" if said else ".")
    return None


def outage_line(exc: ResolverError, last: int) -> str:
    """The one sentence a running watcher says when its store stops answering (``exc``: a lost
    connection, a lock held past the timeout, no free connection): what happened, and that it
    keeps its place after event ``last`` and goes on by itself, so a person knows nothing is
    missed and there is nothing to restart."""
    said = str(exc).rstrip().removesuffix("; try again.")  # it tries again by itself
    if said and not said.endswith((".", "!", "?")):
        said += "."
    return f"{said} The watcher keeps its place after event #{last} and goes on when the store answers."


def _not_lapsed_yet(store: WatchedStore, rows: list[RunSummary], candidates: list[str]) -> list[str]:
    """``candidates`` but the runs whose present request's ``lapse`` event is written already
    (without this, each read of the waiting queue loads its page's 50 lapsed runs whole and
    writes nothing new: 35 to 50 ms warm and 170 to 290 ms at 1,000,000 runs on a busy disk).

    A lapse event's ``at`` (the evidence's time plus the limit) is before the moment it was found
    lapsed, so an event of an earlier request of the run (or of an earlier run of the same ID)
    is ``at`` before the run's last save (``updated_ts``), which made the present request: an
    event at or after that save is the present request's. An event before it proves nothing (the
    request may be older than its save: a run set back to waiting), and that run is loaded and
    checked as before. The rule holds under one clock; on a team store whose machines' clocks
    disagree a page read may leave a lapse to the watcher's pass (``rows`` None), which loads
    every candidate."""
    if not candidates:
        return candidates
    times = store.lapse_times(candidates)
    if not times:
        return candidates
    saved = {r.run_id: r.updated_ts for r in rows}
    return [run_id for run_id in candidates if not any(_at_or_after(at, saved[run_id]) for at in times.get(run_id, ()))]


def _at_or_after(at: str, ts: float) -> bool:
    """True when the ISO 8601 time ``at`` is at or after the epoch seconds ``ts`` (a time that
    does not read proves nothing: False)."""
    try:
        return datetime.fromisoformat(at).timestamp() >= ts
    except (TypeError, ValueError):
        return False


def sweep_lapses(store: WatchedStore, now: datetime, policy: PolicyData, rows: list[RunSummary] | None = None) -> int:
    """Write the ``lapse`` event of every waiting request whose evidence is older than the
    policy's ``evidence_max_age_s`` at ``now`` (once per request: a compare-and-set), among
    ``rows`` (a page of the waiting queue) or, with None, the whole waiting queue (the watcher's
    pass). Only runs last saved before the limit are loaded: a request's evidence is read before
    it is saved, so those have lapsed for sure, and a run saved since (a refresh) has new
    evidence. (A run set back to waiting after its approval lapsed at execution has a
    ``refusal`` event at once and its ``lapse`` once it was saved that long ago.) Returns how
    many events this call wrote."""
    limit = timedelta(seconds=policy.evidence_max_age_s)
    cutoff = (now - limit).timestamp()
    if rows is not None:
        candidates = [r.run_id for r in rows if r.status == "waiting_approval" and r.updated_ts <= cutoff]
        candidates = _not_lapsed_yet(store, rows, candidates)
    else:  # the waiting queue oldest first (its index), up to the first run saved after the limit
        candidates = []
        after: RunSummary | None = None
        while True:
            page = store.page("waiting_approval", sort="age", after=after, limit=500)
            candidates += [r.run_id for r in page if r.updated_ts <= cutoff]
            if len(page) < 500 or page[-1].updated_ts > cutoff:
                break
            after = page[-1]
    wrote = 0
    for run_id in candidates:
        try:
            state = store.load(run_id)
        except (StoreUnreachable, StoreBusy):
            raise  # the store, not the run: the caller says so
        except ResolverError:
            continue  # a corrupt or deleted run has no request to lapse
        if state.status != "waiting_approval" or state.proposal is None:
            continue
        if now - evidence_time(state) > limit:
            lapsed_at = iso(evidence_time(state) + limit)
            needed = proposal_role(state.proposal.actions, policy) if state.proposal.actions else None
            wrote += store.record_lapse(run_id, state.proposal.digest, lapsed_at, needed)
    return wrote
