"""The Larkfield practice world as shipped in ``data/``: tickets, world, policy, recordings.

Everything here is read-only text reviewed like code. The files are JSON:

- ``data/world.json``: customers, catalog items, orders (``LK-nnnnnn``) with their lines,
  payments (``PAY-nnnnnn-k``) and shipments. Money is CAD as decimal strings.
- ``data/policy.json``: rules ``W1``...``Wn`` and who may approve what (roles by action and amount).
- ``data/models.json``: the price table per model, in US$ per million tokens.
- ``data/tickets/T-nnnnn.json``: one ticket each, with its simulated faults.
- ``data/recordings/T-nnnnn.json``: the recorded model runs of one ticket (the test double for a
  model; see :mod:`core.models.recorded_model`).

``data_dir()`` finds the folder whether the package is installed editable (the repository's
``data/``) or from a wheel (shipped inside the package as ``core/_data``).
"""

from __future__ import annotations

import json
import os
import re
from decimal import Decimal
from functools import cache, lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from core.ground.errors import ResolverError

Money = Annotated[Decimal, Field(decimal_places=2)]
"""An amount in CAD with two decimals, stored as a decimal string."""


class DataError(ResolverError):
    """A file in ``data/`` is missing or does not match its schema."""


class TaskNotFound(ResolverError):
    """No ticket with that ID in ``data/tickets/``."""


def data_dir() -> Path:
    """Return the folder holding the practice world's text files.

    Raises:
        DataError: neither the repository's ``data/`` nor the packaged ``core/_data`` exists.
    """
    here = Path(__file__).resolve().parent.parent  # the core package: this file is in core/ground/
    for candidate in (here.parent / "data", here / "_data"):
        if (candidate / "policy.json").is_file():
            return candidate
    raise DataError(f"Cannot find the practice world's data folder next to {here}.")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- the world -------------------------------------------------------------------------------


class Customer(_Frozen):
    customer_id: str  # C-nnnn
    name: str
    email: str
    language: str = "en"
    since: str  # ISO date


class CatalogItem(_Frozen):
    sku: str  # e.g. PLANTER
    name: str
    price: Money  # CAD


class OrderLine(_Frozen):
    sku: str
    quantity: int = Field(ge=1)
    unit_price: Money  # CAD


class Order(_Frozen):
    order_id: str  # LK-nnnnnn
    customer_id: str
    placed_at: str  # ISO 8601 with offset
    status: Literal["placed", "shipped", "delivered", "cancelled"]
    ship_to: str
    lines: list[OrderLine]
    shipping: Money = Decimal("0.00")  # CAD

    @property
    def total(self) -> Decimal:
        """Lines plus shipping, in CAD."""
        return sum((l.unit_price * l.quantity for l in self.lines), Decimal("0.00")) + self.shipping


class Payment(_Frozen):
    payment_id: str  # PAY-nnnnnn-k
    order_id: str
    amount: Money  # CAD
    status: Literal["captured", "refunded"]
    captured_at: str


class Shipment(_Frozen):
    shipment_id: str
    order_id: str
    carrier: str
    tracking: str
    status: Literal["label_created", "in_transit", "delivered", "lost"]
    shipped_at: str | None = None
    delivered_at: str | None = None
    promised_by: str | None = None


class WorldData(_Frozen):
    customers: list[Customer]
    catalog: list[CatalogItem]
    orders: list[Order]
    payments: list[Payment]
    shipments: list[Shipment]


# --- the policy -------------------------------------------------------------------------------

Role = Literal["agent", "team_lead", "grace"]
ROLES: tuple[str, ...] = ("agent", "team_lead", "grace")
"""Approver roles from lowest to highest: ``agent`` < ``team_lead`` < ``grace`` (the owner)."""


class Rule(_Frozen):
    rule_id: str  # W1 ... Wn
    title: str
    text: str


class ApprovalLimit(_Frozen):
    """The lowest role that may approve ``action`` up to ``max_amount`` CAD (None: any amount)."""

    action: str
    role: Role
    max_amount: Money | None = None


class RunBudget(_Frozen):
    """What one run may spend on model calls: ``tokens`` in and out together, and
    ``usd`` in US$ at ``data/models.json`` prices. A run that would pass either stops before the
    call and is handed to a person (:func:`core.engine.runner.over_budget`)."""

    tokens: int = Field(gt=0)
    usd: Decimal = Field(gt=0)


class PolicyData(_Frozen):
    """The policy: rules, approval limits, the evidence's expiry in seconds, and a run's budget.

    ``evidence_max_age_s``: how old the evidence may be when a proposal is approved (7 days: the
    lesson's Friday 17:00 to Monday 09:00 is 64 hours, and a demo queue made on the last Friday
    stays approvable all week). ``approval_valid_s``: how long an approval stays valid before
    its execution starts (1 hour); an execution already started is never cut off by the clock.
    ``other_orders_of_customer``: whether the agent may propose an action on another order than
    the ticket's, when the evidence it read shows that order is the ticket's customer's (the
    proposal rules' P3, :mod:`core.engine.proposal_rules`); off unless a policy says so, as in the
    shipped one, which does not name it.
    """

    version: str
    rules: list[Rule]
    approval_limits: list[ApprovalLimit]
    evidence_max_age_s: int = 7 * 24 * 3600
    approval_valid_s: int = 3600
    run_budget: RunBudget | None = None
    other_orders_of_customer: bool = False


class ModelPrice(_Frozen):
    """US$ per million tokens in and out."""

    model: str
    usd_per_million_in: Decimal
    usd_per_million_out: Decimal


# --- tickets and recordings --------------------------------------------------------------------


class Fault(_Frozen):
    """A simulated fault of a write service, met once per run (then kept in ``faults_seen``).

    ``kind`` is ``timeout`` or ``unavailable`` (both transient: the executor retries), and
    ``times`` is how many calls in a row fail.
    """

    service: Literal["request_refund", "reship_item", "create_return_label", "send_reply"]
    kind: Literal["timeout", "unavailable"]
    times: int = Field(default=1, ge=1)


class Ticket(_Frozen):
    task_id: str  # T-nnnnn
    kind: str
    customer_id: str
    order_id: str
    subject: str
    message: str
    received_at: str
    faults: list[Fault] = []


class TurnUsage(_Frozen):
    """Tokens of one model turn (the run's totals are :class:`core.ground.state.Usage`). ``calls`` is
    the calls paid for it: 1, or more when a live model's earlier attempts at the step were lost
    in flight (their tokens are included, :meth:`core.models.live_model.OpenAIChatModel.complete`)."""

    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    calls: int = Field(default=1, ge=1)


class ToolCallTurn(_Frozen):
    """A read-only tool call. ``call_id`` and ``arguments`` are a live model's call ID and its
    arguments as the JSON text it returned; a recording has neither."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str
    args: dict[str, Any]
    usage: TurnUsage
    call_id: str = ""
    arguments: str = ""


class FinalTurn(_Frozen):
    """The model's final outcome.

    ``outcome`` is ``resolve`` (a proposal with actions), ``reply`` (a reply only, no write
    but the reply) or ``hand_to_person``.
    """

    kind: Literal["final"] = "final"
    outcome: Literal["resolve", "reply", "hand_to_person"]
    rule: str
    reason: str
    actions: list[dict[str, Any]] = []
    reply_draft: str = ""
    usage: TurnUsage


Turn = Annotated[ToolCallTurn | FinalTurn, Field(discriminator="kind")]


class Recording(_Frozen):
    variant: str
    model: str
    repeat: int = Field(ge=1)
    turns: list[Turn]


class TicketRecordings(_Frozen):
    task_id: str
    runs: list[Recording]


# --- loading ------------------------------------------------------------------------------------


def _read(path: Path, model: type[BaseModel] | TypeAdapter) -> Any:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise DataError(f"Missing data file {path}.") from exc
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON: {exc}.") from exc
    except (ValueError, RecursionError):  # an integer of over 4,300 digits, or nesting too deep for the parser
        raise DataError(f"{path} cannot be read as JSON here (a number too long, or nesting too deep).") from None
    try:
        if isinstance(model, TypeAdapter):
            return model.validate_python(raw)
        return model.model_validate(raw)
    except Exception as exc:  # pydantic.ValidationError, shown as one sentence
        raise DataError(f"{path} does not match its schema: {exc}") from exc


@lru_cache(maxsize=1)
def load_world_data() -> WorldData:
    """The world as shipped (before any write). Raises DataError."""
    return _read(data_dir() / "world.json", WorldData)


@lru_cache(maxsize=1)
def load_policy() -> PolicyData:
    """The policy as shipped in ``data/policy.json``. Raises DataError."""
    return _read(data_dir() / "policy.json", PolicyData)


@lru_cache(maxsize=1)
def load_prices() -> dict[str, ModelPrice]:
    """Price table by model name. Raises DataError."""
    prices = _read(data_dir() / "models.json", TypeAdapter(list[ModelPrice]))
    return {p.model: p for p in prices}


@lru_cache(maxsize=1)
def customer_names() -> dict[str, str]:
    """Customer ID -> name, from the world as shipped (read once per process)."""
    return {c.customer_id: c.name for c in load_world_data().customers}


@lru_cache(maxsize=1)
def catalog_prices() -> dict[str, Decimal]:
    """SKU -> unit price in CAD, from the catalog as shipped (read once per process)."""
    return {item.sku: item.price for item in load_world_data().catalog}


TICKET_ID = re.compile(r"T-[0-9]{5,9}")
"""The shape of a home ticket's ID (``resolver ticket add``, :mod:`core.ground.tickets`): ``T-`` and 5
to 9 digits, as the shipped ``T-nnnnn``, so a run ID ``TICKET-VARIANT-MODEL-N`` built from it
stays unambiguous and a file name built from it stays in its folder."""


def task_ids() -> list[str]:
    """Every ticket ID in ``data/tickets/``, sorted."""
    return sorted(p.stem for p in (data_dir() / "tickets").glob("T-*.json"))


@cache
def load_task(task_id: str) -> Ticket:
    """Load one ticket.

    Raises:
        TaskNotFound: no such ticket (the message lists how to see the tickets).
        DataError: the file does not match the schema.
    """
    path = data_dir() / "tickets" / f"{task_id}.json"
    if not path.is_file():
        raise TaskNotFound(f"No ticket {task_id}. The tickets are in {path.parent}.")
    return _read(path, Ticket)


def find_task(task_id: str, tickets: Path | None = None) -> Ticket:
    """A shipped ticket (:func:`load_task`), else one of a home's own (``resolver ticket add``:
    ``TICKETS/T-nnnnn.json``, :mod:`core.ground.tickets`) when ``tickets``, the home's folder of
    tickets, is given. A home ticket never shadows a shipped one: the shipped one is read first.

    Raises:
        TaskNotFound: neither has it (the sentence says where the tickets are).
        DataError: the home's file does not match the schema, or names another ticket.
    """
    try:
        return load_task(task_id)
    except TaskNotFound:
        if tickets is None or not TICKET_ID.fullmatch(task_id):
            raise
    path = tickets / f"{task_id}.json"
    if not path.is_file():
        raise TaskNotFound(
            f"No ticket {task_id}. The shipped tickets are in {data_dir() / 'tickets'}, this home's own in {tickets} "
            "(`resolver ticket list`)."
        )
    ticket = _read(path, Ticket)
    if ticket.task_id != task_id:
        raise DataError(f"{path} holds the ticket {ticket.task_id!a}, not {task_id}; put the file back as it was added.")
    return ticket


def write_private_json(folder: Path, name: str, body: object) -> Path:
    """Write ``body`` as JSON (indented, UTF-8) to ``folder/name``, one of a home's own data
    files (``recordings/``, ``tickets/``): the folder made 0700, the file 0600, written aside,
    synced, then renamed, so a crash leaves the old file or the new one. Returns the path.

    Raises:
        OSError: the folder or file cannot be written.
    """
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / name
    aside = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(json.dumps(body, indent=2, ensure_ascii=False) + "\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(aside, path)
    return path


def recorded_runs(task_id: str, folder: Path | None = None) -> list[Recording]:
    """Every recorded run of ``task_id``: the shipped ones (``data/recordings``; none for a
    home's own ticket), then the home's (``folder``, :func:`home_recordings`).

    Raises:
        DataError: a file does not read or does not match the schema.
    """
    shipped = data_dir() / "recordings" / f"{task_id}.json"
    runs = list(load_recordings(task_id).runs) if shipped.is_file() else []
    return [*runs, *home_recordings(task_id, folder)]


def home_recordings(task_id: str, folder: Path | None) -> list[Recording]:
    """The runs a home recorded for ``task_id`` with ``resolver record`` (``FOLDER/TASK.json``,
    the data format of ``data/recordings``), none when ``folder`` is None or holds no file.

    Raises:
        DataError: the file does not read or does not match the schema (one sentence).
    """
    if folder is None:
        return []
    path = folder / f"{task_id}.json"
    if not path.is_file():
        return []
    return list(_read(path, TicketRecordings).runs)


@cache
def load_recordings(task_id: str) -> TicketRecordings:
    """Load the recorded model runs of one ticket. Raises TaskNotFound or DataError."""
    path = data_dir() / "recordings" / f"{task_id}.json"
    if not path.is_file():
        raise TaskNotFound(f"No recorded model runs for {task_id} in {path.parent}.")
    return _read(path, TicketRecordings)
