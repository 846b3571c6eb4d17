"""Signed decisions in a shop home: each approval or rejection is signed with the
deciding approver's Ed25519 key, and the executor checks it before every write.

The signed message (:func:`decision_message`) is canonical JSON (sorted keys, no spaces, UTF-8)
of ``{"kind": "resolver-decision-v2", "decision", "run_uid", "digest", "role", "name", "at",
"detail", "prev", "binds"}``: the run's unique identity, the proposal's digest, the role (from the
registry), the name, the time (ISO 8601), the rejection's reason (empty for an approval), the
hash of the audit row before this decision's row (:mod:`core.engine.auditchain`) and ``binds``
(the chain's length and hash before the row, and an approval's world fingerprint and
operation IDs, :func:`core.contract.audit.make_binds`). A row signed before binds existed was signed
as ``resolver-decision-v1`` without it, and still verifies. The signature is kept
twice: in the audit row's ``sig`` column (hex) and, for an approval, in
``TaskState.approval.signature`` as ``ed25519:`` + hex, so that a decision signed with the
shared HMAC key of a practice home (plain hex) is told apart.

Before every write in a shop home (:func:`check_approval`), the executor asks: is the registry
whole (the owner's seal and signatures); is the approver in it, not revoked now, with the role
the approval names; is there an audit row recording exactly this approval; does the signature
verify over it with the approver's public key; are the approval's world and the run's
operations the ones it binds; has no ``refresh`` row of the run followed it (a
refresh voids earlier approvals). A decision signed with the old shared key, or made
before the home had a registry, goes back to waiting with the reason (:data:`REDECIDE`).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from getpass import getpass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.contract import audit as audit_rows
from core.contract.audit import MARK_DECISIONS, REGISTRY_PREFIX
from core.engine import auditchain
from core.engine.approvers import SEAL_FILE, Registry, RegistryError, Unlocked, fingerprint, verify_hex
from core.ground.clock import iso
from core.ground.errors import ApprovalRefused, ResolverError
from core.ground.safetext import name_key, one_line
from core.stores import Place, is_team_store, register_entries, world_path

if TYPE_CHECKING:
    from core.contract.store import AuditLog, AuditReader, ShopParts, Store
    from core.ground.state import TaskState

PREFIX = "ed25519:"
"""How an approver-signed approval's ``signature`` starts (an HMAC one is plain hex)."""

PASSPHRASE_ENV = "RESOLVER_PASSPHRASE"
"""The deciding (or new) approver's passphrase for scripts and tests."""

OWNER_PASSPHRASE_ENV = "RESOLVER_OWNER_PASSPHRASE"
"""The owner's passphrase for scripts and tests (``approvers add`` and ``revoke``)."""

REDECIDE = "REDECIDE: "
"""Marks a reason after which the run goes back to waiting for a decision instead of to a person."""


def decision_message(
    decision: str,
    run_uid: str,
    digest: str,
    role: str,
    name: str,
    at: str,
    detail: str,
    prev: str,
    binds: str | None = None,
) -> bytes:
    """The bytes an approver signs for one decision (see the module's docstring): version 1
    without ``binds`` (a row signed before binds existed), version 2 with it (the chain's
    length, and for an approval its world fingerprint and operation IDs,
    :func:`core.contract.audit.make_binds`)."""
    body = {
        "kind": "resolver-decision-v1" if binds is None else "resolver-decision-v2",
        "decision": decision,
        "run_uid": run_uid,
        "digest": digest,
        "role": role,
        "name": name,
        "at": at,
        "detail": detail,
        "prev": prev,
    }
    if binds is not None:
        body["binds"] = binds
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def row_message(row: dict[str, Any]) -> bytes:
    """:func:`decision_message` of an audit row as stored: what its ``sig`` signed. A reason
    (``detail``) is signed by a rejection, a refresh and a registry change, never by an approval."""
    signs_detail = row["decision"] in ("reject", "refresh", *MARK_DECISIONS) or str(row["decision"]).startswith(REGISTRY_PREFIX)
    return decision_message(
        row["decision"],
        row["run_uid"] or "",
        row["digest"],
        row["role"],
        row["name"],
        row["at"],
        row["detail"] if signs_detail else "",
        row["prev"] or "",
        row.get("binds"),
    )


@dataclass
class Seal:
    """A signed decision: ``signature`` for ``TaskState.approval`` and the audit row's extra
    fields (``prev``, ``sig``) for :meth:`core.contract.store.Store.save`."""

    signature: str
    audit: dict[str, Any] = field(default_factory=dict)


@dataclass
class DecisionSigner:
    """An unlocked approver deciding in a shop home; hands :func:`core.engine.approval.approve` and
    ``reject`` the signature and the audit row's chain fields."""

    approver: Unlocked

    @property
    def role(self) -> str:
        """The approver's role, from the registry."""
        return self.approver.role

    @property
    def name(self) -> str:
        """The approver's name, as in the registry."""
        return self.approver.name

    def seal(
        self,
        store: AuditLog,
        decision: str,
        run_uid: str,
        digest: str,
        at: datetime,
        detail: str = "",
        *,
        world: str | None = None,
        ops: list[str] | None = None,
    ) -> Seal:
        """Sign ``decision`` over the audit's current newest hash and length (the
        chain's head is in the signed content), with an approval's ``world`` fingerprint and
        ``ops`` (its operation IDs). The save that records it refuses (StaleCheckpoint) if
        another row was appended meanwhile."""
        prev, length = store.chain_tip()
        binds = audit_rows.make_binds(length, prev, world=world, ops=ops)
        message = decision_message(decision, run_uid, digest, self.role, self.name, iso(at), detail, prev, binds)
        sig = self.approver.sign(message)
        return Seal(PREFIX + sig, {"prev": prev, "sig": sig, "binds": binds})


def seal_head(where: Path | ShopParts, store: AuditLog, signer: Unlocked) -> None:
    """Write ``audit.head`` for the audit as it is now, signed by ``signer``, among the home's
    per-shop parts ``where`` (or in the home folder ``where``; on a team store its row).
    Raises OSError or ResolverError when it cannot be written."""
    latest, length = store.chain_tip()
    auditchain.write_head(where, length, latest, signer.name, signer.sign(auditchain.head_message(length, latest)))


# -- registry changes in the audit ------------------------------------------------------------------

REGISTRY_RUN = "(approvers)"
"""The ``run_id`` of an audit row that records a registry change."""


def registry_row_message(row: dict[str, Any]) -> bytes:
    """The bytes the owner signs for a registry row: :func:`decision_message` of its decision,
    the seal's ``entries_hash`` (``digest``), the approver's role and name, the change's time and
    ``detail`` (``registry version N``), over the row before it (``prev``) and, on a row
    signed since binds existed, the chain's length (``binds``)."""
    return row_message({**row, "run_uid": ""})


def record_registry_change(
    where: Path | ShopParts, store: AuditLog, owner: Unlocked, change: str, name: str, role: str, seal: dict[str, Any]
) -> None:
    """Append the owner-signed audit row of one registry change (``change``: ``init``, ``add``,
    ``revoke`` or ``recover``, of the approver ``name`` with ``role``) and sign ``audit.head``
    among the home's per-shop parts ``where`` (:func:`seal_head`).

    The row records the seal's version, so a registry put back from an older copy (a revocation
    undone, an old passphrase's key restored) is found older than the audit says it was, by the
    executor before every write and by ``audit verify`` (:func:`registry_behind`).
    """
    for _ in range(5):
        prev, length = store.chain_tip()
        row: dict[str, Any] = {
            "run_id": REGISTRY_RUN,
            "decision": REGISTRY_PREFIX + change,
            "role": role,
            "name": name,
            "digest": str(seal["entries_hash"]),
            "at": str(seal["changed_at"]),
            "detail": f"registry version {int(seal['version'])}",
            "run_uid": None,
            "prev": prev,
            "binds": audit_rows.make_binds(length, prev),
        }
        row["sig"] = owner.sign(registry_row_message(row))
        try:
            store.append_audit(row)
        except audit_rows.AuditMoved:
            continue
        seal_head(where, store, owner)
        return
    raise ResolverError("The audit kept moving while the registry change was recorded; run `resolver audit verify`.")


def recorded_registry_version(audit: AuditReader, owner_key: str) -> int:
    """The highest registry version the audit records in a row the owner's key signed (0 when none)."""
    best = 0
    for row in audit.audit_rows():
        if str(row["decision"]).startswith(REGISTRY_PREFIX) and verify_hex(
            owner_key, row["sig"] or "", registry_row_message(row)
        ):
            try:
                best = max(best, int(str(row["detail"]).rsplit(" ", 1)[-1]))
            except ValueError:
                continue
    return best


def registry_behind(registry: Registry, audit: AuditReader) -> str | None:
    """Why the registry is older than the store's ``audit`` says it was, or None.

    Raises:
        RegistryError: the seal cannot be read.
    """
    version = registry.version()
    recorded = recorded_registry_version(audit, registry.owner_key())
    if version < recorded:
        return (
            f"the approvers registry is version {version} but the audit records version {recorded}: "
            "it was put back from an older copy (a revocation undone?)"
        )
    return None


# -- checks before every write ----------------------------------------------------------------------


def check_approval(state: TaskState, registry: Registry, store: AuditLog) -> str | None:
    """Why the run's approval must not execute in a shop home, or None when it holds.

    A reason starting with :data:`REDECIDE` means the decision was never an approver's (the old
    shared HMAC key, or made before the registry existed): the run goes back to waiting.
    """
    a = state.approval
    if a is None:
        return "the run has no approval"
    if not a.signature.startswith(PREFIX):
        return (
            REDECIDE + "the approval was not signed by an approver of this shop home (the old shared key, or made "
            "before the registry existed); decide again with --name"
        )
    try:
        entry = registry.valid_entry(a.name)
        behind = registry_behind(registry, store)
    except (ApprovalRefused, RegistryError) as exc:
        return f"the approver does not hold: {exc}"
    if behind:
        return behind
    if entry.role != a.role:
        return f"the approval names role {a.role} but the registry gives {entry.name} the role {entry.role}"
    sig = a.signature.removeprefix(PREFIX)
    row = store.find_audit_row(state.run_id, "approve", sig)
    if row is None:
        return "no audit row records this approval (written outside resolver?)"
    if (row["run_uid"], row["digest"], row["role"], row["name"], row["at"]) != (
        state.run_uid,
        a.digest,
        a.role,
        a.name,
        iso(a.at),
    ):
        return "the approval does not match its audit row"
    if not verify_hex(entry.public_key, sig, row_message(row)):
        return f"the approval's signature does not verify with {entry.name}'s key"
    unbound = _unbound(state, row)
    if unbound:
        return unbound
    ended = store.later_ending(state.run_uid, row["id"])
    if ended is not None:
        what = "the refresh" if ended["decision"] == "refresh" else f"the {ended['decision']} row"
        return (
            f"the approval was voided by {what} of {ended['at']} (audit row {ended['id']}): "
            "the run was set back to an older state"
        )
    return None


def _unbound(state: TaskState, row: dict[str, Any]) -> str | None:
    """Why the run's approval is not the one its signed audit row binds, or None: the
    world fingerprint it was approved against and the operations it commits to. A row signed
    before the binds existed binds neither."""
    try:
        binds = audit_rows.read_binds(row)
    except ValueError:
        return "the approval's audit row binds nothing readable (edited, or written outside resolver)"
    if binds is None:
        return None
    seen = state.approval.world.fingerprint if state.approval and state.approval.world else None
    if binds.get("world") != seen:
        return "the world the approval was made against is not the one its signature binds (the state was rewritten)"
    if binds.get("ops") != [op.operation_id for op in state.operations]:
        return "the run's operations are not the ones the approval's signature binds (the state was rewritten)"
    return None


SIGNED_DECISIONS = ("approve", "reject", "refresh", *MARK_DECISIONS)
"""The audit rows an approver signs in a shop home: the two decisions, a refresh (it voids
approvals), and the marks (claim, release, hand-over, snooze: their ``detail``, the
note or the time, is signed too). Rows the system writes (``refused:...``) carry no signature."""


def row_check(registry: Registry) -> Callable[[dict[str, Any]], str | None]:
    """For :func:`core.engine.auditchain.verify_audit` in a shop home: a decision row must carry a
    signature that verifies with its approver's key (revoked or not: it was valid when made);
    a row the system wrote (``refused``) carries none."""
    keys = {e.name: e.public_key for e in registry.entries()}
    try:
        owner_key: str | None = registry.owner_key()
    except RegistryError:
        owner_key = None

    def check(row: dict[str, Any]) -> str | None:
        if str(row["decision"]).startswith(REGISTRY_PREFIX):
            if owner_key is None or not verify_hex(owner_key, row["sig"] or "", registry_row_message(row)):
                return "a registry change not signed by the owner's key"
            return None
        if row["decision"] == "refresh" and not row["name"] and not row["sig"]:
            return None  # a refresh saved before refreshes were signed: it named nobody and moved no money
        if row["decision"] not in SIGNED_DECISIONS:
            return "a signature on a system row" if row["sig"] else None
        key = keys.get(row["name"])
        if key is None:
            return f"{row['name']} is not in the registry"
        if not row["sig"] or not verify_hex(key, row["sig"], row_message(row)):
            return "its signature does not verify (edited, or written outside resolver)"
        return None

    return check


def head_check(registry: Registry) -> Callable[[dict[str, Any]], str | None]:
    """For :func:`core.engine.auditchain.verify_audit`: the head is signed by an approver of the registry."""
    keys = {e.name: e.public_key for e in registry.entries()}

    def check(head: dict[str, Any]) -> str | None:
        key = keys.get(str(head.get("signer")))
        if key is None or not verify_hex(
            key, str(head.get("signature", "")), auditchain.head_message(head["length"], head["hash"])
        ):
            return "its signature does not verify"
        return None

    return check


def verify_home_audit(root: Path, store: Store, kind: str, world_at: Place | None = None) -> auditchain.AuditReport:
    """``resolver audit verify``: :func:`verify_audit_read_only` over the store's audit,
    and the append-only triggers the store had to create again when it opened."""
    report = verify_audit_read_only(root, store, kind, world_at)
    # the store creates a dropped trigger again when it opens: what it had to repair is reported here
    report.problems[:0] = [
        f"the append-only trigger {t} is missing: someone dropped it, so rows may have been changed "
        "(it was created again when this home was opened)"
        for t in store.repaired_triggers
        if t in audit_rows.TRIGGERS
    ]
    return report


def verify_audit_read_only(root: Path, audit: AuditReader, kind: str, world_at: Place | None = None) -> auditchain.AuditReport:
    """The audit check of ``audit verify`` and ``resolver doctor`` over a store's ``audit`` (read only): the
    chain and triggers in any home; in a shop home with a registry also the registry (its
    signatures, and its version against the audit's registry rows), each row's
    signature, the signed ``audit.head`` (never shorter than the newest signed row), every
    approver-signed approval a run holds against its audit row, and every write of the practice
    world at ``world_at`` (default: the home folder's ``larkfield.sqlite``) against the approvals.
    A team store's URL as ``world_at`` (the world lives in the store) is where the
    registry's rows are read too."""
    team = str(world_at) if world_at is not None and is_team_store(world_at) else None
    registry = Registry(root, store=team)
    shop = kind == "shop" and registry.exists()
    if not shop:
        report = auditchain.verify_audit(audit)
        if kind == "shop" and (registry.entries() or any(row["sig"] for row in audit.audit_rows())):
            report.problems.insert(
                0,
                f"the approvers seal {registry.parts.label(SEAL_FILE)} is missing while the store holds approvers or "
                "signed rows: restore it from a backup (nothing signed can be checked without it)",
            )
        return report
    report = auditchain.verify_audit(
        audit, registry.parts, check_row=row_check(registry), check_head=head_check(registry), head_required=True
    )
    try:
        behind = registry_behind(registry, audit)
        report.problems[:0] = [f"registry: {p}" for p in [*registry.problems(), *([behind] if behind else [])]]
    except RegistryError as exc:
        report.problems.insert(0, str(exc))
    report.problems += signed_rows_beyond_head(registry.parts, audit)
    report.problems += approvals_without_rows(audit)
    report.problems += writes_without_approvals(world_path(Path(root)) if world_at is None else world_at, audit)
    return report


def approvals_without_rows(audit: AuditReader) -> list[str]:
    """Each run whose saved approval is an approver's (``ed25519:``) must have the
    audit row that records it; a run that still holds an approval whose row is gone had its
    history rolled back (the newest rows deleted with the head put back). One sentence per run."""
    out: list[str] = []
    saved = audit.signed_approvals(PREFIX)
    for run_id, text in saved:
        try:
            approval = json.loads(text).get("approval") or {}
        except (ValueError, AttributeError):
            continue  # a damaged checkpoint is said by every read of it
        sig = str(approval.get("signature", ""))
        if sig.startswith(PREFIX) and audit.find_audit_row(run_id, "approve", sig.removeprefix(PREFIX)) is None:
            out.append(
                f"run {run_id} holds an approval by {approval.get('name')} that no audit row records: "
                "the newest rows were deleted and the head put back, or the approval was written with SQL"
            )
    return out


MID_EXECUTION_REFUSALS = ("refused", "refused:precondition")
"""The rows that may end an approval after some of its writes were made: the executor's refusal
before a later write (the shop's check, a precondition). Writes before them stay bound."""


def writes_without_approvals(world_at: Place, audit: AuditReader) -> list[str]:
    """Each write a run made in the world's operations register must be bound by a
    signed approval in the audit that stood when it was made: the operation's ID is in the
    approval row's ``binds``, the write is no older than the approval, and the first row that
    ended the approval (:func:`core.contract.audit.ends_approval`) is an executor's refusal made after
    it (:data:`MID_EXECUTION_REFUSALS`), or there is none. An approval ended by a lapse (which
    comes only before any call) or directly by another decision bound no write at all. For an
    approval signed before binds existed, any approval row of that run counts.

    The register stands for the payment and shipping services, which keep their own record:
    rolling back the audit, its head and the run together still leaves the write there, and this
    finds it. Writes a person made by hand (``manual``) are not the executor's and are not held
    against the audit. ``world_at``: the practice world's place (:data:`core.stores.Place`).
    One sentence per write, or one saying the register cannot be read."""
    try:
        entries = register_entries(world_at)
    except ValueError as exc:
        return [f"the world's operations register cannot be read ({exc}): its writes were not checked against the approvals"]
    if not entries:
        return []
    all_rows = audit.audit_rows()
    by_run: dict[str, list[dict[str, Any]]] = {}
    for row in all_rows:
        by_run.setdefault(str(row["run_uid"] or row["run_id"]), []).append(row)
    windows: dict[str, list[tuple[datetime, datetime | None]]] = {}
    legacy: set[str] = set()
    for row in all_rows:
        if row["decision"] != "approve" or not row["sig"]:
            continue
        try:
            binds = audit_rows.read_binds(row)
            start = datetime.fromisoformat(str(row["at"]))
        except ValueError:
            continue  # said by the row's own check
        if binds is None or "ops" not in binds:
            legacy.add(str(row["run_id"]))
            continue
        end = next(
            (
                later
                for later in by_run.get(str(row["run_uid"] or row["run_id"]), [])
                if later["id"] > row["id"] and audit_rows.ends_approval(later["decision"])
            ),
            None,
        )
        if end is not None and end["decision"] not in MID_EXECUTION_REFUSALS:
            continue  # a lapse comes only before any call; a later decision only after a refusal: it bound no write
        try:
            until = datetime.fromisoformat(str(end["at"])) if end is not None else None
        except ValueError:
            continue  # an ending row whose time cannot be read: said by the chain's check
        for op in binds["ops"]:
            windows.setdefault(op, []).append((start, until))

    def bound(entry: dict[str, Any]) -> bool:
        if entry["actor"] == "manual" or entry["actor"] in legacy:
            return True
        try:
            at = datetime.fromisoformat(str(entry["at"]))
        except ValueError:
            return False
        try:
            return any(start <= at and (until is None or at <= until) for start, until in windows.get(entry["operation_id"], []))
        except TypeError:  # a time without its offset: edited outside resolver
            return False

    return [
        f"the register holds the {e['service']} of operation {e['operation_id']}, written by run {e['actor']} at "
        f"{e['at']}, that no signed approval in the audit binds: the newest rows were deleted with the head and the "
        "run put back, or the write was made outside resolver"
        for e in entries
        if not bound(e)
    ]


def signed_rows_beyond_head(where: Path | ShopParts, audit: AuditReader) -> list[str]:
    """``audit.head`` is signed after every signed row (a decision, a registry change),
    so a head shorter than the newest signed row was put back from an older copy (with the newest
    rows edited or deleted). ``where``: the home's per-shop parts, or its folder. One sentence,
    or none."""
    try:
        head = auditchain.read_head(where)
    except (OSError, ValueError):
        return []  # said by verify_audit
    if head is None:
        return []
    all_rows = audit.audit_rows()
    last_signed = max((i + 1 for i, row in enumerate(all_rows) if row["sig"]), default=0)
    if head["length"] < last_signed:
        return [
            f"{audit_rows.HEAD_FILE} records {head['length']} row(s) but row {last_signed} is signed, and every signed row "
            "moves the head: the head was put back from an older copy"
        ]
    return []


def registry_lines(root: Path, kind: str, store: str | None = None) -> list[str]:
    """The registry's lines for ``resolver doctor``, read only: in a shop home the
    owner key's fingerprint (to compare with the one written down at ``approvers init``) and the
    registry's check; nothing in a practice home. ``store``: the team store's URL holding the
    registry, or None for the folder's. Never raises: each problem is a line."""
    out: list[str] = []
    if kind != "shop":
        return out
    try:
        registry = Registry(root, store=store)
        made = registry.exists()
    except ResolverError as exc:
        return [f"Approvers: {exc}"]
    if kind == "shop":
        if not made:
            out.append("Approvers: no registry yet; every decision is refused until the owner runs `resolver approvers init`.")
        else:
            try:
                out.append(f"Owner key: {registry.fingerprint()} (compare with the one written down at `approvers init`)")
                problems = registry.problems()
                out.append("Approvers: registry verifies." if not problems else f"Approvers: {'; '.join(problems)}.")
                out += key_lines(registry)
            except RegistryError as exc:
                out.append(f"Approvers: {exc}")
    return out


def key_lines(registry: Registry) -> list[str]:
    """``resolver doctor``'s lines on the approvers' private keys: one per key file of
    this machine (``Key file: ...``, whose approver, and whether it is the registry entry's key;
    ``Key file problem: ...`` when it is damaged, readable by others, of another key or of no
    approver), ``Keys: none on this machine`` on a team store without any, and on a team store
    how many keys are still in its rows (``Keys in the store: ...``, each moves to its
    approver's machine at their first unlock there). Never raises."""
    out: list[str] = []
    try:
        entries = {name_key(e.name): e for e in registry.entries()}
        listing = registry.keys.listing()
    except ResolverError as exc:
        return [f"Key file problem: {exc}"]
    for path, key, problem in listing:
        if key is None or problem:
            out.append(f"Key file problem: {problem}")
            continue
        entry = entries.get(name_key(key.name))
        if entry is None:
            out.append(f"Key file: {path} holds a key for {one_line(key.name)}, who is not in the registry yet.")
        elif entry.public_key != key.public_key:
            out.append(
                f"Key file problem: {path} holds {fingerprint(key.public_key)} for {one_line(key.name)}, but the registry's "
                f"entry has {fingerprint(entry.public_key)}: it cannot decide."
            )
        else:
            state = "revoked" if entry.revoked else "can decide on this machine"
            out.append(f"Key file: {path} holds {one_line(entry.name)}'s key {fingerprint(key.public_key)} ({state}).")
    if registry.team:
        if not listing:
            out.append(f"Keys: none on this machine ({registry.keys.dir}); an approver decides where their key file is.")
        held = registry.keys_in_rows()
        if held:
            out.append(
                f"Keys in the store: {held} approver(s)' encrypted keys are still in the team store's rows (written by an "
                "earlier release); each moves to its approver's machine at their first unlock there."
            )
    return out


# -- an unlocked key kept for a while (the app) ---------------------------------------------------


class KeyHolder:
    """An approver's key kept unlocked in memory for at most ``idle_s`` seconds without use
    (an unattended app forgets it; the config's ``key_idle_minutes``, default 5).

    ``clock`` gives seconds (``time.monotonic`` by default; tests pass their own). Never written
    anywhere; :meth:`get` returns None once the key was idle too long, and forgets it.
    """

    def __init__(self, idle_s: float, clock: Callable[[], float] | None = None) -> None:
        self.idle_s = idle_s
        self._clock = clock or time.monotonic
        self._key: Unlocked | None = None
        self._used = 0.0

    def put(self, key: Unlocked | None) -> None:
        """Keep ``key`` (None forgets), as used now."""
        self._key, self._used = key, self._clock()

    def get(self) -> Unlocked | None:
        """The key, as used now; None (and forgotten) when none is kept or it was idle longer
        than ``idle_s``."""
        now = self._clock()
        if self._key is not None and now - self._used > self.idle_s:
            self._key = None
        if self._key is not None:
            self._used = now
        return self._key


# -- passphrases -----------------------------------------------------------------------------------


_read_early: dict[int, list[str]] = {}
"""Lines read by :func:`read_fd_early`, by file descriptor and in order, until :func:`read_passphrase` takes them."""


def _read_fd(fd: int) -> str:
    """The first line of the file descriptor ``fd`` (UTF-8, without its line break).

    Raises:
        ResolverError: ``fd`` is negative, too large, not open, cannot be read, or its line is
            not UTF-8 text (one sentence each, never the catch-all).
    """
    if not 0 <= fd < 2**31:
        raise ResolverError(f"File descriptor {fd} cannot exist: give the number of one this command inherits (3 in 3<file).")
    try:
        os.fstat(fd)
    except OSError:
        raise ResolverError(
            f"File descriptor {fd} is not open: hand the passphrase over with --passphrase-fd {fd} {fd}<FILE, "
            "or type it at a terminal. Nothing was changed."
        ) from None
    try:
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.readline()
    except OSError as exc:
        raise ResolverError(f"Cannot read the passphrase from file descriptor {fd}: {exc.strerror or exc}.") from None
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise ResolverError(
            f"The line read from file descriptor {fd} is not UTF-8 text: write the passphrase in UTF-8. Nothing was changed."
        ) from None


def read_fd_early(fd: int) -> None:
    """Read the first line of ``fd`` now, before the command opens any file of its own, and
    keep it for :func:`read_passphrase` (``--passphrase-fd 9`` with 9 not open in the
    shell must not read the descriptor of ``approvers.sqlite`` that resolver opened itself).

    Raises:
        ResolverError: as :func:`_read_fd`.
    """
    _read_early.setdefault(fd, []).append(_read_fd(fd))


def read_passphrase(prompt: str, *, fd: int | None = None, env: str = PASSPHRASE_ENV, confirm: bool = False) -> str:
    """A passphrase from the file descriptor ``fd`` (its first line), else the environment
    variable ``env``, else the terminal without echo (``getpass``; ``confirm`` asks twice).

    Raises:
        ResolverError: no terminal and neither ``fd`` nor ``env`` gives one, ``fd`` cannot be read,
            the two typed passphrases differ, or the person ended the input or interrupted.
    """
    if fd is not None:
        if _read_early.get(fd):
            return _read_early[fd].pop(0)
        return _read_fd(fd)
    if os.environ.get(env):
        return os.environ[env]
    if not sys.stdin.isatty():
        raise ResolverError(f"No passphrase: type it at a terminal, or hand it over with --passphrase-fd N or ${env}.")
    try:
        first = getpass(prompt)
        if confirm and getpass("Again: ") != first:
            raise ResolverError("The two passphrases differ; nothing changed.")
    except EOFError:  # Ctrl-D at the prompt (a new user's finding: it ended in the catch-all)
        raise ResolverError("No passphrase was typed (end of input); nothing changed.") from None
    except KeyboardInterrupt:
        raise ResolverError("Interrupted at the passphrase; nothing changed.") from None
    return first


__all__ = [
    "OWNER_PASSPHRASE_ENV",
    "PASSPHRASE_ENV",
    "PREFIX",
    "REDECIDE",
    "DecisionSigner",
    "KeyHolder",
    "Seal",
    "check_approval",
    "decision_message",
    "fingerprint",
    "head_check",
    "read_fd_early",
    "read_passphrase",
    "record_registry_change",
    "registry_behind",
    "row_check",
    "seal_head",
    "verify_audit_read_only",
    "verify_home_audit",
]
