"""Hand mutants of the guards on the way to a write: each disables one guard, and
the tests that prove that guard must fail.

    .venv/bin/python tools/mutants.py            # every mutant; exit 0 when all are caught
    .venv/bin/python tools/mutants.py --list     # the table, nothing run
    .venv/bin/python tools/mutants.py hmac lease # some of them

How: the project's ``core``, ``resolver``, ``data``, ``tests`` and ``pyproject.toml`` are copied
once to a temporary folder; for each mutant one file of the copy is edited (an exact text,
found exactly once, replaced), and ``python -m pytest`` runs that mutant's tests there with
``PYTHONPATH`` on the copy, so the tests' own ``python -m core`` processes run the mutant too.
The working tree is never touched. Before any mutant, the union of the tests runs once on the
unmutated copy and must pass (otherwise "caught" would mean nothing).

Each mutant runs only the tests that prove its guard (a targeted subset, not the whole suite),
to keep ``.ci/run`` short on a 2-core machine: about 3 minutes for all of them.

A mutant whose text is no longer in its file fails the script: the guard moved, so the table
must follow it. Exit codes: 0 every mutant caught; 1 a mutant survived, went stale, or the
unmutated tests failed; 2 a bad argument.

``EQUIVALENT`` lists the guards kept as a second layer that no money-moving forgery can reach
alone (another guard always stops the same input); they are printed, not run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COPY = ("core", "resolver", "data", "tests", "pyproject.toml")

G = "tests/engine/test_guards.py::"
B = "tests/engine/test_boundaries.py::"
S = "tests/engine/test_shop_integrity.py::"
R = "tests/conformance/test_read_side_contract.py::"


@dataclass(frozen=True)
class Mutant:
    """One guard disabled: in ``path``, each ``(before, after)`` text replaced (each ``before``
    must occur exactly once); ``tests`` (pytest node IDs) must then fail."""

    name: str
    guard: str
    path: str
    edits: tuple[tuple[str, str], ...]
    tests: tuple[str, ...] = field(default_factory=tuple)


MUTANTS: tuple[Mutant, ...] = (
    Mutant(
        "hmac",
        "practice home: the approval's HMAC signature",
        "core/engine/approval.py",
        (("if signed and not hmac.compare_digest(expected, a.signature):", "if False:"),),
        (G + "test_guard_hmac_an_approval_signed_with_another_key_pays_nothing",),
    ),
    Mutant(
        "digest",
        "the approval names the proposal's digest",
        "core/engine/approval.py",
        (("if state.proposal is None or a.digest != state.proposal.digest:", "if state.proposal is None:"),),
        (G + "test_guard_digest_a_proposal_raised_after_approval_pays_nothing",),
    ),
    Mutant(
        "operations",
        "the operations are the ones the approved proposal plans",
        "core/engine/approval.py",
        (("if [(op.operation_id, op.action) for op in state.operations] != planned:", "if False:"),),
        (G + "test_guard_operations_an_operation_edited_after_approval_pays_nothing",),
    ),
    Mutant(
        "role-execution",
        "the role under the policy at the write",
        "core/engine/approval.py",
        (("        if not may_approve(a.role, needed):", "        if False:"),),
        (G + "test_guard_role_at_execution_a_stricter_policy_pays_nothing",),
    ),
    Mutant(
        "role-approval",
        "the role at approval",
        "core/engine/approval.py",
        (
            (
                "    if not may_approve(role, needed):\n        raise ApprovalRefused(role_too_low(",
                "    if False:\n        raise ApprovalRefused(role_too_low(",
            ),
        ),
        (G + "test_guard_role_at_approval_an_agent_cannot_approve_a_team_leads_refund",),
    ),
    Mutant(
        "preconditions",
        "the expected state, checked by the service at the write",
        "core/stores/practice.py",
        (
            (
                "            problem = self._problem(conn, pre, own)\n            if problem:",
                "            problem = None\n            if problem:",
            ),
        ),
        (
            G + "test_guard_preconditions_a_refund_by_hand_of_the_other_charge_stops_the_write",
            B + "test_a_refund_by_hand_in_the_same_second_as_the_evidence_counts_as_since",
        ),
    ),
    Mutant(
        "since-by-time",
        'row 2: "since" by the register\'s number (back to whole seconds, strictly after)',
        "core/stores/practice.py",
        (
            ('    if since_seq is not None:\n        return row["seq"]', '    if False:\n        return row["seq"]'),
            ('return datetime.fromisoformat(row["at"]) >= since', 'return datetime.fromisoformat(row["at"]) > since'),
        ),
        (
            B + "test_a_refund_by_hand_in_the_same_second_as_the_evidence_counts_as_since",
            B + "test_a_reship_by_hand_in_the_same_second_counts_as_since",
        ),
    ),
    Mutant(
        "since-old-evidence",
        "row 2: for evidence saved before, the same second counts as since",
        "core/stores/practice.py",
        (('return datetime.fromisoformat(row["at"]) >= since', 'return datetime.fromisoformat(row["at"]) > since'),),
        (B + "test_evidence_saved_before_the_change_counts_the_same_second_as_since",),
    ),
    Mutant(
        "reconcile",
        "row 1: a register entry is this operation only if it records the planned write",
        "core/engine/executor.py",
        (("    if not same_call(recorded, planned):", "    if False:"),),
        (
            B + "test_a_manual_refund_under_the_pending_operations_id_is_not_that_operation",
            B + "test_a_register_entry_that_differs_in_any_field_hands_the_run_to_a_person",
        ),
    ),
    Mutant(
        "approval-expiry",
        "an approval whose execution has not started lapses",
        "core/engine/executor.py",
        (
            (
                "    a = state.approval\n    if a is None or started(state, world):",
                "    a = None\n    if a is None or started(state, world):",
            ),
        ),
        (
            G + "test_guard_approval_expiry_a_crash_before_the_write_resumed_later_pays_nothing",
            B + "test_a_crash_before_the_write_resumed_30_days_later_lapses",
        ),
    ),
    Mutant(
        "started-pending",
        "row 6: a pending operation with no call has not started (back to: pending is a start)",
        "core/ground/state.py",
        (
            (
                'return any(op.calls > 0 or op.status in ("done", "failed") for op in operations)',
                'return any(op.status != "planned" or op.calls for op in operations)',
            ),
        ),
        (
            G + "test_guard_approval_expiry_a_crash_before_the_write_resumed_later_pays_nothing",
            B + "test_the_frozen_pending_operation_with_no_call_lapses_after_the_upgrade",
        ),
    ),
    Mutant(
        "evidence-expiry",
        "evidence older than the policy allows is not approved",
        "core/engine/approval.py",
        (("    if age > policy.evidence_max_age_s:", "    if False:"),),
        (G + "test_guard_evidence_expiry_evidence_older_than_the_policy_is_not_approved",),
    ),
    Mutant(
        "one-effect",
        "one effect per ticket (the store's and the world's check)",
        "core/engine/approval.py",
        (
            (
                "dup = overlapping_effects(store, state) or (effects_of_ticket(world, state) if world is not None else None)",
                "dup = None",
            ),
        ),
        (G + "test_guard_one_effect_per_ticket_a_second_run_of_the_ticket_does_not_refund_again",),
    ),
    Mutant(
        "one-effect-store",
        "one effect per ticket: another run of the ticket executing (its checkpoint)",
        "core/engine/approval.py",
        (("dup = overlapping_effects(store, state) or (", "dup = None or ("),),
        (G + "test_guard_one_effect_per_ticket_while_the_first_run_is_still_executing",),
    ),
    Mutant(
        "one-effect-world",
        "one effect per ticket: the world's records of another run of the ticket",
        "core/engine/approval.py",
        (("or (effects_of_ticket(world, state) if world is not None else None)", "or None"),),
        (G + "test_guard_one_effect_per_ticket_from_the_world_after_the_first_run_was_pruned",),
    ),
    Mutant(
        "shop-precondition",
        "shop home: an approval whose preconditions already fail is refused before the write",
        "core/engine/approval.py",
        (("    if world is not None and not practice and state.proposal is not None:", "    if False:"),),
        (G + "test_guard_shop_precondition_a_shop_home_refuses_the_approval_before_the_write",),
    ),
    Mutant(
        "lease",
        "the run's lease keeps a second executor out",
        "core/stores/sqlite/checkpoint.py",
        (("        held = lease_held_by_other(run_id, row[0], row[1], owner, now)\n", "        held = None\n"),),
        (G + "test_guard_lease_a_second_executor_writes_nothing_while_the_first_holds_the_run",),
    ),
    Mutant(
        "partial-save",
        "a read-side view (no message history) is never saved over the whole run",
        "core/stores/common.py",
        (
            (
                "        if isinstance(state, view):\n            # lazy: the models are imported only on a save, so a listing never imports them\n",
                "        if False:\n            # lazy: the models are imported only on a save, so a listing never imports them\n",
            ),
        ),
        (R + "test_a_view_is_never_saved_and_the_history_stays_whole",),
    ),
    Mutant(
        "entry-checksum",
        "an entry whose bytes changed since it was written is a corrupt checkpoint",
        "core/stores/common.py",
        (
            (
                "if checksum is not None and damaged is None and (type(body) is not kind or entry_checksum(body, extra) != checksum):",
                "if False:",
            ),
        ),
        (R + "test_a_row_changed_behind_the_store_is_a_corrupt_checkpoint_though_it_still_validates",),
    ),
    Mutant(
        "single-use",
        "a run is decided once (only a waiting run can be approved)",
        "core/engine/approval.py",
        (
            (
                'if state.status != "waiting_approval" or state.proposal is None:\n        raise _not_waiting(state)',
                "if state.proposal is None:\n        raise _not_waiting(state)",
            ),
        ),
        (G + "test_guard_single_use_decision_a_decided_run_is_not_approved_again",),
    ),
    Mutant(
        "idempotency",
        "the register returns the first result of an operation ID",
        "core/stores/practice.py",
        (
            (
                "            if row is not None:\n                if not same_call(",
                "            if False:\n                if not same_call(",
            ),
        ),
        (G + "test_guard_idempotency_a_done_run_set_back_to_executing_pays_nothing_more",),
    ),
    Mutant(
        "ed25519",
        "shop home: the approver's Ed25519 signature over the decision",
        "core/engine/signing.py",
        (("    if not verify_hex(entry.public_key, sig, row_message(row)):", "    if False:"),),
        (
            G + "test_guard_signature_a_forged_ed25519_approval_with_a_matching_audit_row_pays_nothing",
            G + "test_an_inserted_audit_row_no_decision_made_is_reported_and_never_accepted",
        ),
    ),
    Mutant(
        "registry",
        "shop home: the registry is the owner's (entry signatures and seal)",
        "core/engine/approvers.py",
        (
            (
                '        if problems:\n            raise ApprovalRefused(f"The approvers registry',
                '        if False:\n            raise ApprovalRefused(f"The approvers registry',
            ),
        ),
        (G + "test_guard_registry_an_approver_added_with_sql_signs_nothing_that_pays",),
    ),
    Mutant(
        "revoked",
        "shop home: a revoked approver's decisions stop executing",
        "core/engine/approvers.py",
        (
            (
                "        if entry.revoked:\n            raise ApprovalRefused(",
                "        if False:\n            raise ApprovalRefused(",
            ),
        ),
        (G + "test_guard_revoked_an_approver_revoked_before_the_write_pays_nothing",),
    ),
    Mutant(
        "audit-verify-signature",
        "audit verify: each decision row's signature (finds an inserted row)",
        "core/engine/signing.py",
        (('        if not row["sig"] or not verify_hex(key, row["sig"], row_message(row)):', "        if False:"),),
        (G + "test_an_inserted_audit_row_no_decision_made_is_reported_and_never_accepted",),
    ),
    Mutant(
        "refresh-voids",
        "shop home: an approval followed by a row that ends it (a refresh, a lapse, a decision) never executes",
        "core/engine/signing.py",
        (("    if ended is not None:", "    if False:"),),
        (
            S + "test_an_approval_voided_by_a_refresh_and_written_back_never_executes",
            S + "test_a_lapsed_approval_written_back_after_a_rejection_never_executes",
        ),
    ),
    Mutant(
        "audit-verify-voided",
        "audit verify: an approval followed by a refresh with no refusal between",
        "core/engine/auditchain.py",
        (("    report.problems += _voided_approvals(all_rows)", "    pass"),),
        (S + "test_an_approval_voided_by_a_refresh_and_written_back_never_executes",),
    ),
    Mutant(
        "registry-behind",
        "shop home: a registry older than the audit records executes nothing",
        "core/engine/signing.py",
        (("    if behind:\n        return behind", "    if False:\n        return behind"),),
        (S + "test_a_revocation_undone_by_putting_the_registry_back_pays_nothing",),
    ),
    Mutant(
        "audit-verify-approval-row",
        "audit verify: every approver-signed approval a run holds has its audit row",
        "core/engine/signing.py",
        (("    report.problems += approvals_without_rows(audit)", "    pass"),),
        (S + "test_history_rolled_back_with_the_head_is_found_by_audit_verify",),
    ),
    Mutant(
        "audit-verify-head-behind",
        "audit verify: the head is never shorter than the newest signed row",
        "core/engine/signing.py",
        (('    if head["length"] < last_signed:', "    if False:"),),
        (S + "test_history_rolled_back_with_the_head_is_found_by_audit_verify",),
    ),
    Mutant(
        "approval-binds",
        "shop home: the approval's world and operations are the ones its signature binds",
        "core/engine/signing.py",
        (("    if unbound:\n        return unbound", "    if False:\n        return unbound"),),
        (S + "test_an_approval_whose_state_was_rewritten_after_signing_never_executes",),
    ),
    Mutant(
        "audit-verify-register",
        "audit verify: every write a run made is bound by a signed approval",
        "core/engine/signing.py",
        (
            (
                "    report.problems += writes_without_approvals(world_path(Path(root)) if world_at is None else world_at, audit)",
                "    pass",
            ),
        ),
        (S + "test_history_run_and_head_rolled_back_together_are_found_by_the_register",),
    ),
    Mutant(
        "audit-verify-register-window",
        "audit verify: an approval binds only the writes made while it stood",
        "core/engine/signing.py",
        (
            (
                '        if end is not None and end["decision"] not in MID_EXECUTION_REFUSALS:\n            continue',
                "        if False:\n            continue",
            ),
        ),
        (S + "test_a_lapsed_approval_does_not_bind_a_later_write_rolled_back_out_of_the_audit",),
    ),
    Mutant(
        "audit-verify-binds-head",
        "audit verify: a signed row stands where the chain was when it was signed",
        "core/engine/auditchain.py",
        (("    why_binds = _binds_problem(row, i)", "    why_binds = None"),),
        (S + "test_a_row_signed_at_another_place_in_the_chain_is_reported",),
    ),
    Mutant(
        "read-only-database",
        "a database its owner made read-only refuses every write",
        "core/stores/sqlite/database.py",
        (("            db._refuse_mode(st)\n", "            pass\n"),),
        (S + "test_databases_the_owner_made_read_only_stay_so_and_pay_nothing",),
    ),
    Mutant(
        "owner-pin",
        "team store: a machine refuses an owner key other than the one it first trusted",
        "core/engine/approvers.py",
        (("                if pinned is not None and pinned != owner_key:", "                if False:"),),
        ("tests/engine/test_team_keys.py::test_a_replaced_owner_key_is_refused_on_a_machine_that_pinned_the_first",),
    ),
    Mutant(
        "weak-public-key",
        "a signature under a small-order Ed25519 key (one anyone can sign for) never verifies (a new user's trial)",
        "core/engine/approvers.py",
        (("        if weak_public_key(raw) is not None:\n            return False\n", ""),),
        ("tests/engine/test_approvers.py::test_a_decision_signed_for_a_small_order_key_the_last_release_took_pays_nothing",),
    ),
    Mutant(
        "key-file-public-key",
        "a key file for another public key is named as such at unlock (AES-GCM's associated data refuses it anyway, as a wrong passphrase)",
        "core/engine/approvers.py",
        (("            if local.public_key != entry.public_key:", "            if False:"),),
        ("tests/engine/test_team_keys.py::test_a_key_file_for_another_public_key_is_caught_at_unlock",),
    ),
    Mutant(
        "passphrase-length",
        "a new key's passphrase has at least 12 characters",
        "core/engine/approvers.py",
        (("    if len(passphrase) < MIN_PASSPHRASE:", "    if False:"),),
        (S + "test_a_weak_passphrase_is_refused_for_a_new_key",),
    ),
    Mutant(
        "passphrase-common",
        "a new key's passphrase is not a common password",
        "core/engine/approvers.py",
        (("    if _common(passphrase):", "    if False:"),),
        (S + "test_a_weak_passphrase_is_refused_for_a_new_key",),
    ),
    Mutant(
        "shop-kind-missing",
        "a shop home whose home.json was removed stays a shop",
        "core/api/homekind.py",
        (('            raise _lost(root, evidence, "is missing") from None', '            return "practice"'),),
        (S + "test_a_shop_home_without_its_home_json_stays_a_shop_and_pays_nothing",),
    ),
    Mutant(
        "shop-kind-changed",
        "a shop home whose home.json says practice stays a shop",
        "core/api/homekind.py",
        (('            raise _lost(root, evidence, f"says {kind}")', "            pass"),),
        (S + "test_a_shop_home_without_its_home_json_stays_a_shop_and_pays_nothing",),
    ),
    Mutant(
        "team-store-kind",
        "a practice folder never reaches a shop's team store",
        "core/api/homekind.py",
        (('    return "shop" if made == "shop" else "practice"', '    return folder or "practice"'),),
        ("tests/stores/test_team_store.py::test_a_practice_folder_never_reaches_a_shop_store",),
    ),
    Mutant(
        "db-decide-role",
        "a separated team store's resolver_decide refuses a role below the one the stored proposal needs",
        "core/stores/postgres/roles.py",
        (('        IF {_RANK.format("their_role")} < {_RANK.format("needed")} THEN', "        IF false THEN"),),
        ("tests/stores/test_pg_roles.py::test_an_agent_entry_cannot_record_an_approval_of_the_119_refund_anyhow",),
    ),
    Mutant(
        "db-proposal-by",
        "a separated team store's resolver_decide refuses a proposal an approver's database user wrote (found by a trial)",
        "core/stores/postgres/roles.py",
        (("    IF r.proposal_by IS NOT NULL AND EXISTS", "    IF false AND EXISTS"),),
        ("tests/stores/test_pg_roles.py::test_an_agent_entry_cannot_lower_the_proposal_then_approve_it_and_pay",),
    ),
    Mutant(
        "db-decide-planned",
        "a separated team store's resolver_decide takes only the operations the stored proposal plans (found by a trial)",
        "core/stores/postgres/roles.py",
        (
            (
                "                   WHERE (o->>'index') IS DISTINCT FROM (i - 1)::text)\n           OR (",
                "                   WHERE false)\n           AND (",
            ),
        ),
        ("tests/stores/test_pg_roles.py::test_an_approval_may_carry_only_the_operations_its_stored_proposal_plans",),
    ),
    Mutant(
        "db-register-lock",
        "a separated team store's register guard locks an operation before its one-row check (found by a trial)",
        "core/stores/postgres/roles.py",
        (("        PERFORM pg_advisory_xact_lock(hashtextextended(", "        PERFORM abs(hashtextextended("),),
        ("tests/stores/test_pg_roles.py::test_two_sessions_cannot_both_write_the_row_of_one_approved_operation",),
    ),
    Mutant(
        "policy-sum",
        "a proposal needs the role of each kind of action's summed value (found by a trial)",
        "core/engine/policy.py",
        (("totals[kind] = totals.get(kind, zero) + value", "totals[kind] = max(totals.get(kind, zero), value)"),),
        ("tests/ground/test_data.py::test_a_refund_split_into_lines_needs_the_role_of_their_sum",),
    ),
    Mutant(
        "policy-never-falls",
        "no line lowers the role a proposal needs: every value counted as at least 0",
        "core/engine/policy.py",
        (("value = max(action_value(action), zero)", "value = action_value(action)"),),
        ("tests/engine/test_needed_role.py::test_the_python_rule_gives_the_role_of_every_case",),
    ),
    Mutant(
        "db-never-falls",
        "the team store's role needed counts every value as at least 0 (migration 18)",
        "core/stores/postgres/roles.py",
        (
            (
                "                 SELECT a->>'type' AS kind, GREATEST(CASE a->>'type'",
                "                 SELECT a->>'type' AS kind, COALESCE(CASE a->>'type'",
            ),
        ),
        ("tests/engine/test_needed_role.py::test_the_team_store_gives_the_role_of_every_case",),
    ),
    Mutant(
        "rules-proposal",
        "the runner checks every finish against the proposal rules before it waits for approval",
        "core/engine/runner.py",
        (("broken = problems(actions, ticket, WorldFacts(world), state.evidence, policy)", "broken = []"),),
        (
            "tests/engine/test_proposal_rules.py::test_a_home_recording_that_breaks_a_rule_is_handed_to_a_person_and_nothing_is_paid",
            "tests/engine/test_proposal_rules_property.py::test_nothing_outside_the_rules_waits_for_approval_on_sqlite",
        ),
    ),
    Mutant(
        "rules-decision",
        "a decision asks the proposal rules again (a proposal saved before them, or written by hand)",
        "core/engine/approval.py",
        (("    broken = rules_broken(state, world, policy)\n    if broken:", "    broken = ''\n    if broken:"),),
        ("tests/engine/test_proposal_rules.py::test_a_waiting_proposal_that_breaks_a_rule_is_never_approved",),
    ),
    Mutant(
        "rules-write",
        "the executor asks the proposal rules before every write",
        "core/engine/approval.py",
        (("    broken = rules_broken(state)\n    if broken:", "    broken = ''\n    if broken:"),),
        ("tests/engine/test_proposal_rules.py::test_the_executor_refuses_an_executing_run_whose_proposal_breaks_a_rule",),
    ),
)
"""Every hand mutant: one guard disabled each."""

EQUIVALENT: tuple[tuple[str, str], ...] = (
    (
        "audit row match (core/engine/signing.py check_approval: the row's run, digest, role, name, time)",
        "the Ed25519 signature is verified over the approval's own fields and the row's prev, so a row "
        "that differs can only carry a real approver's real approval; audit verify still reports it",
    ),
    (
        "audit row present (check_approval: no row records this approval)",
        "the signature is verified over the row's prev: without a row there is nothing to verify it over",
    ),
    (
        "role named by the approval = the registry's role (check_approval)",
        "the role is inside the signed message: a changed role fails the signature, a role raised in "
        "the registry fails the registry's seal",
    ),
)
"""Second layers no money-moving forgery reaches alone, with the guard that stops it first."""


def _copy_tree(dst: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "__snapshots__")
    for name in COPY:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore)
        else:
            shutil.copy2(src, dst / name)


def _pytest(tree: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("RESOLVER_HOME", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-x", "-q", "--no-header", *tests],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _apply(tree: Path, mutant: Mutant) -> str | None:
    """Edit the copy; the original text back is returned by the caller. None when applied, else
    why the mutant is stale."""
    path = tree / mutant.path
    text = path.read_text(encoding="utf-8")
    for before, after in mutant.edits:
        n = text.count(before)
        if n != 1:
            return f"{mutant.path}: the text to mutate occurs {n} time(s), not once: {before.splitlines()[0].strip()!r}"
        text = text.replace(before, after)
    path.write_text(text, encoding="utf-8")
    return None


def _first_failure(output: str) -> str:
    """The first assertion line of a pytest report (``E   assert {...} == {...}``), shortened:
    what the mutant changed, so a reader sees it was caught by the world's counts."""
    for line in output.splitlines():
        if line.startswith("E "):
            text = " ".join(line[1:].split())
            return text if len(text) <= 110 else text[:107] + "..."
    return "(no assertion line)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Disable each guard in turn; its tests must fail.")
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="print the mutants and run nothing")
    args = parser.parse_args(argv)
    known = {m.name: m for m in MUTANTS}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        print(f"No mutant {', '.join(unknown)}; the mutants are {', '.join(known)}.", file=sys.stderr)
        return 2
    chosen = [known[n] for n in args.names] if args.names else list(MUTANTS)
    if args.list:
        for m in chosen:
            print(f"{m.name:24} {m.path:20} {m.guard}")
        for what, why in EQUIVALENT:
            print(f"{'(equivalent)':24} {what}: {why}")
        return 0
    with tempfile.TemporaryDirectory(prefix="resolver-mutants-") as tmp:
        tree = Path(tmp)
        _copy_tree(tree)
        every = tuple(dict.fromkeys(t for m in chosen for t in m.tests))
        started = time.monotonic()
        base = _pytest(tree, every)
        if base.returncode != 0:
            print(f"The guards' tests fail without any mutant; fix them first:\n{base.stdout[-3000:]}{base.stderr[-2000:]}")
            return 1
        print(f"unmutated: {len(every)} test(s) pass ({time.monotonic() - started:.0f} s)")
        survived: list[str] = []
        for m in chosen:
            original = (tree / m.path).read_text(encoding="utf-8")
            t0 = time.monotonic()
            stale = _apply(tree, m)
            try:
                if stale:
                    verdict, ok = f"STALE ({stale})", False
                else:
                    run = _pytest(tree, m.tests)
                    caught = run.returncode == 1  # 1: tests failed; other codes are errors, not catches
                    verdict = "caught" if caught else f"SURVIVED (pytest exit {run.returncode})"
                    ok = caught
            finally:
                (tree / m.path).write_text(original, encoding="utf-8")
            print(f"{m.name:24} {verdict:10} {time.monotonic() - t0:5.1f} s  {m.guard}")
            if ok and not stale:
                print(f"{'':24} {_first_failure(run.stdout)}")
            if not ok:
                survived.append(m.name)
        for what, why in EQUIVALENT:
            print(f"{'(equivalent, not run)':24} {what}: {why}")
        total = time.monotonic() - started
        if survived:
            print(f"{len(survived)} of {len(chosen)} mutant(s) not caught: {', '.join(survived)} ({total:.0f} s)")
            return 1
        print(f"every mutant caught: {len(chosen)} of {len(chosen)} ({total:.0f} s)")
        return 0


if __name__ == "__main__":
    sys.exit(main())
