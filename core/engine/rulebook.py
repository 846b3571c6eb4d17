"""The rulebook: what a person may do with a run now, and why not, in one sentence.

Both faces ask :func:`offers`: the CLI refuses with its sentence (exit 1), the app dims the key
and prints ``Not offered: a approve: <sentence>``. :mod:`core.engine.approval` raises the same
sentences when a decision reaches the store, so a person reads one sentence whichever way they
came in. The role a proposal needs is worked out from the current policy
(:func:`core.engine.policy.proposal_role`), the same check the approval and the executor make, never
from a column saved at the last checkpoint.

Rules (seeds 000 and 001):

- ``approve`` and ``reject``: only a run ``waiting_approval`` with a proposal; once decided, the
  sentence names who decided it and when. Both also need a role at least the one the proposal
  needs (an agent rejecting a run that needs a team lead decides above their role).
- ``claim``, ``handover``, ``snooze`` (:data:`MARK_ACTIONS`, :func:`may_mark`): the role the
  proposal needs, as a decision; a hand-over's recipient too (:func:`may_receive`). A refused mark
  is ``ApprovalRefused`` (the CLI's exit 4, as a refused decision).
- ``resume``: any run that is not final (``done``, ``handed_to_person``, ``stopped``).
- ``trace``: always.
- ``compare``: when the ticket has another run.

A lease held by another executor is not predicted here (its holder may have died a second ago):
the executor's :class:`~core.ground.errors.LeaseHeld` sentence is what both faces show.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.engine.policy import ROLE_LABELS, UnknownRole, check_role, may_approve, proposal_role, who_may_approve
from core.ground.clock import iso
from core.ground.safetext import one_line
from core.ground.state import FINAL_STATUSES, TaskState

Action = Literal["approve", "reject", "resume", "trace", "compare"]
MarkAction = Literal["claim", "handover", "snooze"]
ACTIONS: tuple[Action, ...] = ("approve", "reject", "resume", "trace", "compare")
"""Every action a person can take on one run, in the order the app lists its keys."""

MARK_ACTIONS: tuple[MarkAction, ...] = ("claim", "handover", "snooze")
"""The marks that need the role the run's proposal needs (:func:`may_mark`): a claim, a hand-over
and a set-aside (snooze) each keep a run from the people who may decide it (a second claim is
refused, a snooze leaves "waiting", a hand-over leaves every other "mine"), so only someone who
may decide the run may put one on it. Releasing one's own claim gives the run back and needs no
role."""

_MARK_VERBS: dict[str, str] = {"claim": "claim", "handover": "hand over", "snooze": "snooze"}
_MARK_DOING: dict[str, str] = {"claim": "claim it", "handover": "hand it over", "snooze": "set it aside"}
_MARK_NOUNS: dict[str, str] = {"claim": "claimed", "handover": "handed over", "snooze": "set aside"}


@dataclass(frozen=True)
class Approver:
    """The person at the keyboard: ``role`` (agent, team_lead, grace) and the ``name`` recorded
    with each decision (default: the role's label).

    Raises:
        UnknownRole: ``role`` is not one of the policy's roles.
    """

    role: str
    name: str = ""

    def __post_init__(self) -> None:
        check_role(self.role)
        if not self.name.strip():
            object.__setattr__(self, "name", ROLE_LABELS[self.role])

    @property
    def label(self) -> str:
        """``Tomás (role team lead)``: the name and the role's label (:func:`person`)."""
        return person(self.name, self.role)


def role_label(role: str | None) -> str:
    """``team lead`` for ``team_lead``; an unknown or empty role is shown as it is."""
    return ROLE_LABELS.get(role or "", role or "")


def person(name: str | None, role: str | None) -> str:
    """``Grace (role grace)``, ``Tomás (role team lead)``: a person and their role in prose, the
    role by its label and said to be one (so the demo's person Grace and the role
    ``grace`` are told apart). ``name`` is shown on one line (:func:`core.ground.safetext.one_line`)."""
    return f"{one_line(name or '')} (role {role_label(role)})"


def decided_by(state: TaskState) -> str:
    """``approved by Grace (role grace) at 2026-10-12T09:00:00-04:00`` or the rejection, or ''."""
    if state.approval:
        a = state.approval
        return f"approved by {person(a.name, a.role)} at {iso(a.at)}"
    if state.rejection:
        r = state.rejection
        return f"rejected by {person(r.name, r.role)} at {iso(r.at)}"
    return ""


def not_decidable(state: TaskState) -> str:
    """Why a run that is not waiting cannot be approved or rejected: who decided it and when,
    or its status."""
    who = decided_by(state)
    if who:
        return f"Run {state.run_id} was already {who}; it is {state.status}. Nothing changed."
    return f"Run {state.run_id} is {state.status}, not waiting_approval; there is nothing to decide."


def nothing_to_mark(state: TaskState, verb: str) -> str:
    """Why a run that is not waiting cannot be claimed, released, handed over or snoozed
    (``verb``): its status, who decided it and when, and that there is nothing to
    ``verb`` (a new user's trial: a claim of a done run said only "already approved").
    ``Run X is done (approved by Grace (role grace) at ...); there is nothing to claim.``"""
    who = decided_by(state)
    return f"Run {state.run_id} is {state.status}{f' ({who})' if who else ''}; there is nothing to {verb}. Nothing changed."


def role_too_low(run_id: str, role: str, needed: str) -> str:
    """``You are agent: run T-65273-agent-chat-small-1 needs team lead or above.``"""
    return f"You are {role_label(role)}: run {run_id} needs {who_may_approve(needed)}."


def stale_digest(given: str, current: str) -> str:
    """The digest the person read is not the current proposal's (the proposal changed)."""
    return f"The digest you read ({given}) is not the current proposal's ({current[:12]}); read the request again."


def nothing_to_resume(state: TaskState) -> str:
    """``Nothing to resume: the run is done.``"""
    return f"Nothing to resume: the run is {state.status}."


def only_run(task_id: str) -> str:
    """Compare needs two runs of one ticket."""
    return f"Ticket {task_id} has only this run."


def needed_role(state: TaskState) -> str | None:
    """The role the proposal needs under the current policy, or None without actions."""
    if state.proposal is None or not state.proposal.actions:
        return None
    return proposal_role(state.proposal.actions)


def may_mark(state: TaskState, role: str, action: str) -> str | None:
    """Whether ``role`` may put the mark ``action`` (one of :data:`MARK_ACTIONS`) on the waiting
    run ``state``: None when it may, else one sentence naming the role needed. The rule is the
    decision's (a role at least the one the proposal needs under the current policy), because a
    mark keeps the run from those who may decide it: a claim by someone who cannot decide blocks
    the claims of those who can, a snooze hides the run from their waiting queue. Any other
    action (``release``) needs no role. A run that is not waiting is :func:`nothing_to_mark`'s."""
    if action not in MARK_ACTIONS:
        return None
    if state.status != "waiting_approval" or state.proposal is None:
        return nothing_to_mark(state, _MARK_VERBS[action])
    needed = needed_role(state)
    if needed is None or may_approve(role, needed):
        return None
    return (
        f"You are {role_label(role)}: run {state.run_id} needs {who_may_approve(needed)} to {_MARK_DOING[action]}, "
        f"as to approve or reject it. Nothing was {_MARK_NOUNS[action]}."
    )


def may_receive(state: TaskState, name: str, role: str | None) -> str | None:
    """Whether the colleague ``name`` with ``role`` may be handed the waiting run ``state``: None
    when they may, else one sentence naming them and the role needed. A hand-over puts the run
    in the recipient's "mine" and takes it out of everyone else's, so a recipient who may not
    decide it would leave it in nobody's. ``role`` None (a practice home: its names are not
    registered, so their roles are unknown) is not checked."""
    needed = needed_role(state)
    if role is None or needed is None or may_approve(role, needed):
        return None
    return (
        f"{person(name, role)} may not decide run {state.run_id}: it needs {who_may_approve(needed)}; "
        "hand it to someone who may. Nothing was handed over."
    )


def may_decide(role: str | None, needed: str | None) -> bool:
    """Whether ``role`` may decide a run whose proposal needs ``needed`` (either None or a role
    the policy no longer knows: yes, so that a reader is told rather than left out)."""
    if role is None or not needed:
        return True
    try:
        return may_approve(role, needed)
    except UnknownRole:  # a role the policy no longer knows: say it rather than drop it
        return True


def offers(state: TaskState, approver: Approver, *, others: int = 0) -> dict[Action, str | None]:
    """What ``approver`` may do with ``state`` now: each of :data:`ACTIONS` maps to None when
    offered, else to the one sentence that says why not.

    ``others`` is how many other runs the same ticket has (for ``compare``).
    """
    why: dict[Action, str | None] = dict.fromkeys(ACTIONS)
    if state.status != "waiting_approval" or state.proposal is None:
        why["approve"] = why["reject"] = not_decidable(state)
    else:
        needed = needed_role(state)
        if needed is not None and not may_approve(approver.role, needed):
            why["approve"] = why["reject"] = role_too_low(state.run_id, approver.role, needed)
    if state.status in FINAL_STATUSES:
        why["resume"] = nothing_to_resume(state)
    if others <= 0:
        why["compare"] = only_run(state.task_id)
    return why
