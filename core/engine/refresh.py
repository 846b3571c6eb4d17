"""Refresh the evidence of a waiting run.

The read-only lookups behind the evidence run again against the world now (no model call); the
preconditions are derived again from the fresh evidence. The proposal's actions, rule, reason and
reply draft stay as recorded (the recorded model is not asked again); its ``version`` goes up by
one, so its digest is new and any earlier approval (which names the old digest) is void.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.contract.store import AuditLog, RunStore
from core.contract.world import World
from core.engine.preconditions import bind
from core.engine.rulebook import not_decidable
from core.ground.clock import Clock, iso
from core.ground.errors import ApprovalRefused
from core.ground.state import Evidence, TaskState

if TYPE_CHECKING:
    from core.engine.signing import DecisionSigner


class RefreshedStore(RunStore, AuditLog, Protocol):
    """What a refresh needs of a store: the run, and the audit its signed decision is sealed into."""


def refresh(
    store: RefreshedStore,
    world: World,
    run_id: str,
    clock: Clock,
    *,
    role: str = "",
    name: str = "",
    signer: DecisionSigner | None = None,
) -> TaskState:
    """Re-read the evidence of ``run_id`` and save a new proposal version; returns the state.

    A refresh voids earlier approvals, so it is recorded like a decision: the audit row names
    who refreshed (``role``, ``name``), and in a shop home it is signed by the approver
    ``signer`` over the audit's newest hash (:meth:`core.engine.signing.DecisionSigner.seal`, decision
    ``refresh``, the previous digest as its detail), which ``resolver audit verify`` checks.

    Raises:
        ApprovalRefused: the run is not ``waiting_approval`` (an executing or final run keeps the
            proposal it was approved or decided on).
        RunNotFound, CorruptCheckpoint, StaleCheckpoint (someone saved the run meanwhile).
    """
    state = store.load(run_id)
    if state.status != "waiting_approval" or state.proposal is None:
        raise ApprovalRefused(not_decidable(state))
    now = clock.now()
    before = state.proposal
    state.evidence = [
        Evidence(step=ev.step, tool=ev.tool, args=ev.args, result=result, seq=seq)
        for ev in state.evidence
        for result, seq in [world.read_tool(ev.tool, dict(ev.args))]
    ]
    state.approval = None  # void: it named the old digest
    state.proposal = bind(state, before, now, version=before.version + 1)
    state.updated_at = now
    state.log(
        "refreshed",
        f"evidence read again; proposal version {state.proposal.version}, digest "
        f"{before.short_digest} then {state.proposal.short_digest}",
        at=now,
        digest=state.proposal.digest,
        previous=before.digest,
    )
    detail = f"previous digest {before.digest}"
    seal = signer.seal(store, "refresh", state.run_uid, state.proposal.digest, now, detail) if signer else None
    return store.save(
        state,
        audit={
            "decision": "refresh",
            "role": signer.role if signer else role,
            "name": signer.name if signer else name,
            "digest": state.proposal.digest,
            "at": iso(now),
            "detail": detail,
            "run_uid": state.run_uid,
            **(seal.audit if seal else {}),
        },
    )
