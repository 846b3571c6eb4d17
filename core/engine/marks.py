"""Claim, hand over, set aside: the marks a person puts on a waiting run.

- **Claim** ("Tomás is on it"): shown to everyone; it lapses :data:`CLAIM_MINUTES` after it was
  made (the config file's ``claim_minutes`` changes it) or when its claimer releases it. Another
  approver may still decide a claimed run: every face tells them first (:meth:`RunMarks.claim_line`).
  A second claim while one stands is refused with the claimer's name.
- **Hand-over** to a named colleague with a note: the run shows under the recipient's "mine" and
  leaves every other named approver's (:func:`hides_from_mine`); it clears a standing claim.
- **Snooze** until a time: the run leaves "waiting" while now < until (computed when the queue is
  read, so it comes back by itself: nothing needs waking), never past the approval request's
  expiry (the evidence's age limit, :func:`core.engine.approval.world_problem`'s ``expiry``).

Each change is checked as a decision is (a name on one line, the role from the registry in a
shop home, a run still ``waiting_approval``, and for a claim, a hand-over and a snooze a role
that may decide the run, the recipient's too: :func:`core.engine.rulebook.may_mark`), appended to the audit in the same transaction as
the mark (:meth:`core.contract.store.Store.put_marks`) and, in a shop home, signed by its maker with their
Ed25519 key (:class:`core.engine.signing.DecisionSigner`; the note and the time are signed in
``detail``). In a practice home the rows are unsigned, as a rejection's row is there.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Protocol

from core.contract.audit import MARK_DECISIONS
from core.ground.clock import Clock, iso, parse_duration, parse_time
from core.ground.errors import ApprovalRefused, BadArgument, ResolverError, StaleCheckpoint
from core.ground.safetext import name_key, not_one_line, not_plain_name, one_line

if TYPE_CHECKING:
    from core.contract.store import AuditLog, MarkStore, QueueReader, RunStore

    class MarkedStore(RunStore, QueueReader, MarkStore, AuditLog, Protocol):
        """What marks read and write of a store: runs, their summaries and their marks."""

    from core.engine.signing import DecisionSigner
    from core.ground.data import PolicyData
    from core.ground.state import TaskState

__all__ = [
    "CLAIM_MINUTES",
    "MARK_DECISIONS",
    "MarkedAway",
    "RunMarks",
    "claim",
    "claim_minutes",
    "handover",
    "hides_from_mine",
    "marked_away",
    "release",
    "snooze",
    "snooze_deadline",
    "standing",
]

CLAIM_MINUTES = 30
"""How long a claim stands, in minutes, unless the config file's ``claim_minutes`` says otherwise:
long enough to read a request and check the world, short enough that a claim left by someone who
went home frees the run before the next shift looks."""


def claim_minutes(config: dict[str, Any]) -> int:
    """The claim's lifetime in minutes from the config file's table ``config`` (``claim_minutes``,
    a whole number from 1 to 1440), :data:`CLAIM_MINUTES` when absent.

    Raises:
        ApprovalRefused: the key is not a whole number in that range (one sentence)."""
    value = config.get("claim_minutes", CLAIM_MINUTES)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 1440:
        raise ApprovalRefused(f"The config file's claim_minutes must be a whole number of minutes from 1 to 1440, not {value!r}.")
    return value


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None


@dataclass(frozen=True)
class RunMarks:
    """The marks of one run as stored (:data:`core.stores.marks.MARK_COLUMNS`), read at ``now``.

    Times are timezone-aware; a field is None where there is no such mark. ``version`` is the
    marks row's (0: none yet), for the compare-and-set of the next change."""

    run_id: str
    run_uid: str | None = None
    version: int = 0
    claimed_by: str | None = None
    claimed_role: str | None = None
    claimed_at: datetime | None = None
    claim_until: datetime | None = None
    handed_to: str | None = None
    handed_by: str | None = None
    handed_at: datetime | None = None
    handed_note: str | None = None
    snoozed_by: str | None = None
    snoozed_at: datetime | None = None
    snooze_until: datetime | None = None

    @classmethod
    def of(cls, run_id: str, row: dict[str, Any] | None, run_uid: str | None = None) -> RunMarks:
        """The marks of ``row`` (a store's, or None); with ``run_uid`` a row left by an older run
        that a reset gave the same readable ID counts as no marks."""
        if row is None or (run_uid is not None and row.get("run_uid") not in (None, run_uid)):
            return cls(run_id, run_uid, int(row["version"]) if row else 0)
        return cls(
            run_id=run_id,
            run_uid=row.get("run_uid"),
            version=int(row["version"]),
            claimed_by=row.get("claimed_by"),
            claimed_role=row.get("claimed_role"),
            claimed_at=_time(row.get("claimed_at")),
            claim_until=_time(row.get("claim_until")),
            handed_to=row.get("handed_to"),
            handed_by=row.get("handed_by"),
            handed_at=_time(row.get("handed_at")),
            handed_note=row.get("handed_note"),
            snoozed_by=row.get("snoozed_by"),
            snoozed_at=_time(row.get("snoozed_at")),
            snooze_until=_time(row.get("snooze_until")),
        )

    def claimed(self, now: datetime) -> bool:
        """True while a claim stands at ``now`` (made, not released, not lapsed)."""
        return bool(self.claimed_by) and self.claim_until is not None and now < self.claim_until

    def snoozed(self, now: datetime) -> bool:
        """True while the run is set aside at ``now`` (the "waiting" filter hides it)."""
        return self.snooze_until is not None and now < self.snooze_until

    def claim_line(self, now: datetime) -> str | None:
        """``Tomás is on it (claimed 12:03, until 12:33).`` while a claim stands, else None."""
        if not self.claimed(now) or self.claimed_at is None or self.claim_until is None:
            return None
        until = _hm(self.claim_until) if iso(self.claim_until)[:10] == iso(self.claimed_at)[:10] else _day_hm(self.claim_until)
        return f"{one_line(self.claimed_by or '')} is on it (claimed {_hm(self.claimed_at)}, until {until})."

    def lines(self, now: datetime) -> list[str]:
        """What every face shows of the marks at ``now``, one line each (untrusted text made one
        line; the faces print them through :mod:`core.ground.safetext`): the claim, the hand-over and
        its note, the snooze. Empty when nothing stands."""
        out: list[str] = []
        said = self.claim_line(now)
        if said:
            out.append(said)
        if self.handed_to:
            at = f" at {_hm(self.handed_at)}" if self.handed_at else ""
            out.append(
                f"Handed to {one_line(self.handed_to)} by {one_line(self.handed_by or '')}{at}: {one_line(self.handed_note or '')}"
            )
        if self.snoozed(now) and self.snooze_until is not None:
            out.append(f"Set aside by {one_line(self.snoozed_by or '')} until {iso(self.snooze_until)}.")
        return out

    def short(self, now: datetime) -> str:
        """The marks in a few words for a listing's line (``claimed by Tomás``, ``to Ana``,
        ``snoozed``), empty when nothing stands."""
        parts = []
        if self.claimed(now):
            parts.append(f"claimed by {one_line(self.claimed_by or '')}")
        if self.handed_to:
            parts.append(f"to {one_line(self.handed_to)}")
        if self.snoozed(now):
            parts.append("snoozed")
        return ", ".join(parts)


def _hm(at: datetime) -> str:
    return iso(at)[11:16]


def _day_hm(at: datetime) -> str:
    """``2026-10-13 12:03``: a time on another day than the one it is read beside."""
    return f"{iso(at)[:10]} {_hm(at)}"


NOTE_MAX = 500
"""The longest hand-over note, characters: one line a colleague reads in the pane and the
listing (a new user's 5,000-character note was taken whole)."""


def standing(rows: dict[str, dict[str, Any]], now: datetime) -> dict[str, RunMarks]:
    """The marks of ``rows`` (a store's :meth:`~core.contract.store.Store.run_marks`) that stand at ``now``
    (a claim not lapsed, a hand-over, a snooze not over), by run ID."""
    out = {}
    for run_id, row in rows.items():
        m = RunMarks.of(run_id, row)
        if m.claimed(now) or m.handed_to or m.snoozed(now):
            out[run_id] = m
    return out


def hides_from_mine(marks: RunMarks | None, name: str | None) -> bool:
    """Whether a run leaves the "mine" of the approver ``name``: it was handed to someone else.
    Without a name (a practice home's ``--as ROLE`` alone) nothing is hidden."""
    if marks is None or not marks.handed_to or not name:
        return False
    return name_key(marks.handed_to) != name_key(name)


@dataclass(frozen=True)
class MarkedAway:
    """How many waiting runs a reader may decide carry a mark that keeps them from the reader:
    ``set_aside`` (a snooze not over: the waiting queue leaves them out), ``handed`` (handed to someone else:
    their "mine" leaves them out) and ``claimed`` (claimed by someone else: listed, but their
    own claim would be refused). ``who``: the reader may decide them (a role was given), else
    the counts are of every waiting run."""

    set_aside: int = 0
    handed: int = 0
    claimed: int = 0
    who: bool = False

    def line(self, *, mine: bool, lists_all: str = "`resolver runs` lists every run with its marks") -> str | None:
        """The one line a queue shows so that a mark never hides a run from those who may decide
        it without saying so there, or None when no such mark stands. ``mine``: the listing is
        the reader's "mine" (runs handed to someone else are left out of it; elsewhere they are
        listed with their marks). ``Of the waiting runs you may decide: 1
        set aside until later, 1 handed to someone else (not listed here; `resolver runs` lists
        every run with its marks).`` ``lists_all`` says where the face lists them all (the
        app: its "all" filter)."""
        handed = self.handed if mine else 0
        parts = [
            *([f"{self.set_aside} set aside until later"] if self.set_aside else []),
            *([f"{handed} handed to someone else"] if handed else []),
            *([f"{self.claimed} claimed by someone else"] if self.claimed else []),
        ]
        if not parts:
            return None
        of = "Of the waiting runs you may decide" if self.who else "Of the waiting runs"
        hidden = f" (not listed here; {lists_all})" if self.set_aside or handed else ""
        return f"{of}: {', '.join(parts)}{hidden}."


def marked_away(store: MarkedStore, marks: dict[str, RunMarks], now: datetime, role: str | None, name: str | None) -> MarkedAway:
    """What :class:`MarkedAway` counts for the reader ``role`` / ``name`` (None: anyone) among the
    standing ``marks`` (:func:`standing`) at ``now``: only waiting runs whose proposal that role
    may decide (:func:`core.engine.rulebook.may_decide`); every snooze (one's own too: the run leaves the
    waiting queue all the same), a hand-over to and a claim by someone else. One summary is read per marked run; a run deleted or
    unreadable since is not counted."""
    # lazy: the rulebook is not needed by `resolver runs`, which reads marks
    from core.engine.rulebook import may_decide

    aside = handed = claimed = 0
    for run_id, m in marks.items():
        try:
            summary = store.summary(run_id)
        except ResolverError:
            continue
        if summary.status != "waiting_approval" or not may_decide(role, summary.required_role or None):
            continue
        if m.snoozed(now):  # one's own snooze too: it leaves the waiting queue all the same
            aside += 1
        elif hides_from_mine(m, name):
            handed += 1
        if m.claimed(now) and not _same(m.claimed_by, name):
            claimed += 1
    return MarkedAway(aside, handed, claimed, role is not None)


def _same(who: str | None, name: str | None) -> bool:
    return bool(name) and name_key(who or "") == name_key(name or "")


def snooze_deadline(state: TaskState, policy: PolicyData) -> datetime:
    """The latest time a run may be set aside until: when its approval request expires (its
    evidence reaches the policy's ``evidence_max_age_s``)."""
    # lazy: the preconditions are not needed by `resolver runs`, which reads marks
    from core.engine.preconditions import evidence_time

    return evidence_time(state) + timedelta(seconds=policy.evidence_max_age_s)


def _waiting(store: MarkedStore, run_id: str, verb: str) -> TaskState:
    """The run ``run_id`` if it waits for a decision. Raises ApprovalRefused with
    :func:`core.engine.rulebook.nothing_to_mark` (its status, who decided it) when it does not."""
    # lazy: the rulebook is not needed by `resolver runs`, which reads marks
    from core.engine.rulebook import nothing_to_mark

    state = store.load(run_id)
    if state.status != "waiting_approval" or state.proposal is None:
        raise ApprovalRefused(nothing_to_mark(state, verb))
    return state


def _may(state: TaskState, role: str, action: str) -> None:
    """Raise ApprovalRefused with :func:`core.engine.rulebook.may_mark`'s sentence when ``role`` may not
    put the mark ``action`` on ``state`` (the role the proposal needs, as a decision)."""
    # lazy: the rulebook is not needed by `resolver runs`, which reads marks
    from core.engine.rulebook import may_mark

    said = may_mark(state, role, action)
    if said:
        raise ApprovalRefused(said)


def _may_decide_claim(state: TaskState, marks: RunMarks) -> bool:
    """Whether the standing claim's maker may decide ``state`` by the role recorded with the
    claim (no role recorded: yes). A claim made before marks needed the decision's role, by
    someone who may not decide the run, does not keep those who may from claiming it: theirs
    replaces it."""
    # lazy: the rulebook is not needed by `resolver runs`, which reads marks
    from core.engine.rulebook import may_decide, needed_role

    return not marks.claimed_role or may_decide(marks.claimed_role, needed_role(state))


def _who(role: str, name: str | None) -> str:
    # lazy: the policy is not needed by `resolver runs`, which reads marks
    from core.engine.policy import check_role

    check_role(role)
    said = not_plain_name(name)
    if said:
        raise ApprovalRefused(
            said.replace("nothing was decided", "nothing was marked").replace("Nothing was decided", "Nothing was marked")
        )
    if not name or not name.strip():
        raise ApprovalRefused("Say who you are with --name NAME: a claim, a hand-over or a snooze names its maker.")
    return name.strip()


def _write(
    store: MarkedStore,
    state: TaskState,
    marks: RunMarks,
    row: dict[str, Any],
    decision: str,
    role: str,
    name: str,
    at: datetime,
    detail: str,
    signer: DecisionSigner | None,
) -> RunMarks:
    digest = state.proposal.digest if state.proposal else ""
    seal = signer.seal(store, decision, state.run_uid, digest, at, detail) if signer else None
    audit = {
        "run_id": state.run_id,
        "decision": decision,
        "role": role,
        "name": name,
        "digest": digest,
        "at": iso(at),
        "detail": detail,
        "run_uid": state.run_uid,
        **(seal.audit if seal else {}),
    }
    full = {**_row(marks), **row, "run_id": state.run_id, "run_uid": state.run_uid}
    try:
        store.put_marks(full, audit, version=marks.version)
    except StaleCheckpoint:
        raise ApprovalRefused(
            f"Someone marked run {state.run_id} while you did; read it again (resolver show {state.run_id}). Nothing was written."
        ) from None
    return RunMarks.of(state.run_id, {**full, "version": marks.version + 1})


def _row(m: RunMarks) -> dict[str, Any]:
    def t(v: datetime | None) -> str | None:
        return iso(v) if v else None

    return {
        "claimed_by": m.claimed_by,
        "claimed_role": m.claimed_role,
        "claimed_at": t(m.claimed_at),
        "claim_until": t(m.claim_until),
        "handed_to": m.handed_to,
        "handed_by": m.handed_by,
        "handed_at": t(m.handed_at),
        "handed_note": m.handed_note,
        "snoozed_by": m.snoozed_by,
        "snoozed_at": t(m.snoozed_at),
        "snooze_until": t(m.snooze_until),
    }


def read_marks(store: MarkedStore, state: TaskState) -> RunMarks:
    """The marks of ``state``'s run as stored (none from an older run of the same readable ID)."""
    return RunMarks.of(state.run_id, store.run_marks([state.run_id]).get(state.run_id), state.run_uid)


def claim(
    store: MarkedStore,
    run_id: str,
    role: str,
    name: str | None,
    clock: Clock,
    *,
    minutes: int = CLAIM_MINUTES,
    signer: DecisionSigner | None = None,
) -> RunMarks:
    """Claim the waiting run ``run_id`` for ``minutes`` as ``name`` (``role``); claiming a run
    one already holds renews it. Returns the marks as written.

    Raises:
        ApprovalRefused: no name or one that is not plain text, a run that is not waiting (says
            who decided it), a role that may not decide the run (a claim keeps it from those who
            may: :func:`core.engine.rulebook.may_mark`), a claim by someone else who may decide it
            that still stands (says who and since when; one by someone who may not, made before
            marks followed the decision rules, is replaced), a race with another mark. Nothing
            is written.
        UnknownRole, RunNotFound, CorruptCheckpoint.
    """
    name = _who(role, name)
    state = _waiting(store, run_id, "claim")
    _may(state, role, "claim")
    now = clock.now()
    marks = read_marks(store, state)
    if marks.claimed(now) and name_key(marks.claimed_by or "") != name_key(name) and _may_decide_claim(state, marks):
        raise ApprovalRefused(f"{marks.claim_line(now)} Nothing was claimed; ask them, or decide it knowing they are on it.")
    until = now + timedelta(minutes=minutes)
    row = {"claimed_by": name, "claimed_role": role, "claimed_at": iso(now), "claim_until": iso(until)}
    return _write(store, state, marks, row, "claim", role, name, now, f"until {iso(until)}", signer)


def release(
    store: MarkedStore, run_id: str, role: str, name: str | None, clock: Clock, *, signer: DecisionSigner | None = None
) -> RunMarks:
    """Release ``name``'s standing claim on ``run_id``.

    Raises:
        ApprovalRefused: no claim stands, or it is someone else's (they release their own);
            the checks of :func:`claim`. Nothing is written.
    """
    name = _who(role, name)
    state = _waiting(store, run_id, "release")
    now = clock.now()
    marks = read_marks(store, state)
    if not marks.claimed(now):
        raise ApprovalRefused(f"Run {run_id} is not claimed; there is nothing to release.")
    if name_key(marks.claimed_by or "") != name_key(name):
        raise ApprovalRefused(
            f"{marks.claim_line(now)} Only {one_line(marks.claimed_by or '')} releases that claim; nothing changed."
        )
    row = {"claimed_by": None, "claimed_role": None, "claimed_at": None, "claim_until": None}
    return _write(store, state, marks, row, "release", role, name, now, "", signer)


def handover(
    store: MarkedStore,
    run_id: str,
    role: str,
    name: str | None,
    to: str,
    note: str,
    clock: Clock,
    *,
    signer: DecisionSigner | None = None,
    to_role: str | None = None,
) -> RunMarks:
    """Hand the waiting run ``run_id`` to the colleague ``to`` with ``note`` (one line, required),
    as ``name`` (``role``). It clears a standing claim: the run is now the recipient's. The
    caller checks ``to`` against the approvers registry in a shop home and gives their role as
    ``to_role`` (:meth:`core.api.home.Home.mark`): a recipient whose role may not decide the run is
    refused, since the run would then be in nobody's "mine" (None: a practice home, whose names
    have no registered role).

    Raises:
        ApprovalRefused: an empty or multi-line note, a recipient name that is not plain text, a
            maker or a recipient whose role may not decide the run (:func:`core.engine.rulebook.may_mark`,
            :func:`core.engine.rulebook.may_receive`), the checks of :func:`claim`. Nothing is written.
    """
    name = _who(role, name)
    said = not_plain_name(to)
    if said or not to.strip():
        raise ApprovalRefused((said or "Say to whom with --to NAME.").replace("nothing was decided", "nothing was handed over"))
    if not note or not note.strip():
        raise ApprovalRefused("A hand-over needs a note (--note TEXT): say what the colleague should look at.")
    said = not_one_line(note, "note")
    if said:
        raise ApprovalRefused(said.replace("nothing was decided", "nothing was handed over"))
    if len(note.strip()) > NOTE_MAX:
        raise ApprovalRefused(
            f"A hand-over note is one line of at most {NOTE_MAX} characters ({len(note.strip())} given); nothing was handed over."
        )
    if name_key(to.strip()) == name_key(name):
        raise ApprovalRefused(f"{one_line(name)} cannot hand a run to themself; nothing was handed over.")
    state = _waiting(store, run_id, "hand over")
    _may(state, role, "handover")
    # lazy: the rulebook is not needed by `resolver runs`, which reads marks
    from core.engine.rulebook import may_receive

    said = may_receive(state, to.strip(), to_role)
    if said:
        raise ApprovalRefused(said)
    now = clock.now()
    marks = read_marks(store, state)
    to, note = to.strip(), note.strip()
    row = {
        "handed_to": to,
        "handed_by": name,
        "handed_at": iso(now),
        "handed_note": note,
        "claimed_by": None,
        "claimed_role": None,
        "claimed_at": None,
        "claim_until": None,
    }
    return _write(store, state, marks, row, "handover", role, name, now, f"to {to}: {note}", signer)


def snooze(
    store: MarkedStore,
    run_id: str,
    role: str,
    name: str | None,
    until: datetime,
    clock: Clock,
    policy: PolicyData,
    *,
    signer: DecisionSigner | None = None,
) -> RunMarks:
    """Set the waiting run ``run_id`` aside until ``until`` (timezone-aware), as ``name`` (``role``).

    Raises:
        ApprovalRefused: a role that may not decide the run (a snooze hides it from the waiting
            queue of those who may: :func:`core.engine.rulebook.may_mark`), ``until`` is not after now,
            or is past the request's expiry
            (:func:`snooze_deadline`: it would come back too old to approve); the checks of
            :func:`claim`. Nothing is written.
    """
    name = _who(role, name)
    state = _waiting(store, run_id, "snooze")
    _may(state, role, "snooze")
    now = clock.now()
    if until <= now:
        raise ApprovalRefused(f"{iso(until)} is not after now ({iso(now)}); snooze until a later time. Nothing was set aside.")
    deadline = snooze_deadline(state, policy)
    if until > deadline:
        raise ApprovalRefused(
            f"Run {run_id}'s approval request expires at {iso(deadline)} (its evidence reaches the policy's age limit); "
            f"snooze until that time at the latest. Nothing was set aside."
        )
    marks = read_marks(store, state)
    row = {"snoozed_by": name, "snoozed_at": iso(now), "snooze_until": iso(until)}
    return _write(store, state, marks, row, "snooze", role, name, now, f"until {iso(until)}", signer)


def mark_time(text: str, now: datetime) -> datetime:
    """``snooze --until`` (and the app's snooze dialog): an ISO 8601 time (as ``clock set`` reads it, America/Toronto without an
    offset) or a duration from now (as ``prune --older-than`` reads it: ``90m``, ``2h``, ``1d``).
    Raises BadArgument (exit 2)."""
    try:
        return parse_time(text)
    except ValueError:
        pass
    try:
        return now + parse_duration(text)
    except BadArgument:
        raise BadArgument(
            f"Cannot read the time {text!r}: use ISO 8601 (2026-10-12T15:00:00-04:00) or a duration from now (90m, 2h)."
        ) from None
    except OverflowError:  # a new user's 99999999h: past the last date Python keeps
        raise BadArgument(f"The time {text!r} from now is past any date resolver keeps; give a nearer one.") from None
