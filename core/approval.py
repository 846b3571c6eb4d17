"""Approvals: approve and reject a proposal, issue and verify signed approvals.

Rules (issue "Core 2", seed 000 and seed 001):

- Only a ``waiting_approval`` run can be decided; a refusal names who decided it and when.
- The role must reach what the proposal needs (``core.policy``: the highest of its actions).
- An approver may pass the digest they read; a different current digest is refused.
- The decision is a compare-and-set on the checkpoint: of two racing approvers exactly one is
  recorded, and the other is told who won.
- An approval carries an HMAC-SHA256 signature over the run's unique identity (``run_uid``,
  never the readable run ID, which a reset gives out again: issue 9), digest, role, name and
  time, with a key kept in the home folder (``approval.key``, mode 0600, made on first use). Approvals are
  server-issued (seed 001, "Forged approval on resume"): :func:`verify` refuses any that does not
  verify, so the executor hands the run to a person with nothing written.
- Every decision is appended to the audit table, with the run's ``run_uid``.
- Operation IDs derive from the ``run_uid`` too (:func:`core.state.operation_id`), so an old
  decision never verifies on a new run that reuses a readable ID.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from core.auditchain import AuditMoved
from core.checkpoint import CheckpointStore
from core.clock import Clock, iso
from core.data import PolicyData, load_policy
from core.errors import ApprovalRefused, StaleCheckpoint
from core.policy import ROLE_LABELS, check_role, may_approve, proposal_role, who_may_approve
from core.rulebook import decided_by, not_decidable, role_too_low, stale_digest
from core.state import Action, Approval, Operation, Proposal, Rejection, ReplyAction, TaskState, operation_id

if TYPE_CHECKING:
    from core.signing import DecisionSigner


def load_key(path: Path) -> bytes:
    """The approval signing key in ``path``, created (32 random bytes, hex, mode 0600) if absent.

    Creation is atomic: the key is written to a private temporary file and linked into place,
    so a process or thread racing to create it reads either nothing or the whole key, never an
    empty file (two approvers signing at once on a new home found this).
    """
    path = Path(path)
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(secrets.token_hex(32) + "\n")
    try:
        os.link(tmp, path)  # fails if another process linked its key first: theirs wins
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return bytes.fromhex(path.read_text(encoding="ascii").strip())


def sign(key: bytes, run_uid: str, digest: str, role: str, name: str, at: datetime) -> str:
    """HMAC-SHA256 (hex) over the run's ``run_uid``, digest, role, name and time (ISO 8601).

    A run migrated from release 0.1.0 has ``run_uid == run_id``, the string 0.1.0 signed, so
    its approvals still verify.
    """
    message = "\n".join((run_uid, digest, role, name, iso(at))).encode("utf-8")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def _not_waiting(state: TaskState) -> ApprovalRefused:
    return ApprovalRefused(not_decidable(state))


def _digest_matches(given: str | None, current: str) -> bool:
    if not given:
        return True
    given = given.strip().lower().removeprefix("sha256:")
    return given == current or (len(given) >= 12 and current.startswith(given))


def _load_waiting(store: CheckpointStore, run_id: str, digest: str | None) -> tuple[TaskState, Proposal]:
    """Load a run that waits for a decision on the proposal whose digest the person read."""
    state = store.load(run_id)
    if state.status != "waiting_approval" or state.proposal is None:
        raise _not_waiting(state)
    current = state.proposal.digest
    if not _digest_matches(digest, current):
        raise ApprovalRefused(stale_digest(digest or "", current))
    return state, state.proposal


def plan_operations(state: TaskState) -> list[Operation]:
    """The operations an approval commits to: each action in order, then the reply draft, with
    IDs derived from the run's ``run_uid``."""
    actions: list[Action] = list(state.proposal.actions) if state.proposal else []
    if state.proposal and state.proposal.reply_draft.strip():
        actions.append(ReplyAction(order_id=state.order_id, customer_id=state.customer_id, text=state.proposal.reply_draft))
    return [Operation(operation_id=operation_id(state.run_uid, i, a), index=i, action=a) for i, a in enumerate(actions)]


def _decide(store: CheckpointStore, state: TaskState, audit: dict) -> TaskState:
    try:
        return store.save(state, audit=audit)
    except AuditMoved:  # issue 14: signed over an audit row that is no longer the newest; the caller signs again
        raise
    except StaleCheckpoint:
        fresh = store.load(state.run_id)
        who = decided_by(fresh)
        raise ApprovalRefused(
            f"Run {state.run_id} was {who or 'changed by someone else'} while you were deciding; "
            f"it is {fresh.status}. Your decision was not recorded."
        ) from None


def approve(
    store: CheckpointStore,
    key: bytes,
    run_id: str,
    role: str,
    name: str | None = None,
    digest: str | None = None,
    clock: Clock | None = None,
    expect_version: int | None = None,
    signer: DecisionSigner | None = None,
) -> TaskState:
    """Approve the current proposal of ``run_id`` as ``role`` (and ``name``); returns the state,
    now ``executing`` with its operations planned and a signed approval.

    ``digest`` is the digest the approver read (full, or the 12-digit short form);
    ``expect_version`` the checkpoint version they read (the app passes both).
    ``signer`` (a shop home, issue 14): the unlocked approver; the role and name are theirs and
    the approval is signed with their Ed25519 key (:mod:`core.signing`) instead of the HMAC key.

    Raises:
        ApprovalRefused: not waiting_approval (says who decided it and when), role too low,
            stale digest, or a lost race (says who won). Nothing is changed.
        UnknownRole, RunNotFound, CorruptCheckpoint.
    """
    check_role(role)
    clock = clock or store.clock
    state, proposal = _load_waiting(store, run_id, digest)
    if expect_version is not None and state.version != expect_version:
        raise ApprovalRefused(f"Run {run_id} changed since you read it ({decided_by(state) or 'new checkpoint'}); read it again.")
    current = proposal.digest
    needed = proposal_role(proposal.actions)
    if not may_approve(role, needed):
        raise ApprovalRefused(role_too_low(run_id, role, needed))
    name = (name or ROLE_LABELS[role]).strip() or ROLE_LABELS[role]
    at = clock.now()
    seal = signer.seal(store, "approve", state.run_uid, current, at) if signer else None  # issue 14
    signature = seal.signature if seal else sign(key, state.run_uid, current, role, name, at)
    state.approval = Approval(role=role, name=name, at=at, digest=current, signature=signature)
    state.status = "executing"
    state.operations = plan_operations(state)
    state.log("approved", f"approved by {name} ({role}), digest {current[:12]}", at=at, role=role, name=name, digest=current)
    return _decide(store, state, {"decision": "approve", "role": role, "name": name, "digest": current, "at": iso(at),
                                 "run_uid": state.run_uid, **(seal.audit if seal else {})})


def reject(
    store: CheckpointStore,
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
    clock = clock or store.clock
    if not reason or not reason.strip():
        raise ApprovalRefused("A rejection needs a reason: say what is wrong with the proposal.")
    state, proposal = _load_waiting(store, run_id, digest)
    current = proposal.digest
    name = (name or ROLE_LABELS[role]).strip() or ROLE_LABELS[role]
    at = clock.now()
    state.rejection = Rejection(role=role, name=name, at=at, digest=current, reason=reason.strip())
    seal = signer.seal(store, "reject", state.run_uid, current, at, reason.strip()) if signer else None  # issue 14
    state.status = "handed_to_person"
    state.log("rejected", f"rejected by {name} ({role}): {reason.strip()}", at=at, role=role, name=name, digest=current)
    return _decide(store, state, {"decision": "reject", "role": role, "name": name, "digest": current, "at": iso(at),
                                 "detail": reason.strip(), "run_uid": state.run_uid, **(seal.audit if seal else {})})


def verify(state: TaskState, key: bytes, policy: PolicyData | None = None, *, signed: bool = True) -> str | None:
    """Why the run's approval must not be executed now, or None if it holds.

    Checks (at execution, for every write): an approval exists and no rejection; the digest is
    the current proposal's (not edited after approval); the operations are exactly the ones the
    proposal plans (none added, dropped or edited, IDs bound to this run's ``run_uid``); the
    signature verifies (issued by this code with this key, for this ``run_uid``); the role still suffices under the current policy.
    ``signed=False`` skips the HMAC check: a shop home checks the approver's Ed25519 signature
    instead (:func:`core.signing.check_approval`, issue 14).
    """
    a = state.approval
    if a is None:
        return "the run has no approval"
    if state.rejection is not None:
        return "the proposal was rejected"
    if state.proposal is None or a.digest != state.proposal.digest:
        return "the proposal changed after it was approved (digest mismatch)"
    expected = sign(key, state.run_uid, a.digest, a.role, a.name, a.at)
    if signed and not hmac.compare_digest(expected, a.signature):
        return "the approval's signature does not verify: it was not issued by resolver's approval code"
    planned = [(op.operation_id, op.action) for op in plan_operations(state)]
    if [(op.operation_id, op.action) for op in state.operations] != planned:
        return "the operations are not the ones the approved proposal plans"
    try:
        needed = proposal_role(state.proposal.actions, policy or load_policy())
        if not may_approve(a.role, needed):
            return f"the policy now needs {who_may_approve(needed)} and the approval is by {ROLE_LABELS.get(a.role, a.role)}"
    except Exception as exc:  # an unknown role in a forged approval, a broken policy
        return f"the approval cannot be checked against the policy ({exc})"
    return None
