"""The state model: ``TaskState`` and everything it holds, with its digest and migrations.

A ``TaskState`` is the whole run: what a new process needs to continue it (seed 000, "save the
state, not the process"). ``model_dump_json`` / ``model_validate_json`` round-trip it, and the
checkpoint store keeps it as JSON beside summary columns.

Schema versions (``schema_version``):

- 1: the first schema (frozen in ``tests/fixtures/task_state_v1.json``).
- 2: adds ``reply_channel`` (default ``"email"``), seed 001's migration exercise, and the
  metadata block (``policy_version``, ``tool_schema_version``, ``model_route``). Release 0.1.0
  saved this version (``tests/fixtures/home_0_1_0``).
- 3: adds ``run_uid``, the run's unique identity. The readable ``run_id`` comes back
  after ``resolver reset --all`` (``T-65273-agent-chat-small-1`` again); the ``run_uid`` never
  does. Operation IDs (the services' idempotency keys), the approval's signature and the audit
  rows are bound to it. A run saved before gets ``run_uid = run_id``: that is the string its
  0.1.0 operation IDs and signature were derived from, so they stay valid and an executing run
  resumes with its own operation IDs.

- 4: binds the proposal to the world as read: ``Proposal.recipient``,
  ``evidence_at``, ``preconditions`` and ``version``, and ``Approval.proposal`` (the proposal as
  approved). A proposal saved before gets none (``evidence_at`` None, no preconditions): its
  digest stays the one it had, so a waiting run stays approvable and an approval of 0.1.0
  still verifies; its evidence age is counted from its first lookup (frozen schema 3:
  ``tests/fixtures/task_state_v3.json``).
- 5: two additions of one release, both with None for a checkpoint saved before.

  - "Since" by the world's own order of events: ``Evidence.seq`` (the practice
    world's operations register number read with the result) and ``Precondition.since_seq``. A
    checkpoint saved before gets None for both: its preconditions keep their digest and decide
    "since" by time, an event in the same second counting as since (frozen schema 4:
    ``tests/fixtures/home_before_register_seq``).
  - The decision bound to the world the approver saw: ``Approval.world``, what the
    read-only lookups returned when the approve dialog opened (:class:`WorldSeen`), checked again
    when the decision is recorded and covered by the approval's signature. An approval saved
    before has none (``world`` None) and verifies as it did (frozen schema 4:
    ``tests/fixtures/task_state_v4.json`` and the home ``tests/fixtures/home_schema_4``).

- 6: each tool call a live model makes keeps its ID and arguments as the API returned them
  (``Message.tool_call_id`` and ``Message.arguments``), so a resumed loop sends the
  history back exactly. A message saved before gets ``""`` for both (frozen schema 5:
  ``tests/fixtures/task_state_v5.json`` and the home ``tests/fixtures/home_schema_5``).

:func:`migrate` upgrades a raw v1 to v5 dict to v6; any other version fails loudly with
:class:`~core.ground.errors.UnsupportedSchemaVersion`.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, field_validator
from pydantic.types import CoreSchema, core_schema  # pydantic-core's, as pydantic re-exports them (a declared dependency)

from core.ground.clock import EARLIEST, END, supported
from core.ground.errors import ResolverError, UnsupportedSchemaVersion

SCHEMA_VERSION = 7
TOOLS_1 = "sha256:80704110b71323fae9b61f6247cd1d3007daa6b541045053c8614c77c0ab6b46"
"""The hash (:func:`core.models.toolschema.tool_schema_hash`) of the tools sent while checkpoints were
at schema 6, which recorded them as the constant ``"tools-1"`` (frozen: never recomputed)."""

Status = Literal["running", "waiting_approval", "executing", "done", "handed_to_person", "stopped"]
STATUSES: tuple[str, ...] = ("waiting_approval", "executing", "running", "handed_to_person", "stopped", "done")
FINAL_STATUSES: frozenset[str] = frozenset({"done", "handed_to_person", "stopped"})

CENT = Decimal("0.01")


class _Supported:
    """The check of :data:`Moment`, in two forms.

    - Python input (a ``datetime`` made in code, or a checkpoint's dict on the careful path,
      :meth:`core.stores.common.CheckpointRows._build_carefully`): :func:`core.ground.clock.supported`
      after pydantic's datetime, with its sentences (:class:`~core.ground.clock.TimeOutOfRange`).
    - JSON input (a checkpoint read by ``model_validate_json``): the same rule checked by
      pydantic in Rust, without a call into Python per time: timezone-aware, :data:`EARLIEST`
      <= value < :data:`END`; an ISO 8601 text cannot hold an offset with seconds (pydantic
      refuses ``+05:17:32``), so a time this accepts is one :func:`~core.ground.clock.supported`
      accepts. A time it refuses fails the fast load, and the careful path (Python input)
      says why in :func:`~core.ground.clock.supported`'s sentence.

    Serialised as pydantic's ``datetime`` (the same JSON as before)."""

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        base = handler(source)
        checked = core_schema.datetime_schema(tz_constraint="aware", ge=EARLIEST, lt=END)
        return core_schema.json_or_python_schema(
            json_schema=checked,
            python_schema=core_schema.no_info_after_validator_function(supported, base),
            serialization=base.get("serialization"),
        )


Moment = Annotated[datetime, _Supported()]
"""Every time a state holds: checked by :func:`core.ground.clock.supported` when made and when loaded,
so a checkpoint never keeps a time that ISO 8601 as saved cannot hold (an approval
would then no longer match its signature); a saved time out of range makes the checkpoint
unreadable with a sentence (``CorruptCheckpoint``), never an approval refused as forged. From a
checkpoint's JSON the check runs in pydantic's Rust (:class:`_Supported`), which is faster."""


class InvalidAmount(ResolverError, ValueError):
    """Not an amount of money: not a number, not finite, or too large (a ValueError too, so a
    pydantic model reports it as a validation error)."""


MAX_CAD = Decimal("1000000.00")
"""No amount in the practice world reaches a million CAD; anything larger is a typo."""


def cad(value: Decimal | str | int | float) -> Decimal:
    """An amount in CAD, quantized to cents (``Decimal('119.00')``). Floats go through ``str``.

    Raises:
        InvalidAmount: ``abc``, ``NaN``, ``Infinity``, ``1e400`` or more than 1,000,000 CAD.
    """
    try:
        amount = Decimal(str(value).strip())
        if not amount.is_finite() or abs(amount) > MAX_CAD:
            raise InvalidOperation
        return amount.quantize(CENT, rounding=ROUND_HALF_UP)
    except (InvalidOperation, ValueError):
        raise InvalidAmount(f"{str(value)[:40]!r} is not an amount in CAD: use a number like 119.00.") from None


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the same bytes whatever the key order."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


# --- actions ------------------------------------------------------------------------------------


class RefundAction(_Model):
    """Refund ``amount`` CAD of ``payment_id`` on ``order_id`` (payment service)."""

    type: Literal["request_refund"] = "request_refund"
    order_id: str
    amount: Decimal
    currency: Literal["CAD"] = "CAD"
    reason_code: str
    payment_id: str

    @field_validator("amount", mode="before")
    @classmethod
    def _cents(cls, v: Any) -> Decimal:
        return cad(v)

    @property
    def money(self) -> Decimal:
        return self.amount

    def line(self) -> str:
        return f"{self.type:<20} {self.order_id}  {self.amount} {self.currency}  {self.reason_code}  payment {self.payment_id}"


class ReshipAction(_Model):
    """Send ``quantity`` of ``sku`` again on ``order_id`` (warehouse service)."""

    type: Literal["reship_item"] = "reship_item"
    order_id: str
    sku: str
    quantity: int = Field(ge=1)

    def line(self) -> str:
        return f"{self.type:<20} {self.order_id}  {self.sku} x {self.quantity}"


class ReturnLabelAction(_Model):
    """Create a return label for ``sku`` on ``order_id`` (label service)."""

    type: Literal["create_return_label"] = "create_return_label"
    order_id: str
    sku: str
    reason: str
    return_shipping: Literal["free", "customer_paid"] = "free"

    def line(self) -> str:
        return f"{self.type:<20} {self.order_id}  {self.sku}  reason {self.reason} (return shipping: {self.return_shipping})"


class ReplyAction(_Model):
    """Send the reply draft to the customer (mail service). Added by the executor, never proposed."""

    type: Literal["send_reply"] = "send_reply"
    order_id: str
    customer_id: str
    text: str

    def line(self) -> str:
        return f"{self.type:<20} {self.order_id}  to {self.customer_id}"


Action = Annotated[RefundAction | ReshipAction | ReturnLabelAction | ReplyAction, Field(discriminator="type")]
ProposedAction = Annotated[RefundAction | ReshipAction | ReturnLabelAction, Field(discriminator="type")]


def action_line(action: BaseModel) -> str:
    """One action as the request prints it (``request_refund       LK-507862  119.00 CAD ...``)."""
    return action.line()  # type: ignore[attr-defined]


def action_short(action: BaseModel) -> str:
    """The action line with its padding collapsed (``request_refund LK-507862 119.00 CAD ...``)."""
    return " ".join(action_line(action).split())


# --- proposal, approval, operations ------------------------------------------------------------


EFFECT_TABLES: dict[str, tuple[str, str]] = {
    "refund": ("refunds", "refund_id"),
    "reship": ("reshipments", "reship_id"),
    "return_label": ("return_labels", "label_id"),
    "reply": ("replies", "reply_id"),
}
"""Effect kind -> (the practice world's table, its ID column): what a ``none_since`` precondition
and the drift report look at."""

Effect = Literal["refund", "reship", "return_label", "reply"]

EFFECT_OF_ACTION: dict[str, Effect] = {
    "request_refund": "refund",
    "reship_item": "reship",
    "create_return_label": "return_label",
    "send_reply": "reply",
}


class Precondition(_Model):
    """A world fact one planned operation depends on, derived from the evidence.

    ``index`` is the operation's index in the plan (the proposal's actions, then the reply).
    Two kinds:

    - ``payment``: payment ``payment_id`` of ``order_id`` is ``status`` with ``refunded`` CAD
      already refunded, as the evidence showed it (a refund needs the charge as it was read);
    - ``none_since``: no ``effect`` (refund, reship, return_label, reply) on ``order_id`` (for
      ``sku`` when set) made since the evidence was read by an operation other than the run's
      own. "Since" is decided by the world's own order of events: ``since_seq`` is
      the operations register's number when the evidence was read, and an effect counts when
      its register entry is numbered above it, whatever the clock said. A precondition saved
      before schema 5 has no ``since_seq``; then an effect at or after ``since`` counts (the
      same second counts as since, never as before).

    The executor hands a step's preconditions to its write service as the expected state (a
    compare-and-set like HTTP ``If-Match``); the service refuses when one does not hold.
    """

    index: int
    kind: Literal["payment", "none_since"]
    order_id: str
    payment_id: str = ""
    status: str = ""
    refunded: Decimal | None = None
    effect: Literal["refund", "reship", "return_label", "reply", ""] = ""
    sku: str = ""
    since: Moment | None = None
    since_seq: int | None = None

    def digest_dump(self) -> dict[str, Any]:
        """The precondition as the proposal's digest covers it: every field, ``since_seq`` only
        when set (so a proposal saved before schema 5 keeps the digest it was approved on)."""
        out = self.model_dump(mode="json")
        if out.get("since_seq") is None:
            out.pop("since_seq", None)
        return out

    def line(self) -> str:
        """The precondition as the request prints it."""
        if self.kind == "payment":
            return f"payment {self.payment_id} of {self.order_id} is {self.status}, {self.refunded} CAD refunded"
        what = self.effect.replace("_", " ")
        on = f"{self.sku} on {self.order_id}" if self.sku else self.order_id
        return f"no other {what} of {on} since the evidence was read"


class Proposal(_Model):
    """What the agent proposes: ``outcome`` with its rule, reason, actions and reply draft.

    What binds it to the world as read: ``recipient`` (the customer the reply goes
    to), ``evidence_at`` (when the evidence was read), ``preconditions`` (per operation) and
    ``version`` (1, then +1 at every refresh of the evidence). A proposal saved before has none
    of them; its digest is then the one it had (so an approval of release 0.1.0 still verifies).
    """

    outcome: Literal["resolve", "reply", "hand_to_person"]
    rule: str
    reason: str
    actions: list[ProposedAction] = []
    reply_draft: str = ""
    recipient: str = ""
    evidence_at: Moment | None = None
    preconditions: list[Precondition] = []
    version: int = 1

    def digest_payload(self) -> dict[str, Any]:
        """What the digest covers: actions with all their arguments, rule and reply draft; and,
        for a proposal that has them, the reply's recipient, the evidence time, the
        preconditions and the proposal version (every field an operation reads)."""
        payload: dict[str, Any] = {
            "actions": [a.model_dump(mode="json") for a in self.actions],
            "rule": self.rule,
            "reply_draft": self.reply_draft,
        }
        if self.evidence_at is not None:
            payload.update(
                recipient=self.recipient,
                evidence_at=self.evidence_at.isoformat(),
                preconditions=[p.digest_dump() for p in self.preconditions],
                version=self.version,
            )
        return payload

    def preconditions_of(self, index: int) -> list[Precondition]:
        """The preconditions of operation ``index``."""
        return [p for p in self.preconditions if p.index == index]

    @property
    def digest(self) -> str:
        """SHA-256 (hex, 64 digits) of the canonical JSON of :meth:`digest_payload`."""
        return hashlib.sha256(canonical_json(self.digest_payload()).encode("utf-8")).hexdigest()

    @property
    def short_digest(self) -> str:
        """The first 12 hex digits of the digest, as the request shows it."""
        return self.digest[:12]


class Lookup(_Model):
    """One read-only lookup run again: the evidence's ``tool`` and ``args``, and the
    JSON ``result`` it returns now, or ``error`` when it cannot run again."""

    tool: str
    args: dict[str, Any]
    result: Any = None
    error: str = ""


class WorldSeen(_Model):
    """What the read-only lookups behind a run's evidence returned at ``at``: each
    ``lookups`` result (no model call) and ``effects``, every write on the order since the
    evidence was read by an operation other than the run's own (``{"kind", "id", "line", "at",
    "operation_id", "actor"}``, :meth:`core.contract.world.World.effects_on`).

    This is the data the approve dialog showed, not its lines (they hold ages). Two reads are
    the same world when :attr:`fingerprint` is equal; ``at`` is not part of it.
    """

    at: Moment
    lookups: list[Lookup] = []
    effects: list[dict[str, Any]] = []

    @property
    def fingerprint(self) -> str:
        """SHA-256 (hex) of the canonical JSON of the lookups and effects (``at`` left out)."""
        payload = {
            "lookups": [x.model_dump(mode="json") for x in self.lookups],
            "effects": json.loads(canonical_json(self.effects)),
        }
        return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


class Approval(_Model):
    """An approval issued by :mod:`core.engine.approval` alone; ``signature`` is its HMAC-SHA256 (over
    ``world``'s fingerprint too, when it is set)."""

    role: str
    name: str
    at: Moment
    digest: str
    signature: str
    proposal: Proposal | None = None
    """The proposal as approved: shown next to the current one on a mismatch."""
    world: WorldSeen | None = None
    """What the lookups returned when the approver read the request; None for an
    approval saved before schema 5 or made without the world (a bare :func:`core.engine.approval.approve`)."""


class Rejection(_Model):
    """A rejection with its required reason."""

    role: str
    name: str
    at: Moment
    digest: str
    reason: str


class Operation(_Model):
    """One approved write: stable ID (16 hex digits), the action, its status and calls.

    ``planned`` (approved, not started), ``pending`` (saved just before the write: the service
    may or may not have done it; reconcile asks its register), ``done`` or ``failed``.
    """

    operation_id: str
    index: int
    action: Action
    status: Literal["planned", "pending", "done", "failed"] = "planned"
    calls: int = 0
    result: dict[str, Any] | None = None
    error: str | None = None


def execution_started(operations: list[Operation]) -> bool:
    """Whether an execution has started: a service call was attempted (an attempt is
    counted and saved before each call) or an operation is already done or failed. An operation
    saved ``pending`` with no call (the crash just before the write) has not started anything,
    so the approval's validity still applies to it. A checkpoint of release 0.1.0 did not count
    the call before making it: the executor also asks the register (:mod:`core.engine.executor`)."""
    return any(op.calls > 0 or op.status in ("done", "failed") for op in operations)


class Usage(_Model):
    """Model usage of a run: calls, tokens, and cost in US$."""

    model_calls: int = 0
    tool_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: Decimal = Decimal("0")


class Message(_Model):
    """One entry of the model's working context.

    ``tool_call_id`` and ``arguments`` (schema 6) keep a live model's tool call as the
    API returned it, so a resumed loop sends the history back exactly: on the assistant message
    that makes the call, its ID and its arguments (the JSON text as returned); on the tool
    message that answers it, the same ID. Empty for a recorded model's turns and for messages
    saved before schema 6 (they are sent back with the ID ``call_<step>``).
    """

    role: Literal["system", "user", "assistant", "tool"]
    content: str
    step: int = 0
    tool_call_id: str = ""
    arguments: str = ""


class Evidence(_Model):
    """A read-only tool call the agent made, with its JSON result.

    ``seq``: the practice world's operations register number read in the same
    snapshot as the result (:meth:`core.contract.world.World.read_tool`); every write numbered above it
    came after this evidence. None for evidence saved before schema 5.
    """

    step: int
    tool: str
    args: dict[str, Any]
    result: Any
    seq: int | None = None


class Event(_Model):
    """One line of the run's log; also appended to the store's events table (the trace)."""

    seq: int
    at: Moment
    kind: str
    message: str
    data: dict[str, Any] = {}


class Meta(_Model):
    """Seed 001's snapshot metadata, what a resume of the loop checks.

    ``policy_version``: ``data/policy.json``'s version when the run started (``""``: a run from
    before seed 001's metadata); ``tool_schema_version``: the hash of the tools a live model is
    sent (``sha256:`` and 64 hex digits, :func:`core.models.toolschema.tool_schema_hash`); ``model_route``:
    the route the run asks (:mod:`core.models.model`).
    """

    policy_version: str = ""
    tool_schema_version: str = ""
    model_route: str = ""


class TaskState(_Model):
    """The whole state of one run of one ticket (seed 000's TaskState).

    Shapes: ``step`` counts model calls made in the loop; ``messages`` is the model's working
    context; ``evidence`` the read-only tool calls; ``operations`` the approved writes;
    ``faults_seen`` the simulated faults already met (``service:kind:n``); ``usage`` tokens and
    US$; ``version`` is the checkpoint row's compare-and-set counter (0: never saved).

    ``run_id`` is the readable ID (``T-65273-agent-chat-small-1``), unique among the saved runs
    but used again after a reset; ``run_uid`` is the run's identity, never used by another run
    (32 hex digits from :mod:`core.ground.identity`, or the ``run_id`` of a run migrated from schema 2).
    """

    schema_version: int = SCHEMA_VERSION
    run_id: str
    run_uid: str = Field(min_length=1)
    task_id: str
    variant: str
    model: str
    repeat: int = 1
    status: Status = "running"
    step: int = 0
    max_steps: int = 8
    customer_id: str = ""
    order_id: str = ""
    messages: list[Message] = []
    evidence: list[Evidence] = []
    plan: list[str] = []
    proposal: Proposal | None = None
    approval: Approval | None = None
    rejection: Rejection | None = None
    operations: list[Operation] = []
    faults_seen: list[str] = []
    usage: Usage = Usage()
    events: list[Event] = []
    created_at: Moment
    updated_at: Moment
    version: int = 0
    reply_channel: str = "email"
    meta: Meta = Meta()

    def log(self, kind: str, message: str, at: datetime | None = None, **data: Any) -> Event:
        """Append an event to the run's log (``at`` defaults to ``updated_at``)."""
        event = Event(seq=len(self.events) + 1, at=at or self.updated_at, kind=kind, message=message, data=data)
        self.events.append(event)
        return event

    def operation(self, operation_id: str) -> Operation | None:
        """The operation with that ID, or None."""
        return next((op for op in self.operations if op.operation_id == operation_id), None)


OPENING_MESSAGES = 2
"""How many of a run's first messages its read side holds (:class:`RunView`): the runner writes
the system prompt and the ticket as given first (:func:`core.engine.runner.new_state`), and the request
shows the ticket as given when the ticket's file cannot be read (:func:`core.api.views.approval_request`)."""


class RunView(TaskState):
    """A run as the read side shows it: the header (status, proposal,
    approval, operations, usage ...), every evidence and event, and only the first
    :data:`OPENING_MESSAGES` messages, never the model's whole working context.

    Made only by a store's ``load_view``; everything that displays a run (the app's pane and
    approve dialog, ``resolver show``, the drift and world-now checks) takes it where it takes a
    :class:`TaskState`, and the proposal's digest is the same as a whole load's (it covers the
    proposal only). It is never saved: a store's ``save`` refuses it with
    :class:`PartialState`, so a partial history cannot be written back over the whole one.
    Resume and the executor load the whole state (``load``).
    """


class PartialState(ResolverError):
    """A :class:`RunView` (a read-side load, without the message history) handed to ``save``."""


_UNBOUND: dict[str, Any] = {"recipient": "", "evidence_at": None, "preconditions": [], "version": 1}
"""What a proposal saved before schema 4 is given: bound to nothing (its digest unchanged)."""


def migrate(raw: dict[str, Any]) -> dict[str, Any]:
    """Upgrade a raw checkpoint dict to the current schema.

    v1 -> v2: ``reply_channel`` defaults to ``"email"`` and ``meta`` to empty metadata.
    v2 -> v3: ``run_uid`` is the ``run_id``, the string the run's stored operation IDs and
    approval signature were derived from (release 0.1.0), so both still hold.
    v3 -> v4: the proposal is unbound (no recipient, evidence time or preconditions, version 1)
    and an approval holds no copy of its proposal.
    v4 -> v5: evidence without a register number (``seq`` None) and preconditions without one
    (``since_seq`` None): "since" stays decided by time for them, the same second counting as
    since; an approval holds no world (``world`` None): it was signed without one and
    still verifies.
    v5 -> v6: messages without a tool call ID or arguments (both ``""``): a recorded or
    earlier turn, sent back to a live model with the ID ``call_<step>``.
    v6 -> v7: ``meta.tool_schema_version`` is the hash of the tools sent; the constant
    ``"tools-1"`` of schema 6 (and an empty one) becomes :data:`TOOLS_1`, the hash of the tools
    schema 6 sent, so a run resumed across the upgrade is not taken as shown other tools.

    Raises:
        UnsupportedSchemaVersion: a version this code does not know (newer or garbage).
    """
    version = raw.get("schema_version", 1)
    if version == SCHEMA_VERSION:
        return raw
    if version in (1, 2, 3, 4, 5, 6):
        upgraded = dict(raw)
        if version == 1:
            upgraded.setdefault("reply_channel", "email")
            upgraded.setdefault("meta", Meta().model_dump(mode="json"))
        upgraded.setdefault("run_uid", upgraded.get("run_id"))
        if version < 4 and isinstance(upgraded.get("proposal"), dict):
            upgraded["proposal"] = {**_UNBOUND, **upgraded["proposal"]}
        if isinstance(upgraded.get("approval"), dict):
            upgraded["approval"] = {"proposal": None, "world": None, **upgraded["approval"]}
        if version < 5:
            _unnumbered(upgraded)
        if isinstance(upgraded.get("messages"), list):
            upgraded["messages"] = [
                {"tool_call_id": "", "arguments": "", **m} if isinstance(m, dict) else m for m in upgraded["messages"]
            ]
        meta = upgraded.get("meta")
        if isinstance(meta, dict) and meta.get("tool_schema_version", "") in ("", "tools-1"):
            upgraded["meta"] = {**meta, "tool_schema_version": TOOLS_1}
        upgraded["schema_version"] = SCHEMA_VERSION
        return upgraded
    raise UnsupportedSchemaVersion(
        f"Run {raw.get('run_id', '?')} was saved with schema version {version!r}; this resolver reads "
        f"versions 1 to {SCHEMA_VERSION}. Upgrade resolver or reset the run."
    )


def _unnumbered(raw: dict[str, Any]) -> None:
    """v4 -> v5 on the (copied) top level ``raw``: every evidence gets ``seq`` None and every
    precondition (of the proposal and of the approved copy) ``since_seq`` None; nested dicts are
    copied, never changed in place."""

    def numbered(p: Any) -> Any:
        if not isinstance(p, dict) or not isinstance(p.get("preconditions"), list):
            return p
        pres = [{**pre, "since_seq": pre.get("since_seq")} if isinstance(pre, dict) else pre for pre in p["preconditions"]]
        return {**p, "preconditions": pres}

    if isinstance(raw.get("evidence"), list):
        raw["evidence"] = [{**ev, "seq": ev.get("seq")} if isinstance(ev, dict) else ev for ev in raw["evidence"]]
    raw["proposal"] = numbered(raw.get("proposal"))
    if isinstance(raw.get("approval"), dict):
        raw["approval"] = {**raw["approval"], "proposal": numbered(raw["approval"].get("proposal"))}


def operation_id(run_uid: str, index: int, action: BaseModel) -> str:
    """The stable ID of an operation: 16 hex digits of SHA-256 over the run's ``run_uid``, the
    index and the action's canonical JSON. The same on every resume, different for every action
    and for every run, even one that reuses a readable run ID after a reset. A run
    migrated from release 0.1.0 has ``run_uid == run_id``, which gives its stored IDs again."""
    payload = f"{run_uid}|{index}|{canonical_json(action.model_dump(mode='json'))}"
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
