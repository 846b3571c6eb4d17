"""Views of a run, shared by the CLI and the app: the approval request, the operations report,
the trace, the line-by-line diff of two runs' actions, the status texts and role labels, the
"what happened" lines after approve, reject and resume, and the detail of one run as a typed
record (:class:`RunDetail`) built from a checkpoint, the rulebook and the approver.

Every line function returns a list of lines. Untrusted text (ticket text, evidence, reply drafts,
names, reasons) is passed through :func:`safe_text`, which removes control characters (ESC
sequences must never reach a terminal); the app additionally never parses these lines as markup.
It never takes the shape of the request's own lines either. A single-line field (a
subject, a name, a rule, an ID, a reason) goes through :func:`one_line` (its line breaks shown as
``⏎``); a multi-line value (the customer's message, the reason, a tool's output, the reply draft)
through :func:`block`, every line marked ``│ ``, a mark the request's own lines never carry.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from core.engine.policy import may_approve, proposal_role, who_may_approve
from core.engine.preconditions import unread
from core.engine.rulebook import ACTIONS, Action, Approver, decided_by, offers, person, role_label
from core.engine.runner import outcome_line
from core.ground.clock import age, iso, parse_time
from core.ground.data import DataError, TaskNotFound, Ticket, customer_names, find_task
from core.ground.safetext import BLOCK_MARK, block, not_one_line, one_line, safe_text
from core.ground.state import FINAL_STATUSES, TaskState, WorldSeen, action_line, action_short, execution_started
from core.models.pricing import show_usd

__all__ = [  # the rulebook's Approver, ACTIONS and role labels are part of the faces' view
    "ACTIONS",
    "BLOCK_MARK",
    "RESUMED",
    "STATUS_SHORT",
    "UNREACHABLE",
    "UNREADABLE",
    "Action",
    "Approver",
    "Decision",
    "RunDetail",
    "Tone",
    "WorldSeen",
    "after_approve",
    "after_reject",
    "after_resume",
    "age_text",
    "ages_lines",
    "approval_request",
    "approve_dialog",
    "approved_vs_current",
    "block",
    "changes_lines",
    "decided_by",
    "decision_lines",
    "describe",
    "diff_lines",
    "effect_ids",
    "execution_lines",
    "history_lines",
    "not_one_line",
    "one_line",
    "operation_lines",
    "operations_list",
    "precondition_lines",
    "proposal_record",
    "refused_lines",
    "reject_dialog",
    "reply_line",
    "role_label",
    "safe_text",
    "standing",
    "status_lines",
    "status_short",
    "status_text",
    "ticket_lines",
    "trace_lines",
    "unreachable_detail",
    "unreadable_detail",
    "usage_line",
]


def _indent(text: str, prefix: str = "  ") -> list[str]:
    """A multi-line untrusted value as a marked block (:func:`core.ground.safetext.block`)."""
    return block(text, prefix)


def _ticket(state: TaskState, tickets: Path | None) -> Ticket | None:
    """The run's ticket: shipped, or the home's own in ``tickets`` (:func:`core.ground.data.find_task`);
    None when its file is gone or damaged (a view still shows the run)."""
    try:
        return find_task(state.task_id, tickets)
    except (TaskNotFound, DataError):
        return None


def approval_request(state: TaskState, tickets: Path | None = None) -> list[str]:
    """The approval request as seed 000 prints it: run and ticket, proposed by, rule, the
    actions under "nothing has happened yet", who may approve, reason, evidence, reply draft,
    digest. ``tickets`` is the home's folder of its own tickets (``resolver ticket add``); a
    ticket whose file cannot be read shows the text the run was given instead."""
    p = state.proposal
    if p is None:
        return [f"Run {state.run_id} (ticket {state.task_id}) has no proposal yet; it is {state.status}."]
    lines = [
        f"Approval needed for run {state.run_id} (ticket {state.task_id})",
        f"Proposed by: {one_line(state.variant)}, {one_line(state.model)}. Rule: {one_line(p.rule)}.",
        *ticket_lines(state, tickets),
        "",
        "Actions (nothing has happened yet):",
    ]
    lines += [f"  {i}. {one_line(action_line(a))}" for i, a in enumerate(p.actions, 1)]
    never = unread(state)
    if never:  # a person approving is told what the agent did not look at
        lines += ["Not read by the agent:", *(f"  {one_line(u.text())}" for u in never)]
    refused = refused_lines(state) if not p.actions else []
    if refused:  # nothing to approve: say so where the actions would be, never "who may approve"
        lines += ["  (none offered for approval: the proposal rules refused what the agent proposed)", "", *refused]
        said = next((e for e in reversed(state.events) if e.kind == "proposal_refused"), None)
        lines += ["", "The agent's reason:", *_indent(str(said.data.get("reason", "")) if said else "")]
    else:
        needed = proposal_role(p.actions)
        lines += ["", f"Who may approve: {who_may_approve(needed)}", "", "Reason:"]
        lines += _indent(p.reason)
    lines += ["", "Customer's message:"]
    task = _ticket(state, tickets)
    if task is None:  # core's note on its own line; what the run was given stays a marked block
        lines.append("  (the ticket's file cannot be read; the run was given:)")
    given = next((m.content for m in state.messages if m.role == "user"), "")
    lines += _indent(task.message if task is not None else given)
    lines += ["", "Evidence:"]
    for ev in state.evidence:
        lines.append(f"  step {ev.step}: {one_line(ev.tool)} {one_line(json.dumps(ev.args, ensure_ascii=False))}")
        lines += _indent(json.dumps(ev.result, ensure_ascii=False, indent=1, default=str), "    ")
    if not state.evidence:
        lines.append("  (no tool calls)")
    lines += ["", "Reply draft:"]
    lines += _indent(p.reply_draft or "(none)")
    if p.recipient:
        lines.append(f"  (to {one_line(p.recipient)})")
    pre = precondition_lines(state)
    if pre:
        lines += ["", *pre]
    lines += ["", f"Digest: {p.short_digest} (sha256 {p.digest})"]
    return lines


def ticket_lines(state: TaskState, tickets: Path | None = None) -> list[str]:
    """``Ticket: "subject" from Maya Thompson, order LK-507862`` (``tickets``: as for
    :func:`approval_request`)."""
    task = _ticket(state, tickets)
    if task is None:
        return [f"Ticket: {one_line(state.task_id)}, whose file cannot be read, order {one_line(state.order_id)}"]
    return [
        f'Ticket: "{one_line(task.subject)}" from {one_line(customer_names().get(task.customer_id, task.customer_id))}, order {one_line(task.order_id)}'
    ]


def standing(state: TaskState, role: str, refused: str | None = None) -> str:
    """The approver's standing under the current policy: ``Your role, team lead, may approve
    this (it needs team lead or above)`` or ``Needs team lead or above (your role: agent)``; ''
    without actions. ``refused`` is the rulebook's sentence when approve is not offered for
    another reason: then the line never says "may approve" ("you may approve" never
    stands beside a refusal of approve)."""
    if state.proposal is None or not state.proposal.actions:
        return ""
    needed = proposal_role(state.proposal.actions)
    if may_approve(role, needed):
        if refused:
            return f"Your role, {role_label(role)}, is high enough, but approve is not offered now (below)."
        return f"Your role, {role_label(role)}, may approve this (it needs {who_may_approve(needed)})."
    return f"Needs {who_may_approve(needed)} (your role: {role_label(role)})."


REPLY_WORDS = {
    "planned": "will go out after the actions",
    "pending": "being sent (resume reconciles it)",
    "done": "sent",
    "failed": "not sent",
}
"""The reply to the customer, by its operation's status."""


def reply_line(status: str, operation_id: str | None = None, handed: bool = False) -> str:
    """The reply on its own line after the actions: ``Reply to the customer: sent (operation
    1a2b...)``; a planned reply of a run handed to a person says it will not go out."""
    words = "not sent: the run went to a person" if handed and status == "planned" else REPLY_WORDS.get(status, status)
    return f"Reply to the customer: {words}" + (f" (operation {operation_id})" if operation_id else "")


def operations_list(actions: list[str], has_reply: bool) -> list[str]:
    """The one list of operations every view shows before a decision: the actions exactly as
    the lesson prints them under "Actions (nothing has happened yet)" (``  1. request_refund
    ...``), then the reply on its own line after them, not numbered."""
    lines = [f"  {i}. {a}" for i, a in enumerate(actions, 1)]
    if has_reply:
        lines.append("  " + reply_line("planned"))
    return lines


_EFFECT_SKIP = {"order_id", "customer_id", "operation_id", "payment_id", "charge_id"}


def effect_ids(result: dict[str, Any] | None) -> str:
    """What a done operation made in the world, as ``refund_id RF-4CFEAE8E``: the ``*_id`` fields
    of the service's result other than the inputs ('' when there are none)."""
    if not result:
        return ""
    return ", ".join(f"{k} {one_line(v)}" for k, v in result.items() if k.endswith("_id") and k not in _EFFECT_SKIP)


def _op_line(op: Any) -> str:
    order = getattr(op.action, "order_id", "")
    line = f"{op.action.type} {order}: {op.status} (operation {op.operation_id}, {op.calls} call(s))"
    if op.status == "failed" and op.error:
        line += f" {one_line(op.error)}"
    return line


def _reply(state: TaskState) -> str | None:
    op = next((o for o in state.operations if o.action.type == "send_reply"), None)
    return None if op is None else reply_line(op.status, op.operation_id, state.status == "handed_to_person")


def operation_lines(state: TaskState) -> list[str]:
    """One line per operation: ``request_refund LK-793996: done (operation 797f..., 1 call(s))``
    with the service's refusal message where there is one (seed 000 prints these); the reply
    comes last on its own line (:func:`reply_line`)."""
    lines = [_op_line(op) for op in state.operations if op.action.type != "send_reply"]
    reply = _reply(state)
    return [*lines, reply] if reply else lines


def status_lines(state: TaskState) -> list[str]:
    """What the run's status is, in words, for the pane and ``resolver show``: waiting shows the
    request's operations, who may approve and the digest; executing the progress per operation;
    done the decision and what happened, with effect IDs; handed to a person why and by whom;
    running and stopped where the loop is."""
    p = state.proposal
    status = state.status
    if status == "waiting_approval" and p is not None:
        needed = proposal_role(p.actions)
        return [
            "Waiting approval. Actions (nothing has happened yet):",
            *operations_list([one_line(action_line(a)) for a in p.actions], bool(p.reply_draft.strip())),
            f"Who may approve: {who_may_approve(needed)}",
            f"Digest: {p.short_digest}",
        ]
    ops = operation_lines(state)
    decided = decision_lines(state)
    if status == "executing":
        done = sum(1 for op in state.operations if op.status == "done")
        return [f"Executing: {done} of {len(state.operations)} operation(s) done.", *decided, *(f"  {x}" for x in ops)]
    if status == "done":
        lines = ["Done.", *decided, "What happened:"]
        for op in state.operations:
            if op.action.type != "send_reply":
                effect = effect_ids(op.result)
                lines.append(f"  {_op_line(op)}" + (f" -> {effect}" if effect else ""))
        reply = _reply(state)
        lines += [f"  {reply}"] if reply else []
        if not state.operations:
            why = f"the outcome was {p.outcome} (rule {one_line(p.rule)})" if p is not None else "no proposal"
            lines.append(f"  nothing to write: {why}")
        return lines
    if status == "handed_to_person":
        last = next((e for e in reversed(state.events) if e.kind == "handed_to_person"), None)
        refused = refused_lines(state)
        if refused and state.rejection is None and last is None:
            return [
                f"Handed to a person: {refused[0][0].lower()}{refused[0][1:]}",
                *refused[1:],
                *decided,
                *(f"  {x}" for x in ops),
            ]
        if state.rejection is not None:
            r = state.rejection
            why = f"rejected by {person(r.name, r.role)}: {one_line(r.reason)}"
        elif last is not None:
            failed = any(op.status == "failed" for op in state.operations)
            what = "the service refused the write" if failed else "the executor refused before any write"
            by = f"approved by {person(state.approval.name, state.approval.role)}, then " if state.approval else ""
            why = f"{by}{what}: {one_line(last.message)}"
        elif p is not None:
            why = (
                f"the agent ({one_line(state.variant)}, {one_line(state.model)}) handed it over under rule {one_line(p.rule)}"
                + (f": {one_line(p.reason.strip())}" if p.reason.strip() else "")
            )
        else:
            why = "no reason was recorded"
        return [f"Handed to a person: {why}.", *decided, *(f"  {x}" for x in ops)]
    if status == "running":
        return [f"Running: saved after step {state.step} of at most {state.max_steps}."]
    return [f"{status_text(status).capitalize()}.", *decided, *(f"  {x}" for x in ops)]


def refused_lines(state: TaskState) -> list[str]:
    """Why the agent's proposal was never offered for approval (:mod:`core.engine.proposal_rules`):
    ``The agent's proposal was not offered for approval: it breaks 2 of the proposal rules.``,
    then ``  P2 (amounts and quantities that move something): line 2 refunds -100.00 CAD ...``,
    one line per broken rule, and ``  It proposed: ...``; empty when no rule was broken. Read
    from the run's ``rule_broken`` and ``proposal_refused`` events, so every face shows the
    same lines."""
    broken = [e for e in state.events if e.kind == "rule_broken"]
    if not broken:
        return []
    rules = len({str(e.data.get("rule", "")) for e in broken})
    lines = [f"The agent's proposal was not offered for approval: it breaks {rules} of the proposal rules."]
    lines += [f"  {one_line(e.data.get('text') or e.message)}" for e in broken]
    proposed = next((e for e in reversed(state.events) if e.kind == "proposal_refused"), None)
    if proposed is not None:
        lines.append(f"  It proposed: {one_line(proposed.data.get('proposed', ''))}")
    return lines


def proposal_record(state: TaskState, tickets: Path | None = None) -> list[str]:
    """The approval request of a decided run, retitled: it no longer says "Approval needed" or
    "nothing has happened yet" (the status lines above it say what happened). ``tickets``: as
    for :func:`approval_request`."""
    lines = approval_request(state, tickets)
    if state.status == "waiting_approval" or state.proposal is None:
        return lines
    out = [f"Proposal of run {state.run_id} (ticket {state.task_id}), {status_text(state.status)}"]
    for line in lines[1:]:
        out.append("Proposed actions:" if line == "Actions (nothing has happened yet):" else line)
    return out


def decision_lines(state: TaskState) -> list[str]:
    """Who approved or rejected the run, when, and why."""
    out = []
    if state.approval:
        a = state.approval
        out.append(f"Approved by {person(a.name, a.role)} at {iso(a.at)}, digest {a.digest[:12]}")
    if state.rejection:
        r = state.rejection
        out.append(f"Rejected by {person(r.name, r.role)} at {iso(r.at)}: {one_line(r.reason)}")
    return out


def trace_lines(events: Iterable[dict[str, Any]]) -> list[str]:
    """The events table of a run, one line each: ``  3  2026-10-09T17:00:50-04:00  tool_call  ...``."""
    return [f"{e['seq']:>3}  {e['at']}  {e['kind']:<16} {one_line(e['message'])}" for e in events]


def diff_lines(a: TaskState, b: TaskState) -> list[str]:
    """The actions of two runs line by line (seed 000's diagnose step), as a unified diff
    (``-`` only in the first, ``+`` only in the second, two spaces in both)."""

    def actions(s: TaskState) -> list[str]:
        if s.proposal is None:
            return [f"(no proposal: {s.status})"]
        if not s.proposal.actions:
            return [f"({s.proposal.outcome}, no actions)"]
        return [one_line(action_short(x)) for x in s.proposal.actions]

    left, right = actions(a), actions(b)
    lines = [
        f"--- {a.run_id} ({a.status}, digest {a.proposal.short_digest if a.proposal else '-'})",
        f"+++ {b.run_id} ({b.status}, digest {b.proposal.short_digest if b.proposal else '-'})",
    ]
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=left, b=right).get_opcodes():
        if tag == "equal":
            lines += [f"  {x}" for x in left[i1:i2]]
        else:
            lines += [f"- {x}" for x in left[i1:i2]]
            lines += [f"+ {x}" for x in right[j1:j2]]
    if left == right:
        lines.append("The two runs propose the same actions.")
    return lines


# -- status texts, labels and ages ------------------------------------------------------------

STATUS_SHORT = {"waiting_approval": "waiting", "handed_to_person": "handed"}
"""Short status labels for narrow columns (the app's table)."""


def status_text(status: str | None) -> str:
    """``waiting approval`` for ``waiting_approval``: a status as a person reads it."""
    return (status or "?").replace("_", " ")


def status_short(status: str | None) -> str:
    """``waiting``, ``handed``, or the status itself: for a narrow column."""
    return STATUS_SHORT.get(status or "", status or "")


def age_text(since_iso: str, now: datetime) -> str:
    """How long since ``since_iso`` (ISO 8601), as ``2d 16h``; ``?`` when it cannot be read."""
    try:
        return age(parse_time(since_iso), now)
    except (ValueError, TypeError):
        return "?"


# -- what happened after approve, reject and resume --------------------------------------------


def execution_lines(state: TaskState) -> list[str]:
    """The operations after an execution, then ``Refused: ...`` when the executor handed the
    run to a person before any write failed (a signature, digest or policy check)."""
    out = operation_lines(state)
    if state.status == "handed_to_person":
        last = next((e for e in reversed(state.events) if e.kind == "handed_to_person"), None)
        if last and not any(op.status == "failed" for op in state.operations):
            out.append(f"Refused: {one_line(last.message)}")
    return out


def after_approve(state: TaskState) -> list[str]:
    """``Run X approved by Grace (grace): now handed to person.``, then :func:`execution_lines`."""
    a = state.approval
    who = person(a.name, a.role) if a else "?"
    return [f"Run {state.run_id} approved by {who}: now {status_text(state.status)}.", *execution_lines(state)]


def after_reject(state: TaskState) -> list[str]:
    """``Run X rejected by Tomás (team lead): the reason``."""
    r = state.rejection
    if r is None:
        return [f"Run {state.run_id} is {status_text(state.status)}."]
    return [f"Run {state.run_id} rejected by {person(r.name, r.role)}: {one_line(r.reason)}"]


RESUMED = {
    "continued": "continued its loop",
    "executed": "reconciled and finished",
    "request": "is waiting approval",
    "final": "was already final",
}
"""What :meth:`core.api.home.Home.resume` did, by its ``kind``, in words."""


def after_resume(kind: str, before: str, state: TaskState) -> list[str]:
    """``Run X reconciled and finished: executing -> done.``, then the outcome line (a loop that
    continued) or :func:`execution_lines`."""
    said = [f"Run {state.run_id} {RESUMED.get(kind, kind)}: {status_text(before)} -> {status_text(state.status)}."]
    if kind == "continued":
        return [*said, f"Outcome: {outcome_line(state)}"]
    if before == "executing" and state.status == "waiting_approval":  # the approval lapsed or was refused
        last = next((e for e in reversed(state.events) if e.kind in ("approval_lapsed", "back_to_waiting")), None)
        return [*said, *([f"Back to waiting: {one_line(last.message)}"] if last else [])]
    return [*said, *execution_lines(state)]


def usage_line(state: TaskState) -> str:
    """``Usage: 2 model call(s), 1 tool call(s), 3120 tokens in, 88 tokens out, US$0.00036``."""
    u = state.usage
    return (
        f"Usage: {u.model_calls} model call(s), {u.tool_calls} tool call(s), {u.tokens_in} tokens in, "
        f"{u.tokens_out} tokens out, {show_usd(u.cost_usd)}"
    )


# -- the detail of one run -----------------------------------------------------------------------

Tone = Literal["", "ok", "warn", "error"]

UNREADABLE = "Its checkpoint cannot be read, so nothing can be done with this run."

UNREACHABLE = "The store does not answer now, so nothing can be done with this run until it does."


@dataclass(frozen=True)
class Decision:
    """What a decision dialog repeats and then hands back to :class:`core.api.home.Home`: the run,
    the digest and checkpoint version the person read (so a refresh cannot change what is
    decided), the numbered action lines and whether a reply draft goes out too."""

    run_id: str
    task_id: str
    digest: str
    version: int
    actions: list[str]
    has_reply: bool
    world: tuple[str, ...] = ()
    """The "world now" lines: ages, what changed since the agent looked, and the
    preconditions that fail; the approve dialog repeats them."""
    seen: WorldSeen | None = None
    """The lookups' data those lines were made from: the approval is bound to it."""
    needed: str = ""
    """The role the proposal needs (``team_lead``), '' when unknown: both dialogs and the
    command line's question say who may approve."""


@dataclass(frozen=True)
class RunDetail:
    """The detail of one run for one approver, as both faces show it.

    ``title`` is ``run · ticket · status``; ``notes`` (with ``tone``: ok, warn, error) say the
    approver's standing, other runs of the ticket, an executing run or an unreadable checkpoint;
    ``offers`` maps each of :data:`core.engine.rulebook.ACTIONS` to None (offered) or the sentence why
    not; ``body`` is the outcome, decision, operations, trace and approval request lines;
    ``decision`` is set while the run can be decided; ``version`` and ``status`` are the
    checkpoint's, to tell when the row changed; ``error`` the sentence when it cannot be read.
    """

    run_id: str
    title: str
    status: str | None = None
    version: int | None = None
    notes: list[str] = field(default_factory=list)
    tone: Tone = ""
    offers: dict[Action, str | None] = field(default_factory=dict)
    body: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)
    decision: Decision | None = None
    error: str | None = None
    claim: str | None = None
    """``Tomás is on it (claimed 12:03, until 12:33).`` while someone other than the
    reader holds a standing claim on the waiting run (a face says it before a decision), else None."""
    my_claim: bool = False
    """The reader holds a standing claim on the waiting run (the app's ``c`` releases it)."""
    mark_offers: dict[str, str | None] = field(default_factory=dict)
    """Each of :data:`core.engine.rulebook.MARK_ACTIONS` (claim, hand-over, snooze) that the reader may
    not put on the waiting run, mapped to the rulebook's sentence (:func:`core.engine.rulebook.may_mark`:
    a mark needs the role the decision needs); None or absent where they may."""


def unreadable_detail(
    run_id: str, error: str, task_id: str | None = None, status: str | None = None, version: int | None = None
) -> RunDetail:
    """The detail of a run whose checkpoint cannot be read: only its trace is offered."""
    why: dict[Action, str | None] = {a: (None if a == "trace" else UNREADABLE) for a in ACTIONS}
    return RunDetail(
        run_id=run_id,
        title=f"{run_id}  ·  ticket {task_id or '?'}  ·  {status_text(status)}",
        status=status,
        version=version,
        notes=[error, "No action is allowed on this run."],
        tone="error",
        offers=why,
        error=error,
    )


def unreachable_detail(run_id: str, error: str) -> RunDetail:
    """The detail of a run its store could not be asked about (the server ended the connection,
    cannot be reached, or a lock held the read past its timeout): ``error`` says so, and no
    action is offered until the store answers. Nothing is known of the run itself, so nothing
    calls its checkpoint unreadable: that would send a person after a healthy run."""
    return RunDetail(
        run_id=run_id,
        title=f"{run_id}  ·  the store does not answer",
        notes=[error, "The run is read again when the store answers."],
        tone="error",
        offers={a: UNREACHABLE for a in ACTIONS},
        error=error,
    )


def describe(
    state: TaskState,
    approver: Approver,
    others: list[str] | None = None,
    trace: list[str] | None = None,
    keys: Mapping[str, str] | None = None,
    tickets: Path | None = None,
) -> RunDetail:
    """The :class:`RunDetail` of ``state`` for ``approver``: its notes, what the rulebook offers
    and why not, and its body (``tickets``: the home's own, as for :func:`approval_request`).
    ``others`` are the other runs of the ticket (oldest first),
    ``trace`` the trace lines of a running run, ``keys`` the caller's key for each action
    (``{"compare": "d", "resume": "u"}``): a sentence names a key only when its caller
    gave one, and drops it otherwise (the command line has no keys)."""
    others = list(others or [])
    keys = keys or {}
    notes: list[str] = []
    tone: Tone = ""
    body: list[str]
    offered = offers(state, approver, others=len(others))
    if state.status == "waiting_approval":
        line = standing(state, approver.role, offered["approve"])
        if line:
            notes.append(line)
            tone = "ok" if offered["approve"] is None else "warn"
        if others:
            hint = f"; press {keys['compare']} to compare" if keys.get("compare") else ""
            notes.append(f"{state.task_id} has {len(others) + 1} runs{hint}.")
            tone = tone or "warn"
        body = [
            *status_lines(state),
            "",
            f"Outcome: {outcome_line(state)}",
            "",
            *_request_details(approval_request(state, tickets)),
        ]
    elif state.status == "running":
        resume = f"Press {keys['resume']} to continue" if keys.get("resume") else f"`resolver resume {state.run_id}` continues"
        body = [
            f"Running: saved after step {state.step} of at most {state.max_steps}. {resume} its loop "
            "from the checkpoint (no model call is repeated).",
            "",
            usage_line(state),
            "",
            "Trace so far:",
            *(trace or ["  (no events)"]),
        ]
    else:
        if state.status == "executing":
            finish = (
                f"Press {keys['resume']} to reconcile and finish it"
                if keys.get("resume")
                else f"`resolver resume {state.run_id}` reconciles and finishes it"
            )
            notes.append(f"Executing: approved, not finished. {finish}.")
            tone = "warn"
        body = [*status_lines(state), ""]
        if state.status in FINAL_STATUSES and state.events:
            last = state.events[-1]
            body += [f"Last event: {last.kind}: {one_line(last.message)}", ""]
        if state.proposal is not None:
            body += [f"Outcome: {outcome_line(state)}", ""]
        body += proposal_record(state, tickets)
    decision = None
    p = state.proposal
    if state.status == "waiting_approval" and p is not None:
        decision = Decision(
            state.run_id,
            state.task_id,
            p.digest,
            state.version,
            [one_line(action_line(a)) for a in p.actions],
            bool(p.reply_draft.strip()),
            needed=proposal_role(p.actions) if p.actions else "",
        )
    return RunDetail(
        run_id=state.run_id,
        title=f"{state.run_id}  ·  ticket {state.task_id}  ·  {status_text(state.status)}",
        status=state.status,
        version=state.version,
        notes=notes,
        tone=tone,
        offers=offered,
        body=body,
        others=others,
        decision=decision,
    )


def _request_details(request: list[str]) -> list[str]:
    """The approval request after the status lines of a waiting run: everything from "Who may
    approve" on (the title, ticket and actions are already above)."""
    start = next((i for i, line in enumerate(request) if line.startswith("Who may approve")), 0)
    return request[:3] + request[start + 2 :] if start else request


def approve_dialog(decision: Decision, approver: Approver, *, question: bool = True) -> list[str]:
    """What the approve dialog repeats, and ``resolver approve`` prints before it pays:
    run, actions with their amounts under "nothing has happened yet", the reply, who may
    approve, what changed since the agent looked, the digest and who is approving (seed 000:
    the approval names what was read). ``question``: end with the dialog's question (the
    command line asks its own)."""
    body = [f"Run {decision.run_id} (ticket {decision.task_id})", "", "Actions (nothing has happened yet):"]
    body += operations_list(decision.actions, decision.has_reply)
    if decision.needed:
        body += [f"Who may approve: {who_may_approve(decision.needed)}"]
    if decision.world:
        body += ["", *decision.world]
    body += ["", f"Digest: {decision.digest[:12]} (sha256 {decision.digest})", f"Approving as: {approver.label}"]
    return [*body, "", "Approve and execute these operations now? (default: No)"] if question else body


def decision_seal(decision: Decision, approver: Approver, verb: str = "Approving") -> str:
    """The one line a decision dialog keeps on screen beside its buttons, whatever scrolls
    (``Digest 1a2b3c4d5e6f · Approving as Tomás (role team lead)``): what the key binds to and
    who decides. A new user's finding: at 80x24 the shop approve dialog had both below the fold
    while the passphrase box had the focus, so Enter approved what was not in sight."""
    return f"Digest {decision.digest[:12]} · {verb} as {approver.label}"


def reject_dialog(decision: Decision, approver: Approver) -> list[str]:
    """What the reject dialog repeats: the proposed actions (none will happen), the reply on
    its own line (it will not be sent) and who rejects."""
    body = [f"Run {decision.run_id} (ticket {decision.task_id})", "", "Proposed actions (none will happen):"]
    body += operations_list(decision.actions, False)
    if decision.has_reply:  # its own line, never read as going out after the actions
        body += ["", "Reply to the customer: the reply will not be sent."]
    if decision.needed:
        body += [f"Who may reject: {who_may_approve(decision.needed)} (as for approve)"]
    return [
        *body,
        "",
        f"Digest: {decision.digest[:12]}",
        f"Rejecting as: {approver.label}",
        "The run goes to a person and can never execute.",
    ]


# -- the world now ------------------------------------------------------------------------------


def _span(seconds: float) -> str:
    s = max(0, int(seconds))
    d, h, m = s // 86400, s % 86400 // 3600, s % 3600 // 60
    return f"{d}d {h}h" if d else f"{h}h {m}m" if h else f"{m}m"


def ages_lines(
    state: TaskState, now: datetime, evidence_at: datetime, evidence_max_age_s: int, approval_valid_s: int
) -> list[str]:
    """The ages a decision depends on: ``Evidence read 2d 16h ago (at ...); the policy allows 7d
    0h at approval.`` and, for an approval not started, how long it has left."""
    age_s = (now - evidence_at).total_seconds()
    lines = [
        f"Evidence read {_span(age_s)} ago (at {iso(evidence_at)}); the policy allows {_span(evidence_max_age_s)} at approval"
        + (": expired, refresh it first." if age_s > evidence_max_age_s else ".")
    ]
    a = state.approval
    if a is not None and state.status == "executing" and not execution_started(state.operations):
        left = approval_valid_s - (now - a.at).total_seconds()
        lines.append(
            f"Approved {_span((now - a.at).total_seconds())} ago; execution not started; "
            + (f"the approval lapses in {_span(left)}." if left > 0 else "the approval has lapsed.")
        )
    return lines


def approved_vs_current(state: TaskState) -> list[str]:
    """When the run's proposal is not the one approved (digest mismatch), the approved proposal
    next to the current one, line by line; else no lines."""
    a, p = state.approval, state.proposal
    if a is None or p is None or a.digest == p.digest:
        return []
    if a.proposal is None:
        return [
            f"Approved digest {a.digest[:12]}, current {p.short_digest}: the approved proposal was not kept (it was approved by a release that did not keep it)."
        ]

    def rows(x: Any) -> list[str]:
        out = [f"action {i}: {action_short(act)}" for i, act in enumerate(x.actions, 1)]
        out += [f"recipient: {x.recipient or state.customer_id}", f"reply draft: {json.dumps(x.reply_draft, ensure_ascii=False)}"]
        out += [f"precondition: {c.line()}" for c in x.preconditions]
        return out

    diff = difflib.unified_diff(
        rows(a.proposal), rows(p), f"approved {a.digest[:12]}", f"current {p.short_digest}", lineterm="", n=0
    )
    return [
        "Approved next to current (the proposal changed after it was approved):",
        *(f"  {one_line(line)}" for line in diff if not line.startswith("@@")),
    ]


def precondition_lines(state: TaskState) -> list[str]:
    """The preconditions of the proposal as the request lists them, numbered once per request
    (``1.`` to ``n.``; numbered per operation, ``1.`` would appear twice)."""
    p = state.proposal
    if p is None or not p.preconditions:
        return []
    return [
        "Preconditions (checked again at each write):",
        *(f"  {i}. {one_line(c.line())}" for i, c in enumerate(p.preconditions, 1)),
    ]


_HISTORY_WORDS = {"approve": "approved", "reject": "rejected", "refresh": "refreshed"}
"""The audit's decision words as history says them (``refused:KIND`` reads ``refused (KIND)``)."""


def history_lines(rows: list[dict[str, Any]], *, with_run: bool = True) -> list[str]:
    """The audit rows of :meth:`core.api.queue.ApprovalQueue.audit` as lines, oldest first: when,
    (the run, unless ``with_run`` is False), the decision or refusal, who (role and name), the
    digest decided on, then the reason or detail on its own indented line. Names and reasons are
    single-line fields (:func:`core.ground.safetext.one_line`)."""
    out: list[str] = []
    for r in rows:
        decision = str(r.get("decision") or "")
        word = _HISTORY_WORDS.get(decision, decision)
        if decision.startswith("refused:"):
            word = f"refused ({decision.split(':', 1)[1]})"
        role = str(r.get("role") or "")
        who = person(str(r["name"]), role) if r.get("name") else f"role {role_label(role)}"
        run = f"  {r.get('run_id')}" if with_run else ""
        out.append(f"{r.get('at')}{run}  {word} by {who}  digest {r.get('digest') or '-'}")
        if r.get("detail"):
            out.append(f"    {one_line(r['detail'])}")
    return out


def changes_lines(changes: list[dict[str, Any]]) -> list[str]:
    """The practice world's changes (:meth:`core.api.queue.ApprovalQueue.changes`) as ``resolver
    changes`` prints them: a count, then one line each, oldest first."""
    return [
        f"{len(changes)} change(s) in the practice world since the last reset",
        *(f"  {c['at']}  {c['line']}" for c in changes),
    ]
