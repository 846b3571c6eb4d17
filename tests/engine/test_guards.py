"""Every guard proven by a test that fails without it.

For each guard on the way to a write, a test forges the one input that guard exists to stop,
built so that every other guard lets it through, and counts what the practice world holds
(refunds, reshipments, replies): with the guard in place nothing more is written; with it
disabled money moves. ``tools/mutants.py`` disables each guard in turn and runs these tests
(the ``guard`` names of its table are the ``GUARD_*`` comments below); every mutant must be
caught.

Shop homes (Ed25519, the registry, the audit row) are forged as an attacker who can write SQL
into every database would, but holds no approver's private key.
"""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from core.api.home import Home
from core.contract.approval_key import load_key
from core.engine import approval as approval_module
from core.engine import signing
from core.engine.approval import plan_operations, sign
from core.engine.approvers import entry_message
from core.engine.executor import SimulatedCrash
from core.ground.clock import FixedClock, iso, parse_time
from core.ground.data import PolicyData, load_policy
from core.ground.errors import ApprovalRefused, LeaseHeld
from core.ground.state import Approval, TaskState, cad
from core.stores.common import _HEADER_EXCLUDE
from core.stores.sqlite import audit as sqlite_audit

from helpers import FRIDAY, MONDAY, T65273_RUN, T90104_RUN, shop_cli

TABLES = ("refunds", "reshipments", "return_labels", "replies")


def world_counts(root: Path) -> dict[str, int]:
    """How many refunds, reshipments, return labels and replies the practice world holds."""
    with sqlite3.connect(root / "larkfield.sqlite") as conn:
        return {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES}


NOTHING = dict.fromkeys(TABLES, 0)


def refusal(decide) -> str | None:
    """Run ``decide()``; the sentence of the ApprovalRefused or LeaseHeld it raised, or None.
    The tests count the world before they look at the sentence."""
    try:
        decide()
    except (ApprovalRefused, LeaseHeld) as exc:
        return str(exc)
    return None


def write_header(root: Path, state: TaskState) -> None:
    """Write ``state`` over its run's checkpoint with SQL (the header and the status column), as
    someone editing ``runs.sqlite`` by hand would."""
    with sqlite3.connect(root / "runs.sqlite") as conn:
        conn.execute(
            "UPDATE runs SET state = ?, status = ? WHERE run_id = ?",
            (state.model_dump_json(exclude=_HEADER_EXCLUDE), state.status, state.run_id),
        )


def forge_practice_approval(home: Home, run_id: str, key: bytes, role: str = "grace", name: str = "Grace") -> TaskState:
    """An approval written into a waiting run with SQL: signed with ``key``, for the current
    digest, now, with exactly the operations the proposal plans."""
    state = home.store.load(run_id)
    assert state.proposal is not None
    at = home.clock.now()
    digest = state.proposal.digest
    state.approval = Approval(
        role=role, name=name, at=at, digest=digest, signature=sign(key, state.run_uid, digest, role, name, at)
    )
    state.status = "executing"
    state.operations = plan_operations(state)
    write_header(home.root, state)
    return state


# -- practice homes: HMAC, digest, operations, role, preconditions, expiry ----------------------------


def test_guard_hmac_an_approval_signed_with_another_key_pays_nothing(home, tmp_path):
    # GUARD hmac: core.engine.approval.verify's signature check
    home.run("T-65273")
    forge_practice_approval(home, T65273_RUN, load_key(tmp_path / "not-this-homes.key"))
    state = home.execute(T65273_RUN)
    assert world_counts(home.root) == NOTHING
    assert state.status == "handed_to_person"


def test_guard_hmac_the_homes_own_key_still_pays_once(home):
    """The control: the same forgery with the home's key is a valid approval (so the test above
    fails only for the signature)."""
    home.run("T-65273")
    forge_practice_approval(home, T65273_RUN, home.approval_key())
    assert home.execute(T65273_RUN).status == "done"
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}


def test_guard_digest_a_proposal_raised_after_approval_pays_nothing(home):
    # GUARD digest: the approval names the digest it was signed on; the proposal (and its
    # operations, planned again) now refunds 24.95 instead of 9.95, still within an agent's
    # limit of 25.00, so only the digest stops it
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    state = home.store.load(T90104_RUN)
    assert state.proposal is not None
    state.proposal.actions[0].amount = cad("24.95")  # type: ignore[union-attr]
    state.operations = plan_operations(state)
    write_header(home.root, state)
    status = home.resume(T90104_RUN).state.status
    assert world_counts(home.root) == NOTHING
    assert status == "handed_to_person"


def test_guard_operations_an_operation_edited_after_approval_pays_nothing(home):
    # GUARD operations: the operations are exactly the ones the approved proposal plans
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    state = home.store.load(T90104_RUN)
    state.operations[0].action.amount = cad("24.95")  # type: ignore[union-attr]
    write_header(home.root, state)
    status = home.resume(T90104_RUN).state.status
    assert world_counts(home.root) == NOTHING
    assert status == "handed_to_person"


def test_guard_role_at_execution_a_stricter_policy_pays_nothing(home, monkeypatch):
    # GUARD role-execution: the role is checked again under the policy as it is at the write
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    stricter = load_policy().model_dump()
    for limit in stricter["approval_limits"]:
        if limit["action"] == "request_refund" and limit["role"] == "agent":
            limit["max_amount"] = "5.00"
    monkeypatch.setattr(approval_module, "load_policy", lambda: PolicyData.model_validate(stricter))
    status = home.resume(T90104_RUN).state.status
    assert world_counts(home.root) == NOTHING
    assert status == "handed_to_person"


def test_guard_role_at_approval_an_agent_cannot_approve_a_team_leads_refund(home):
    # GUARD role-approval: nothing is decided, so nothing can be executed later
    home.run("T-65273")
    refused = refusal(lambda: home.approve(T65273_RUN, "agent", "Amira"))
    assert world_counts(home.root) == NOTHING
    assert refused is not None
    state = home.store.load(T65273_RUN)
    assert (state.status, state.approval, state.operations) == ("waiting_approval", None, [])
    assert [a["decision"] for a in home.store.audit(T65273_RUN)] == []
    assert world_counts(home.root) == NOTHING


def test_guard_preconditions_a_refund_by_hand_of_the_other_charge_stops_the_write(home):
    # GUARD preconditions: the expected state checked by the service at the write. A practice
    # home lets the approval through to the write (the lesson's moment), so only this stops it.
    home.run("T-65273")
    home.clock.set(parse_time("2026-10-10T11:00:00-04:00"))  # type: ignore[attr-defined]
    home.manual_refund("phone-call-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-1")
    home.clock.set(parse_time(MONDAY))  # type: ignore[attr-defined]
    status = home.approve(T65273_RUN, "grace", "Grace").status
    assert world_counts(home.root) == {**NOTHING, "refunds": 1}  # the phone call's only
    assert status == "handed_to_person"


def test_guard_approval_expiry_a_crash_before_the_write_resumed_later_pays_nothing(home):
    # GUARD approval-expiry: an approval whose execution never called the service lapses
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    home.clock.advance(timedelta(hours=2))  # type: ignore[attr-defined]
    status = home.resume(T90104_RUN).state.status
    assert world_counts(home.root) == NOTHING
    assert status == "waiting_approval"


def test_guard_evidence_expiry_evidence_older_than_the_policy_is_not_approved(home):
    # GUARD evidence-expiry: approve is refused once the evidence is older than the policy allows
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    home.clock.advance(timedelta(days=8))  # type: ignore[attr-defined]
    refused = refusal(lambda: home.approve(T90104_RUN, "agent", "Amira"))
    assert world_counts(home.root) == NOTHING
    assert refused is not None and "Refresh it first" in refused
    assert home.store.load(T90104_RUN).status == "waiting_approval"


def test_guard_one_effect_per_ticket_a_second_run_of_the_ticket_does_not_refund_again(home):
    # GUARD one-effect: a second run of T-90104, run after the first one refunded (so its own
    # evidence and preconditions hold), is refused at approval
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert home.approve(T90104_RUN, "agent", "Amira").status == "done"
    home.clock.advance(timedelta(minutes=5))  # type: ignore[attr-defined]
    second = home.run("T-90104", "agent", "chat-small", 1)  # the same refund of 9.95, read after the first
    refused = refusal(lambda: home.approve(second.run_id, "agent", "Amira"))
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}
    assert refused is not None and "one effect per ticket" in refused


def test_guard_one_effect_per_ticket_from_the_world_after_the_first_run_was_pruned(home):
    # GUARD one-effect (the world's side): the first run's checkpoint is gone (pruned), only the
    # practice world's records say that a run of the ticket already refunded
    from core.ops.maintenance import prune

    home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert home.approve(T90104_RUN, "agent", "Amira").status == "done"
    home.clock.advance(timedelta(days=2))  # type: ignore[attr-defined]
    assert prune(home, timedelta(days=1))[-1].strip() == T90104_RUN
    assert [r.run_id for r in home.store.page()] == []
    second = home.run("T-90104", "agent", "chat-small", 1)
    refused = refusal(lambda: home.approve(second.run_id, "agent", "Amira"))
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}
    assert refused is not None and "one effect per ticket" in refused


def test_guard_one_effect_per_ticket_while_the_first_run_is_still_executing(home):
    # GUARD one-effect (the store's side): the first run crashed before its write; the world
    # has nothing yet, only the other run's checkpoint says a refund is on its way
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    second = home.run("T-90104", "agent", "chat-small", 1)
    refused = refusal(lambda: home.approve(second.run_id, "agent", "Amira"))
    assert world_counts(home.root) == NOTHING
    assert refused is not None and "is executing" in refused


def test_guard_lease_a_second_executor_writes_nothing_while_the_first_holds_the_run(home):
    # GUARD lease: another live executor holds the run
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    with pytest.raises(SimulatedCrash):
        home.approve(T90104_RUN, "agent", "Amira", interrupt="before-write")
    home.store.acquire_lease(T90104_RUN, "window-1@elsewhere:1:abc", 60)
    refused = refusal(lambda: home.resume(T90104_RUN))
    assert world_counts(home.root) == NOTHING
    assert refused is not None and "window-1" in refused


def test_guard_single_use_decision_a_decided_run_is_not_approved_again(home):
    # GUARD single-use: a run is decided once; a second approval of a done run (or of one
    # already executing) is refused and leaves the first decision and the world alone
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert home.approve(T90104_RUN, "agent", "Amira").status == "done"
    refused = refusal(lambda: home.approve(T90104_RUN, "grace", "Grace"))
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}
    assert refused is not None
    state = home.store.load(T90104_RUN)
    assert state.status == "done" and state.approval is not None and state.approval.name == "Amira"
    assert [a["decision"] for a in home.store.audit(T90104_RUN)] == ["approve"]
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}


def test_guard_idempotency_a_done_run_set_back_to_executing_pays_nothing_more(home):
    # GUARD idempotency: the operations register returns the first result for an operation ID
    home.run("T-90104", "agent_structured", "chat-strong", 1)
    assert home.approve(T90104_RUN, "agent", "Amira").status == "done"
    state = home.store.load(T90104_RUN)
    state.status = "executing"
    for op in state.operations:
        op.status, op.calls, op.result = "planned", 0, None
    write_header(home.root, state)
    status = home.resume(T90104_RUN).state.status
    assert world_counts(home.root) == {**NOTHING, "refunds": 1, "replies": 1}
    assert status == "done"


# -- shop homes: the registry, the approver's Ed25519 signature, the audit row -------------------------

OWNER, ANA = "owner-passphrase", "ana-passphrase"


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """A shop home on Friday 17:00 with the owner Grace and a team lead Ana; T-65273 waits."""
    root = tmp_path / "shop"
    run = shop_cli(root, capsys, monkeypatch)

    assert run("init", "--shop")[0] == 0
    assert run("approvers", "init", passphrase=OWNER)[0] == 0
    assert run("approvers", "add", "Ana", "--role", "team_lead", passphrase=ANA, owner=OWNER)[0] == 0
    assert run("run", "T-65273")[0] == 0
    return run


def _forge_signed(root: Path, name: str, role: str, signer_hex: str | None) -> int:
    """Write an Ed25519-looking approval by ``name`` into T-65273 with SQL, plus an audit row
    that matches it field for field and follows the chain (the triggers refuse edits and
    deletes, not inserts). ``signer_hex``: a private key (hex) that signs the decision, or None
    for a signature of zeros. Returns the inserted audit row's id."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    home = Home(root)
    home.approval_key()  # a shop home holds one after its first decision (the executor loads it)
    state = home.queue.load(T65273_RUN)
    assert state.proposal is not None
    at = home.clock.now()
    digest = state.proposal.digest
    with sqlite3.connect(root / "runs.sqlite") as conn:
        prev, _ = sqlite_audit.last_hash(conn)
        message = signing.decision_message("approve", state.run_uid, digest, role, name, iso(at), "", prev)
        sig = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(signer_hex)).sign(message).hex() if signer_hex else "00" * 64
        cur = conn.execute(
            "INSERT INTO audit (run_id, decision, role, name, digest, at, detail, run_uid, prev, sig) "
            "VALUES (?, 'approve', ?, ?, ?, ?, '', ?, ?, ?)",
            (T65273_RUN, role, name, digest, iso(at), state.run_uid, prev, sig),
        )
        row_id = int(cur.lastrowid or 0)
    state.approval = Approval(role=role, name=name, at=at, digest=digest, signature=signing.PREFIX + sig)
    state.status = "executing"
    state.operations = plan_operations(state)
    write_header(root, state)
    return row_id


def test_guard_signature_a_forged_ed25519_approval_with_a_matching_audit_row_pays_nothing(shop):
    # GUARD ed25519: the executor verifies the approver's signature over the audit row
    row_id = _forge_signed(shop.root, "Ana", "team_lead", None)
    code, out, _ = shop("resume", T65273_RUN)
    assert world_counts(shop.root) == NOTHING
    assert code == 5 and "Status: handed_to_person" in out
    code, _, err = shop("audit", "verify")
    assert code == 1 and f"row {row_id} ({T65273_RUN}, approve): its signature does not verify" in err


def test_guard_registry_an_approver_added_with_sql_signs_nothing_that_pays(shop):
    # GUARD registry: Eve's entry (her own key, role grace) was inserted into approvers.sqlite
    # with SQL; she signs her forged decision correctly, but the owner never signed her entry
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

    key = Ed25519PrivateKey.generate()
    private_hex = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()).hex()
    public_hex = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
    added = iso(Home(shop.root).clock.now())
    with sqlite3.connect(shop.root / "approvers.sqlite") as conn:
        row = conn.execute("SELECT private_key, recovery_key FROM approvers WHERE name = 'Ana'").fetchone()
        conn.execute(
            "INSERT INTO approvers (name, role, public_key, added_at, revoked_at, signature, private_key, recovery_key) "
            "VALUES ('Eve', 'grace', ?, ?, NULL, ?, ?, ?)",
            (public_hex, added, key.sign(entry_message("Eve", "grace", public_hex, added, None)).hex(), row[0], row[1]),
        )
    row_id = _forge_signed(shop.root, "Eve", "grace", private_hex)
    code, out, _ = shop("resume", T65273_RUN)
    assert world_counts(shop.root) == NOTHING
    assert code in (0, 5) and "Status: done" not in out
    code, _, err = shop("audit", "verify")
    assert code == 1 and "registry" in err and f"row {row_id}" not in err.split("registry")[0]


def test_guard_revoked_an_approver_revoked_before_the_write_pays_nothing(shop):
    # GUARD revoked: the registry's revocation holds at every write
    assert shop("approve", "--yes", T65273_RUN, "--name", "Ana", "--interrupt", "before-write", passphrase=ANA)[0] == 3
    assert shop("approvers", "revoke", "Ana", owner=OWNER)[0] == 0
    code, out, _ = shop("resume", T65273_RUN)
    assert world_counts(shop.root) == NOTHING
    assert code == 5 and "Status: handed_to_person" in out


def test_guard_shop_precondition_a_shop_home_refuses_the_approval_before_the_write(shop, monkeypatch):
    """A shop home refuses an approval whose preconditions already fail (the practice home goes
    on to the write, where the service's own check stops it). With it disabled the write's
    precondition still stops the money: this test counts the audit too."""
    home = Home(shop.root)
    home.world("till").request_refund("till-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-1")
    code, _, err = shop("approve", "--yes", T65273_RUN, "--name", "Ana", passphrase=ANA)
    assert world_counts(shop.root) == {**NOTHING, "refunds": 1}
    assert home.store.load(T65273_RUN).status == "waiting_approval"
    assert code == 4 and "The world changed since the agent looked" in err


def test_an_inserted_audit_row_no_decision_made_is_reported_and_never_accepted(shop):
    """The Done-when of the section: a forged Ed25519 approval plus an inserted matching audit
    row makes 0 refunds, and ``audit verify`` reports the row."""
    row_id = _forge_signed(shop.root, "Ana", "team_lead", None)
    before = [a for a in Home(shop.root).store.audit() if a["decision"] == "approve"]
    assert len(before) == 1  # only the inserted one: no decision was made
    code, out, _ = shop("resume", T65273_RUN)
    assert world_counts(shop.root) == NOTHING and "Status: done" not in out
    detail = Home(shop.root).store.audit(T65273_RUN)[-1]
    assert detail["decision"] == "refused" and "signature does not verify" in detail["detail"]
    code, _, err = shop("audit", "verify")
    assert code == 1 and f"row {row_id} ({T65273_RUN}, approve): its signature does not verify" in err


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home", clock=FixedClock(FRIDAY))
