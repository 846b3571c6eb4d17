"""The tamper-evident audit: every audit row carries the hash of the row before it.

The ``audit`` table of ``runs.sqlite`` gains two columns, added on first use (nullable, so a
store of release 0.1.0, or one made before the audit was chained, keeps its rows as an unchained prefix):

- ``prev``: the SHA-256 (hex) of the row before it (:data:`GENESIS` for the first chained row);
- ``sig``: in a shop home, the deciding approver's Ed25519 signature of the decision
  (:mod:`core.engine.signing`); empty for a row the system wrote (an execution the executor refused).
- ``binds``: on a signed row, the canonical JSON of what the signature binds beside
  the decision: ``head``, the chain as the signer saw it (``"<length>:<hash of the newest
  row>"``), and on an approval the world fingerprint it was approved against (``world``) and the
  IDs of the operations it commits to (``ops``). NULL on older rows and system rows.

A row's hash (:func:`row_hash`) is the SHA-256 of the canonical JSON of every column, its ``id``
and ``prev`` included, so editing, deleting or inserting a row breaks the chain after it.
Deleting the newest rows leaves a shorter chain that is still whole, so the chain's length and
latest hash are also kept outside the audit table, in ``audit.head`` in the home folder (on a
team store, its ``shop_parts`` row: :func:`write_head`), signed by the owner at ``resolver approvers init`` and by the deciding
approver at each decision. ``resolver audit verify`` (:func:`verify_audit`) checks the chain, the
head, each row's signature and the append-only triggers.

The chain's rules are here; its SQL (append, read, the chain's tip) is each back-end's
(:mod:`core.stores.sqlite.audit`, :mod:`core.stores.postgres.audit`), reached
through :class:`core.contract.store.AuditReader`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.contract.audit import GENESIS, HEAD_FILE, REFUSED_PREFIX, TRIGGERS, read_binds, row_hash
from core.stores import parts_at

if TYPE_CHECKING:
    from core.contract.store import AuditReader, ShopParts


def _binds_problem(row: dict[str, Any], index: int) -> str | None:
    """Why a row's signed ``binds`` disagrees with where the row stands, or None: the
    head it records must be the chain just before it, ``index`` rows ending with its ``prev``."""
    try:
        binds = read_binds(row)
    except ValueError:
        return "its binds cannot be read (edited, or written outside resolver)"
    if binds is None or binds["head"] == f"{index}:{row['prev']}":
        return None
    length = binds["head"].split(":", 1)[0]
    return (
        f"it was signed when the chain had {length} row(s) ending as its prev says, but {index} row(s) stand "
        "before it: rows before it were deleted, inserted or rewritten"
    )


def _voided_approvals(all_rows: list[dict[str, Any]]) -> list[str]:
    """Each approve row followed by a refresh row of the same run with no refusal between them.
    resolver refreshes only a waiting run, and an approved run waits again only after
    a ``refused...`` row (a lapse, a decision that was never an approver's), so such a pair means
    the run was set back to waiting outside resolver; that approval never executes."""
    open_approval: dict[str, dict[str, Any]] = {}
    out: list[str] = []
    for row in all_rows:
        run = row["run_uid"] or row["run_id"]
        if row["decision"] == "approve":
            open_approval[run] = row
        elif str(row["decision"]).startswith(REFUSED_PREFIX):
            open_approval.pop(run, None)
        elif row["decision"] == "refresh" and run in open_approval:
            a = open_approval.pop(run)
            out.append(
                f"row {a['id']} ({a['run_id']}, approve) is followed by row {row['id']} (refresh) with no refusal between: "
                "the run was set back to waiting outside resolver, and that approval is void"
            )
    return out


# -- the head outside the database -----------------------------------------------------------------


def head_message(length: int, latest: str) -> bytes:
    """What an ``audit.head`` signature covers."""
    return f"resolver-audit-head-v1\n{length}\n{latest}".encode()


def write_head(where: Path | ShopParts, length: int, latest: str, signer: str, signature: str) -> None:
    """Write ``audit.head`` (atomically; a file of mode 0600 in a SQLite home, a row of the team
    store's ``shop_parts``): the chain's ``length``, ``latest`` hash, the ``signer``'s
    name and their Ed25519 ``signature`` (hex) of :func:`head_message`. ``where``: the home's
    per-shop parts (:func:`core.stores.open_shop_parts`), or its folder.

    Raises:
        OSError: the head cannot be written (a folder in its place, a full disk); no temporary
            file is left behind. ResolverError: the team store cannot be reached."""
    body = json.dumps({"length": length, "hash": latest, "signer": signer, "signature": signature}) + "\n"
    parts_at(where).write(HEAD_FILE, body.encode("utf-8"))


def read_head(where: Path | ShopParts) -> dict[str, Any] | None:
    """``audit.head`` as a dict, or None when absent (``where`` as for :func:`write_head`).
    Raises ValueError when unreadable, OSError when the file cannot be read, ResolverError when
    the team store cannot be reached."""
    data = parts_at(where).read(HEAD_FILE)
    if data is None:
        return None
    raw = json.loads(data.decode("utf-8"))
    if not isinstance(raw, dict) or not isinstance(raw.get("length"), int) or not isinstance(raw.get("hash"), str):
        raise ValueError("not an audit head")
    return raw


# -- verify ----------------------------------------------------------------------------------------


@dataclass
class AuditReport:
    """What :func:`verify_audit` found: ``problems`` (one sentence each; empty when whole),
    ``length`` (rows), ``chained`` (rows carrying ``prev``), ``latest`` (the newest row's hash)."""

    length: int = 0
    chained: int = 0
    latest: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when nothing was found."""
        return not self.problems

    def lines(self) -> list[str]:
        """The report as lines for the CLI and ``resolver doctor``."""
        if self.ok:
            legacy = self.length - self.chained
            extra = f" ({legacy} older row(s) from before the chain)" if legacy else ""
            return [f"Audit: {self.length} row(s), chain whole{extra}, latest {self.latest[:16]}."]
        return [f"Audit: {len(self.problems)} problem(s) in {self.length} row(s):", *(f"  {p}" for p in self.problems)]


RowCheck = Callable[[dict[str, Any]], str | None]
HeadCheck = Callable[[dict[str, Any]], str | None]


def verify_audit(
    audit: AuditReader,
    root: Path | ShopParts | None = None,
    *,
    check_row: RowCheck | None = None,
    check_head: HeadCheck | None = None,
    head_required: bool = False,
) -> AuditReport:
    """Check the audit of a store (``audit``, its :class:`core.contract.store.AuditReader`) and, with
    ``root`` (the home's folder or per-shop parts, :func:`read_head`), its ``audit.head``.

    Finds: a missing append-only trigger; a chained row whose ``prev`` is not the hash of the
    row before it (a row edited, deleted or inserted before it); an unchained row after a
    chained one; a signed row whose ``binds`` records another place in the chain; an
    approval followed by a refresh of its run with no refusal between; a row
    ``check_row`` refuses (a shop home checks each decision's signature
    against the registry); a head longer than the chain (the newest rows deleted), or whose hash
    is not the chain's row at its length, or that ``check_head`` refuses (its signature);
    ``head_required`` and no head.
    """
    report = AuditReport()
    _check_triggers(audit, report)
    all_rows = audit.audit_rows()
    report.length = len(all_rows)
    hashes = _check_chain(all_rows, report, check_row)
    report.latest = hashes[-1] if hashes else GENESIS
    report.problems += _voided_approvals(all_rows)
    if root is None:
        return report
    _check_head_file(root, report, hashes, check_head=check_head, head_required=head_required)
    return report


def _check_triggers(audit: AuditReader, report: AuditReport) -> None:
    """Name each append-only trigger the audit lacks (someone dropped it)."""
    names = audit.audit_triggers()
    for t in TRIGGERS:
        if t not in names:
            report.problems.append(f"the append-only trigger {t} is missing: someone dropped it, so rows may have been changed")


def _check_chain(all_rows: list[dict[str, Any]], report: AuditReport, check_row: RowCheck | None) -> list[str]:
    """Walk the rows in order, counting the chained ones and naming each break of the chain (an
    unchained row after chained ones, a wrong ``prev``, a wrong ``binds``, a row ``check_row``
    refuses); returns each row's hash, in order."""
    hashes: list[str] = []
    prev_hash = GENESIS
    started = False
    for i, row in enumerate(all_rows):
        if row["prev"] is None:
            if started:
                report.problems.append(
                    f"row {row['id']} ({row['run_id']}, {row['decision']}) carries no chain hash after chained rows: inserted"
                )
        else:
            if not started:
                started = True
                expected = GENESIS if i == 0 else prev_hash
            else:
                expected = prev_hash
            report.chained += 1
            _check_chained_row(row, i, expected, report, check_row)
        prev_hash = row_hash(row)
        hashes.append(prev_hash)
    return hashes


def _check_chained_row(row: dict[str, Any], i: int, expected: str, report: AuditReport, check_row: RowCheck | None) -> None:
    """One chained row: its ``binds`` records its place, its ``prev`` is ``expected``, and
    ``check_row`` (when given) accepts it."""
    why_binds = _binds_problem(row, i)
    if why_binds:
        report.problems.append(f"row {row['id']} ({row['run_id']}, {row['decision']}): {why_binds}")
    if row["prev"] != expected:
        report.problems.append(
            f"row {row['id']} ({row['run_id']}, {row['decision']}) does not follow the row before it: "
            "a row before it was edited, deleted or inserted"
        )
    if check_row is not None:
        why = check_row(row)
        if why:
            report.problems.append(f"row {row['id']} ({row['run_id']}, {row['decision']}): {why}")


def _check_head_file(
    root: Path | ShopParts,
    report: AuditReport,
    hashes: list[str],
    *,
    check_head: HeadCheck | None,
    head_required: bool,
) -> None:
    """The head (:func:`read_head`) against the chain: readable, present when required, no longer
    than the chain, the hash of the chain's row at its length, and accepted by ``check_head``."""
    try:
        head = read_head(root)
    except (OSError, ValueError):
        report.problems.append(f"{HEAD_FILE} cannot be read: restore it from a backup")
        return
    if head is None:
        if head_required:
            report.problems.append(f"{HEAD_FILE} is missing: the newest rows cannot be checked")
        return
    n = head["length"]
    if n > report.length:
        report.problems.append(f"{HEAD_FILE} records {n} row(s) but the audit has {report.length}: the newest rows were deleted")
    elif n > 0 and hashes[n - 1] != head["hash"]:
        report.problems.append(f"row {n} is not the one {HEAD_FILE} records: the audit was rewritten")
    elif n == 0 and head["hash"] != GENESIS:
        report.problems.append(f"{HEAD_FILE} records an empty audit with a hash: it was edited")
    if check_head is not None:
        why = check_head(head)
        if why:
            report.problems.append(f"{HEAD_FILE}: {why}")
