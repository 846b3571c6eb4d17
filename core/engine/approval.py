"""Approvals: approve and reject a proposal, issue and verify signed approvals.

Rules (seed 000 and seed 001):

- Only a ``waiting_approval`` run can be decided; a refusal names who decided it and when.
- The role must reach what the proposal needs (``core.engine.policy``: the highest of its actions).
- An approver may pass the digest they read; a different current digest is refused.
- The decision is a compare-and-set on the checkpoint: of two racing approvers exactly one is
  recorded, and the other is told who won.
- An approval carries an HMAC-SHA256 signature over the run's unique identity (``run_uid``,
  never the readable run ID, which a reset gives out again), digest, role, name and
  time, with a key kept in the home folder (``approval.key``, mode 0600, made on first use). Approvals are
  server-issued (seed 001, "Forged approval on resume"): :func:`verify` refuses any that does not
  verify, so the executor hands the run to a person with nothing written.
- Every decision is appended to the audit table, with the run's ``run_uid``.
- An approval is bound to the world its approver read: it carries what the read-only
  lookups returned when the request was read (:class:`~core.ground.state.WorldSeen`); the lookups run
  again when the approval is recorded, and any difference refuses it
  (:class:`~core.ground.errors.WorldChanged`, with the section as it is now). Its signature covers
  that data's fingerprint.
- Operation IDs derive from the ``run_uid`` too (:func:`core.ground.state.operation_id`), so an old
  decision never verifies on a new run that reuses a readable ID.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from core.contract.audit import AuditMoved
from core.contract.store import AuditLog, RunStore
from core.contract.world import World
from core.engine import preconditions
from core.engine.policy import ROLE_LABELS, check_role, may_approve, proposal_role, who_may_approve
from core.engine.preconditions import drift, drift_lines, evidence_time
from core.engine.proposal_rules import TicketFacts, WorldFacts, standing_problems
from core.engine.rulebook import decided_by, not_decidable, person, role_too_low, stale_digest
from core.ground.clock import Clock, iso
from core.ground.data import PolicyData, load_policy
from core.ground.errors import ApprovalRefused, ResolverError, StaleCheckpoint, WorldChanged
from core.ground.safetext import not_one_line, not_plain_name
from core.ground.state import Action, Approval, Operation, Proposal, Rejection, ReplyAction, TaskState, WorldSeen, operation_id

REASON_REQUIRED = "A rejection needs a reason: say what is wrong with the proposal."
"""The refusal of a rejection without a reason (every face says it before any passphrase)."""

if TYPE_CHECKING:
    from core.engine.signing import DecisionSigner


class ApprovalStore(RunStore, AuditLog, Protocol):
    """What an approval or a rejection needs of a store: the run and the audit its decision is recorded in."""


def sign(key: bytes, run_uid: str, digest: str, role: str, name: str, at: datetime, world: str | None = None) -> str:
    """HMAC-SHA256 (hex) over the run's ``run_uid``, digest, role, name and time (ISO 8601), and
    ``world``, the fingerprint of what the lookups returned (:attr:`WorldSeen.fingerprint`),
    when the approval carries it.

    A run migrated from release 0.1.0 has ``run_uid == run_id``, the string 0.1.0 signed, so
    its approvals still verify; an approval saved before schema 5 has no world and is signed
    over the same message as before.
    """
    parts = (run_uid, digest, role, name, iso(at)) + ((f"world {world}",) if world is not None else ())
    message = "\n".join(parts).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _not_waiting(state: TaskState) -> ApprovalRefused:
    return ApprovalRefused(not_decidable(state))


def digest_matches(given: str | None, current: str) -> bool:
    """Whether the digest a person gave (``--digest``: the 64 hex digits, ``sha256:`` and all,
    or at least the first 12) is ``current``'s; no digest matches (nothing was bound)."""
    if not given:
        return True
    given = given.strip().lower().removeprefix("sha256:")
    return given == current or (len(given) >= 12 and current.startswith(given))


def _load_waiting(store: ApprovalStore, run_id: str, digest: str | None) -> tuple[TaskState, Proposal]:
    """Load a run that waits for a decision on the proposal whose digest the person read."""
    state = store.load(run_id)
    if state.status != "waiting_approval" or state.proposal is None:
        raise _not_waiting(state)
    current = state.proposal.digest
    if not digest_matches(digest, current):
        raise ApprovalRefused(stale_digest(digest or "", current))
    return state, state.proposal


def _age(seconds: float) -> str:
    s = int(seconds)
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m"


def overlapping_effects(store: ApprovalStore, state: TaskState) -> str | None:
    """One effect per ticket: why approving ``state`` would repeat an effect of
    another run of the same ticket, or None. Another run that is ``executing`` blocks; a ``done``
    one blocks when one of its done operations has an effect kind this proposal also plans on the
    same order. The sentence names the other run and what it did."""
    if state.proposal is None:
        return None
    mine = {(op.action.type, op.action.order_id) for op in plan_operations(state)}
    for other in store.runs_of_task(state.task_id):
        if other.run_id == state.run_id or other.status not in ("executing", "done"):
            continue
        if other.status == "executing":
            return f"{other.run_id} of the same ticket is executing; one effect per ticket: wait for it, or reject this run."
        try:
            done = store.load_view(other.run_id)  # its operations and events: the read side
        except Exception:  # an unreadable run cannot prove it did nothing: fail closed
            return f"{other.run_id} of the same ticket cannot be read, so it may already have acted; reject this run."
        for op in done.operations:
            if op.status == "done" and (op.action.type, op.action.order_id) in mine:
                result = op.result or {}
                ref = next(
                    (
                        str(v)
                        for k, v in result.items()
                        if k.endswith("_id") and k not in ("order_id", "payment_id", "customer_id")
                    ),
                    "",
                )
                what = {
                    "request_refund": f"refunded {result.get('amount', '')} on",
                    "reship_item": "reshipped an item on",
                    "create_return_label": "made a return label on",
                    "send_reply": "sent a reply about",
                }[op.action.type]
                when = next((e.at for e in done.events if e.kind == "done" and op.operation_id in e.message), done.updated_at)
                return (
                    f"{done.run_id} already {what} {op.action.order_id} ({ref}) at {iso(when)}; "
                    "one effect per ticket: reject this run."
                )
    return None


_EFFECT_OF = {"request_refund": "refund", "reship_item": "reship", "create_return_label": "return_label", "send_reply": "reply"}
_DID = {
    "refund": "refunded on",
    "reship": "reshipped an item on",
    "return_label": "made a return label on",
    "reply": "sent a reply about",
}


def effects_of_ticket(world: World, state: TaskState) -> str | None:
    """One effect per ticket, from the practice world's own records (a new
    user's finding): why approving ``state`` would repeat an effect that another run of the same
    ticket already made on the same order, or None. Unlike :func:`overlapping_effects` it does
    not need the other run's checkpoint, so a run deleted by ``prune`` or ``reset --run`` still
    counts. A run is known by the writer the world recorded (its run ID, which starts with the
    ticket's ID); this run's own operation IDs (from its ``run_uid``) never count against it."""
    if state.proposal is None:
        return None
    planned = plan_operations(state)
    own = {op.operation_id for op in planned}
    wanted = {(_EFFECT_OF[op.action.type], op.action.order_id) for op in planned}
    for order_id in sorted({order for _, order in wanted}):
        for e in world.effects_on(order_id, None, exclude=own):
            actor = str(e.get("actor") or "")
            if (e.get("kind"), order_id) in wanted and actor.startswith(f"{state.task_id}-"):
                return (
                    f"{actor} already {_DID[e['kind']]} {order_id} ({e.get('id', '')}) at {e.get('at', '')}; "
                    "one effect per ticket: reject this run."
                )
    return None


def world_problem(
    store: ApprovalStore,
    state: TaskState,
    now: datetime,
    *,
    world: World | None = None,
    practice: bool = True,
    policy: PolicyData | None = None,
) -> tuple[str, str] | None:
    """Why ``state`` must not be approved now, as ``(kind, sentence)``: ``rules`` (the proposal
    breaks a proposal rule on facts that never change, :func:`rules_broken`), ``expiry``
    (evidence older than the policy allows), ``duplicate`` (one effect per ticket) or
    ``precondition`` (shop homes only: a precondition fails already). None when it may."""
    policy = policy or load_policy()
    broken = rules_broken(state, world, policy)
    if broken:
        return ("rules", f"Run {state.run_id}'s proposal breaks the proposal rules, so it may not be approved: {broken}")
    age = (now - evidence_time(state)).total_seconds()
    if age > policy.evidence_max_age_s:
        return (
            "expiry",
            f"The evidence of {state.run_id} is {_age(age)} old; the policy allows "
            f"{_age(policy.evidence_max_age_s)} at approval. Refresh it first: resolver refresh {state.run_id}",
        )
    dup = overlapping_effects(store, state) or (effects_of_ticket(world, state) if world is not None else None)
    if dup:
        return ("duplicate", f"Run {state.run_id}: {dup}")
    if world is not None and not practice and state.proposal is not None:
        own = {op.operation_id for op in state.operations}
        failing = [why for pre in state.proposal.preconditions if (why := world.precondition_problem(pre, own))]
        if failing:
            return (
                "precondition",
                f"The world changed since the agent looked: {'; '.join(failing)}. Nothing was written; "
                f"refresh the evidence (resolver refresh {state.run_id}) or reject the run.",
            )
    return None


def plan_operations(state: TaskState) -> list[Operation]:
    """The operations an approval commits to: each action in order, then the reply draft, with
    IDs derived from the run's ``run_uid``."""
    actions: list[Action] = list(state.proposal.actions) if state.proposal else []
    if state.proposal and state.proposal.reply_draft.strip():
        recipient = state.proposal.recipient or state.customer_id  # the digest covers the recipient
        actions.append(ReplyAction(order_id=state.order_id, customer_id=recipient, text=state.proposal.reply_draft))
    return [Operation(operation_id=operation_id(state.run_uid, i, a), index=i, action=a) for i, a in enumerate(actions)]


def _one_line(value: str | None, what: str) -> None:
    """Refuse a decision's reason that spans lines (a new user's finding: a reason holding
    "\nStatus: done" printed a false status line on every face), or a name that spans lines or
    holds a control or invisible character (:func:`core.ground.safetext.not_plain_name`). Raises
    ApprovalRefused; nothing is changed."""
    said = not_plain_name(value) if what == "name" else not_one_line(value, what)
    if said:
        raise ApprovalRefused(said)


def _decide(store: ApprovalStore, state: TaskState, audit: dict) -> TaskState:
    try:
        return store.save(state, audit=audit)
    except AuditMoved:  # signed over an audit row that is no longer the newest; the caller signs again
        raise
    except StaleCheckpoint:
        fresh = store.load(state.run_id)
        who = decided_by(fresh)
        raise ApprovalRefused(
            f"Run {state.run_id} was {who or 'changed by someone else'} while you were deciding; "
            f"it is {fresh.status}. Your decision was not recorded."
        ) from None


def approve(
    store: ApprovalStore,
    key: bytes,
    run_id: str,
    role: str,
    name: str | None = None,
    digest: str | None = None,
    clock: Clock | None = None,
    expect_version: int | None = None,
    *,
    world: World | None = None,
    practice: bool = True,
    policy: PolicyData | None = None,
    signer: DecisionSigner | None = None,
    seen: WorldSeen | None = None,
) -> TaskState:
    """Approve the current proposal of ``run_id`` as ``role`` (and ``name``); returns the state,
    now ``executing`` with its operations planned and a signed approval.

    ``seen`` is what the read-only lookups returned when the approver read the request
    (:func:`core.engine.preconditions.look`, which the faces call before they show it). With ``world``
    given the lookups run again here; when ``seen`` is given and they differ, the approval is
    refused. The approval carries the lookups as they are now (``Approval.world``).

    ``digest`` is the digest the approver read (full, or the 12-digit short form);
    ``expect_version`` the checkpoint version they read (the app passes both).
    ``signer`` (a shop home): the unlocked approver; the role and name are theirs and
    the approval is signed with their Ed25519 key (:mod:`core.engine.signing`) instead of the HMAC key.

    Raises:
        ApprovalRefused: not waiting_approval (says who decided it and when), role too low,
            stale digest, or a lost race (says who won). Nothing is changed.
        ApprovalRefused (each with an audit row): the evidence is older than the
            policy's ``evidence_max_age_s``; another run of the ticket is executing or is done
            with an overlapping effect; with ``world`` given, in a shop home (``practice`` False),
            a precondition already fails now. A practice home goes on to the write there (the
            lesson's moment: the service refuses at the write).
        WorldChanged (with an audit row ``refused:world``): the lookups return
            something else than ``seen``; its ``lines`` are the section as it is now.
        UnknownRole, RunNotFound, CorruptCheckpoint.
    """
    check_role(role)
    _one_line(name, "name")
    clock = clock or store.clock
    state, proposal = _load_waiting(store, run_id, digest)
    problem = world_problem(store, state, clock.now(), world=world, practice=practice, policy=policy)
    if problem is not None:
        kind, why = problem
        store.append_audit(
            {
                "run_id": run_id,
                "decision": f"refused:{kind}",
                "role": role,
                "name": name or ROLE_LABELS.get(role, role),
                "digest": proposal.digest,
                "at": iso(clock.now()),
                "detail": why,
                "run_uid": state.run_uid,
            }
        )
        raise ApprovalRefused(why)
    if expect_version is not None and state.version != expect_version:
        raise ApprovalRefused(f"Run {run_id} changed since you read it ({decided_by(state) or 'new checkpoint'}); read it again.")
    current = proposal.digest
    needed = proposal_role(proposal.actions)
    if not may_approve(role, needed):
        raise ApprovalRefused(role_too_low(run_id, role, needed))
    name = (name or ROLE_LABELS[role]).strip() or ROLE_LABELS[role]
    now_seen = _world_again(store, state, world, seen, role, name, clock) if world is not None else None
    at = clock.now()
    fingerprint = now_seen.fingerprint if now_seen is not None else None
    operations = plan_operations(state)
    seal = (
        signer.seal(store, "approve", state.run_uid, current, at, world=fingerprint, ops=[op.operation_id for op in operations])
        if signer
        else None
    )  # the signature binds the world seen and the operations too
    signature = seal.signature if seal else sign(key, state.run_uid, current, role, name, at, fingerprint)
    state.approval = Approval(role=role, name=name, at=at, digest=current, signature=signature, proposal=proposal, world=now_seen)
    state.status = "executing"
    state.operations = operations
    state.log("approved", f"approved by {person(name, role)}, digest {current[:12]}", at=at, role=role, name=name, digest=current)
    return _decide(
        store,
        state,
        {
            "decision": "approve",
            "role": role,
            "name": name,
            "digest": current,
            "at": iso(at),
            "run_uid": state.run_uid,
            **(seal.audit if seal else {}),
        },
    )


def _world_again(
    store: ApprovalStore, state: TaskState, world: World, seen: WorldSeen | None, role: str, name: str, clock: Clock
) -> WorldSeen:
    """Run the lookups again as the approval is recorded; refuse with the section as it
    is now, and an audit row ``refused:world``, when they differ from ``seen``; unless the run is
    no longer waiting: then another approver won and wrote first, and the refusal says who, as a
    lost race does (a finding of the PostgreSQL race rounds: 1 loser in 700 was told the world
    changed)."""
    now_seen = preconditions.look(state, world)  # found at the call, so a race test can run the winner inside it
    if seen is None or seen.fingerprint == now_seen.fingerprint:
        return now_seen
    current = store.load(state.run_id)
    if current.status != "waiting_approval":  # another approver won and wrote first: say who (a lost race)
        raise ApprovalRefused(not_decidable(current))
    d = drift(state, world, now_seen)
    why = (
        f"The world changed while you read run {state.run_id}: the lookups behind its evidence give other results "
        "now. Nothing was decided; read the section again, then decide."
    )
    store.append_audit(
        {
            "run_id": state.run_id,
            "decision": "refused:world",
            "role": role,
            "name": name,
            "digest": state.proposal.digest if state.proposal else "",
            "at": iso(clock.now()),
            "detail": why,
            "run_uid": state.run_uid,
        }
    )
    raise WorldChanged(why, drift_lines(d.differences, d.effects, d.failing, d.unread))


def reject(
    store: ApprovalStore,
    run_id: str,
    role: str,
    reason: str,
    name: str | None = None,
    digest: str | None = None,
    clock: Clock | None = None,
    signer: DecisionSigner | None = None,
) -> TaskState:
    """Reject the proposal of ``run_id`` with a required ``reason``; the run goes to
    ``handed_to_person`` and can never execute. ``signer``: as for :func:`approve` (the reason
    is signed too, and kept in the audit row).

    Raises:
        ApprovalRefused: empty reason, not waiting_approval, stale digest or a lost race.
        UnknownRole, RunNotFound, CorruptCheckpoint.
    """
    check_role(role)
    _one_line(name, "name")
    _one_line(reason, "reason")
    clock = clock or store.clock
    if not reason or not reason.strip():
        raise ApprovalRefused(REASON_REQUIRED)
    state, proposal = _load_waiting(store, run_id, digest)
    current = proposal.digest
    name = (name or ROLE_LABELS[role]).strip() or ROLE_LABELS[role]
    at = clock.now()
    state.rejection = Rejection(role=role, name=name, at=at, digest=current, reason=reason.strip())
    seal = signer.seal(store, "reject", state.run_uid, current, at, reason.strip()) if signer else None
    state.status = "handed_to_person"
    state.log("rejected", f"rejected by {person(name, role)}: {reason.strip()}", at=at, role=role, name=name, digest=current)
    return _decide(
        store,
        state,
        {
            "decision": "reject",
            "role": role,
            "name": name,
            "digest": current,
            "at": iso(at),
            "detail": reason.strip(),
            "run_uid": state.run_uid,
            **(seal.audit if seal else {}),
        },
    )


def rules_broken(state: TaskState, world: World | None = None, policy: PolicyData | None = None) -> str:
    """The proposal rules that ``state``'s proposal breaks on facts that never change
    (:func:`core.engine.proposal_rules.standing_problems`: its order the ticket's, payments of their
    order within what they captured, items of the order ...), as one line of sentences, or ''.

    The rules were checked when the proposal was made; they are asked again at a decision and
    before every write, so a proposal saved by an earlier release, or written into the store by
    hand, is never approved or paid because it is already waiting. ``world`` reads the records
    where given, else the practice world as shipped."""
    if state.proposal is None or not state.proposal.actions:
        return ""
    ticket = TicketFacts(order_id=state.order_id, customer_id=state.customer_id)
    try:
        broken = standing_problems(state.proposal.actions, ticket, WorldFacts(world) if world is not None else None, policy)
    except ResolverError as exc:  # the world cannot be read: the write path says so in its own words
        return f"the proposal rules cannot be checked ({exc})"
    return " ".join(b.text() for b in broken)


def verify(state: TaskState, key: bytes, policy: PolicyData | None = None, *, signed: bool = True) -> str | None:
    """Why the run's approval must not be executed now, or None if it holds.

    Checks (at execution, for every write): an approval exists and no rejection; the digest is
    the current proposal's (not edited after approval); the operations are exactly the ones the
    proposal plans (none added, dropped or edited, IDs bound to this run's ``run_uid``); the
    signature verifies (issued by this code with this key, for this ``run_uid``); the role still suffices under the current policy.
    ``signed=False`` skips the HMAC check: a shop home checks the approver's Ed25519 signature
    instead (:func:`core.engine.signing.check_approval`).
    """
    a = state.approval
    if a is None:
        return "the run has no approval"
    if state.rejection is not None:
        return "the proposal was rejected"
    if state.proposal is None or a.digest != state.proposal.digest:
        return "the proposal changed after it was approved (digest mismatch)"
    expected = sign(key, state.run_uid, a.digest, a.role, a.name, a.at, a.world.fingerprint if a.world else None)
    if signed and not hmac.compare_digest(expected, a.signature):
        return "the approval's signature does not verify: it was not issued by resolver's approval code"
    planned = [(op.operation_id, op.action) for op in plan_operations(state)]
    if [(op.operation_id, op.action) for op in state.operations] != planned:
        return "the operations are not the ones the approved proposal plans"
    broken = rules_broken(state)
    if broken:
        return f"the proposal breaks the proposal rules ({broken})"
    try:
        needed = proposal_role(state.proposal.actions, policy or load_policy())
        if not may_approve(a.role, needed):
            return f"the policy now needs {who_may_approve(needed)} and the approval is by {ROLE_LABELS.get(a.role, a.role)}"
    except Exception as exc:  # an unknown role in a forged approval, a broken policy
        return f"the approval cannot be checked against the policy ({exc})"
    return None
