"""Plain-text views of a run, shared by the CLI and the app: the approval request, the
operations report, the trace and the line-by-line diff of two runs' actions.

Every function returns a list of lines. Untrusted text (ticket text, evidence, reply drafts,
names, reasons) is passed through :func:`safe_text`, which removes control characters (ESC
sequences must never reach a terminal); the app additionally never parses these lines as markup.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from typing import Any

from core.clock import iso
from core.data import customer_names, load_task
from core.policy import ROLE_LABELS, may_approve, proposal_role, who_may_approve
from core.state import TaskState, action_line, action_short

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_ESCAPE_SEQ = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|[@-Z\\-_])")


def safe_text(text: Any) -> str:
    """``text`` as a string with terminal escape sequences and control characters removed.

    Newlines and tabs stay; ``ESC ] 0 ; title BEL`` and ``ESC [ 31 m`` go whole; any other
    C0/C1 control character is dropped.
    """
    value = str(text)
    value = _ESCAPE_SEQ.sub("", value)
    return _CONTROL.sub("", value.replace("\r\n", "\n").replace("\r", "\n"))


def _indent(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line for line in safe_text(text).splitlines() or [""]]


def approval_request(state: TaskState) -> list[str]:
    """The approval request as seed 000 prints it: run and ticket, proposed by, rule, the
    actions under "nothing has happened yet", who may approve, reason, evidence, reply draft,
    digest."""
    p = state.proposal
    if p is None:
        return [f"Run {state.run_id} (ticket {state.task_id}) has no proposal yet; it is {state.status}."]
    lines = [f"Approval needed for run {state.run_id} (ticket {state.task_id})", f"Proposed by: {state.variant}, {state.model}. Rule: {safe_text(p.rule)}.", *ticket_lines(state), "", "Actions (nothing has happened yet):"]
    lines += [f"  {i}. {safe_text(action_line(a))}" for i, a in enumerate(p.actions, 1)]
    needed = proposal_role(p.actions)
    lines += ["", f"Who may approve: {who_may_approve(needed)}", "", "Reason:"]
    lines += _indent(p.reason)
    lines += ["", "Customer's message:"]
    lines += _indent(load_task(state.task_id).message)
    lines += ["", "Evidence:"]
    for ev in state.evidence:
        lines.append(f"  step {ev.step}: {ev.tool} {safe_text(json.dumps(ev.args, ensure_ascii=False))}")
        lines += _indent(json.dumps(ev.result, ensure_ascii=False, indent=1, default=str), "    ")
    if not state.evidence:
        lines.append("  (no tool calls)")
    lines += ["", "Reply draft:"]
    lines += _indent(p.reply_draft or "(none)")
    lines += ["", f"Digest: {p.short_digest} (sha256 {p.digest})"]
    return lines


def ticket_lines(state: TaskState) -> list[str]:
    """``Ticket: "subject" from Maya Thompson, order LK-507862``."""
    task = load_task(state.task_id)
    return [f"Ticket: \"{safe_text(task.subject)}\" from {safe_text(customer_names().get(task.customer_id, task.customer_id))}, order {task.order_id}"]


def standing(state: TaskState, role: str) -> str:
    """The approver's standing: ``You are team lead: you may approve`` or ``Needs grace``."""
    if state.proposal is None or not state.proposal.actions:
        return ""
    needed = proposal_role(state.proposal.actions)
    if may_approve(role, needed):
        return f"You are {ROLE_LABELS[role]}: you may approve"
    return f"Needs {who_may_approve(needed)} (you are {ROLE_LABELS[role]})"


def operation_lines(state: TaskState) -> list[str]:
    """One line per operation: ``request_refund LK-793996: done (operation 797f..., 1 call(s))``
    with the service's refusal message where there is one."""
    lines = []
    for op in state.operations:
        order = getattr(op.action, "order_id", "")
        line = f"{op.action.type} {order}: {op.status} (operation {op.operation_id}, {op.calls} call(s))"
        if op.status == "failed" and op.error:
            line += f" {safe_text(op.error)}"
        lines.append(line)
    return lines


def decision_lines(state: TaskState) -> list[str]:
    """Who approved or rejected the run, when, and why."""
    out = []
    if state.approval:
        a = state.approval
        out.append(f"Approved by {safe_text(a.name)} ({a.role}) at {iso(a.at)}, digest {a.digest[:12]}")
    if state.rejection:
        r = state.rejection
        out.append(f"Rejected by {safe_text(r.name)} ({r.role}) at {iso(r.at)}: {safe_text(r.reason)}")
    return out


def trace_lines(events: Iterable[dict[str, Any]]) -> list[str]:
    """The events table of a run, one line each: ``  3  2026-10-09T17:00:50-04:00  tool_call  ...``."""
    return [f"{e['seq']:>3}  {e['at']}  {e['kind']:<16} {safe_text(e['message'])}" for e in events]


def diff_lines(a: TaskState, b: TaskState) -> list[str]:
    """The actions of two runs line by line (seed 000's diagnose step), as a unified diff
    (``-`` only in the first, ``+`` only in the second, two spaces in both)."""

    def actions(s: TaskState) -> list[str]:
        if s.proposal is None:
            return [f"(no proposal: {s.status})"]
        if not s.proposal.actions:
            return [f"({s.proposal.outcome}, no actions)"]
        return [safe_text(action_short(x)) for x in s.proposal.actions]

    left, right = actions(a), actions(b)
    lines = [f"--- {a.run_id} ({a.status}, digest {a.proposal.short_digest if a.proposal else '-'})",
             f"+++ {b.run_id} ({b.status}, digest {b.proposal.short_digest if b.proposal else '-'})"]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right).get_opcodes():
        if tag == "equal":
            lines += [f"  {x}" for x in left[i1:i2]]
        else:
            lines += [f"- {x}" for x in left[i1:i2]]
            lines += [f"+ {x}" for x in right[j1:j2]]
    if left == right:
        lines.append("The two runs propose the same actions.")
    return lines
