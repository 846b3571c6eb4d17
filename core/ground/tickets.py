"""Tickets of one's own: ``resolver ticket add FILE`` and ``ticket list``.

A ticket file is TOML (``FILE.toml``) or JSON (``FILE.json``) holding the keys of a shipped
ticket (``data/tickets/T-nnnnn.json``, :class:`core.ground.data.Ticket`)::

    task_id = "T-70001"
    kind = "double_charge"
    customer_id = "C-1001"
    order_id = "LK-507862"
    subject = "Charged twice"
    message = "Two charges of $119.00 ..."
    received_at = 2026-10-09T16:02:00-04:00   # or a string; ISO 8601 with its UTC offset
    faults = []                               # optional, as in data/tickets

It is checked whole, and every mistake is one sentence (:class:`TicketInvalid`): the same
pydantic model as the shipped tickets, then what the model cannot know: the ID's shape
(``T-`` and 5 to 9 digits, :data:`TICKET_ID`), an ID of a shipped ticket or of one already in
the home (refused: a ticket is never replaced, since runs show it), a customer and an order of
the practice world (the order the customer's), a time within the supported times
(:func:`core.ground.clock.supported`), a kind, subject and message that are not empty. Nothing is
written unless there are none.

The ticket is written as ``HOME/tickets/T-nnnnn.json`` in the data format (folder 0700, file
0600, replaced whole), where :func:`core.ground.data.find_task` reads it after ``data/tickets`` for
``run``, ``record``, ``show`` and the executor. Only a practice home takes one, as only a
practice home takes a recording (:meth:`core.api.home.Home.record`); ``reset`` and ``reset --all``
keep them. The text stays the customer's, escape sequences and line breaks included: every
face shows it through :mod:`core.ground.safetext`.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from core.ground.clock import TimeOutOfRange, supported
from core.ground.data import TICKET_ID, Ticket, data_dir, find_task, load_world_data, task_ids, write_private_json
from core.ground.errors import ResolverError
from core.ground.safetext import one_line

TICKETS = "tickets"
"""The home's folder of tickets (``HOME/tickets/T-nnnnn.json``)."""

MAX_BYTES = 1_000_000
"""The largest ticket file read (bytes)."""

_KEYS = tuple(Ticket.model_fields)


class TicketInvalid(ResolverError):
    """A ticket file that cannot be added: ``mistakes`` holds one sentence per mistake, all of
    them (the message lists them under one line naming the file); nothing was written."""

    def __init__(self, path: Path | str, mistakes: list[str]) -> None:
        n = len(mistakes)
        head = f"{one_line(path)} is not a ticket resolver can add ({n} mistake{'s' if n != 1 else ''}); nothing was written:"
        super().__init__("\n".join([head, *(f"  - {m}" for m in mistakes)]))
        self.mistakes = mistakes


@dataclass(frozen=True)
class Added:
    """A ticket added: ``ticket`` as validated, ``path`` the home's file."""

    ticket: Ticket
    path: Path


def read_ticket_file(path: Path) -> dict[str, Any]:
    """The table a ticket file holds: TOML for ``.toml``, JSON for ``.json`` (at most
    :data:`MAX_BYTES`, UTF-8). A TOML date-time becomes its ISO 8601 text.

    Raises:
        TicketInvalid: another suffix, an unreadable or too large file, text that does not
            parse, or a value that is not a table (one mistake each, the parser's position said).
    """
    suffix = path.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise TicketInvalid(path, ["A ticket file is TOML or JSON: name it .toml or .json."])
    try:
        if path.stat().st_size > MAX_BYTES:
            raise TicketInvalid(path, [f"The file is larger than {MAX_BYTES:,} bytes; a ticket is far smaller."])
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TicketInvalid(path, ["There is no such file."]) from None
    except UnicodeDecodeError:
        raise TicketInvalid(path, ["The file is not UTF-8 text."]) from None
    except OSError as exc:
        raise TicketInvalid(path, [f"The file cannot be read ({exc.strerror or exc})."]) from None
    try:
        raw = tomllib.loads(text) if suffix == ".toml" else json.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise TicketInvalid(path, [f"The file is not TOML: {one_line(exc)}."]) from None
    except json.JSONDecodeError as exc:
        raise TicketInvalid(path, [f"The file is not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}."]) from None
    if not isinstance(raw, dict):
        raise TicketInvalid(path, ["The file holds no table of keys: a ticket is one table (one JSON object)."])
    return {k: v.isoformat() if isinstance(v, datetime | date | time) else v for k, v in raw.items()}


def _where(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a key path: ``faults[0].kind``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return one_line(out)[:80]


def _sentence(error: Any) -> str:
    """One pydantic error as a sentence."""
    where, kind, msg = _where(error["loc"]), error["type"], str(error["msg"])
    if kind == "missing":
        return f"`{where}` is missing."
    if kind == "extra_forbidden":
        if len(error["loc"]) == 1:
            return f"`{where}` is not a key of a ticket (the keys are {', '.join(_KEYS)})."
        return f"`{where}` is not a key of a fault (the keys are service, kind, times)."
    return f"`{where}`: {msg[:1].lower()}{msg[1:]}."


def check_ticket(raw: dict[str, Any], home_tickets: Path | None = None) -> tuple[Ticket | None, list[str]]:
    """Check a ticket's table whole: the ticket (None when the model refused it) and every
    mistake, one sentence each (empty: it may be added). ``home_tickets`` is the home's folder
    of tickets, whose IDs are taken too.

    The checks: :class:`core.ground.data.Ticket` (every key, type and fault), then the ID's shape
    (:data:`core.ground.data.TICKET_ID`) and that no shipped or home ticket has it, a customer and an order of the
    practice world as shipped (the order the customer's), ``received_at`` ISO 8601 with its
    offset within the supported times, and ``kind``, ``subject`` and ``message`` not blank.
    """
    mistakes: list[str] = []
    ticket: Ticket | None = None
    try:
        ticket = Ticket.model_validate(raw)
    except ValidationError as exc:
        mistakes += [_sentence(e) for e in exc.errors()]
    value = {k: raw.get(k) for k in _KEYS}
    task_id = value["task_id"]
    if isinstance(task_id, str):
        shown = one_line(task_id)[:40]
        if not TICKET_ID.fullmatch(task_id):
            mistakes.append(f"`task_id` {shown} is not a ticket ID: `T-` and 5 to 9 digits, as T-70001.")
        elif task_id in task_ids():
            mistakes.append(f"`task_id` {shown} is a shipped ticket's (data/tickets); choose another ID.")
        elif home_tickets is not None and (home_tickets / f"{task_id}.json").exists():
            mistakes.append(
                f"`task_id` {shown} is already a ticket of this home ({home_tickets / (task_id + '.json')}); "
                "a ticket is never replaced: choose another ID."
            )
    world = load_world_data()
    customer, order = value["customer_id"], value["order_id"]
    customers = {c.customer_id for c in world.customers}
    if isinstance(customer, str) and customer not in customers:
        mistakes.append(f"`customer_id` {one_line(customer)[:40]} is not a customer of the practice world (as C-1001).")
    if isinstance(order, str):
        owner = next((o.customer_id for o in world.orders if o.order_id == order), None)
        if owner is None:
            mistakes.append(f"`order_id` {one_line(order)[:40]} is not an order of the practice world (as LK-507862).")
        elif isinstance(customer, str) and customer in customers and owner != customer:
            mistakes.append(f"`order_id` {order} is {owner}'s order, not {one_line(customer)[:40]}'s.")
    at = value["received_at"]
    if isinstance(at, str):
        try:
            supported(datetime.fromisoformat(at), "`received_at`")
        except TimeOutOfRange as exc:
            mistakes.append(str(exc))
        except (ValueError, ResolverError):
            mistakes.append(
                f"`received_at` {one_line(at)[:40]} is not an ISO 8601 time with its offset, as 2026-10-09T16:02:00-04:00."
            )
    for key in ("kind", "subject", "message"):
        text = value[key]
        if isinstance(text, str) and not text.strip():
            mistakes.append(f"`{key}` is empty.")
    return (ticket if not mistakes else None), mistakes


def add_ticket(path: Path, folder: Path) -> Added:
    """Add the ticket in ``path`` (TOML or JSON) to the home's ``folder`` of tickets, written as
    ``folder/T-nnnnn.json`` in the data format (folder 0700, file 0600, replaced whole).

    Raises:
        TicketInvalid: every mistake of the file (:func:`read_ticket_file`, :func:`check_ticket`);
            nothing written.
    """
    ticket, mistakes = check_ticket(read_ticket_file(path), folder)
    if ticket is None:
        raise TicketInvalid(path, mistakes)
    written = write_private_json(folder, f"{ticket.task_id}.json", ticket.model_dump(mode="json"))
    return Added(ticket=ticket, path=written)


def home_ticket_ids(folder: Path) -> list[str]:
    """The IDs of the home's tickets (files ``T-nnnnn.json`` of :data:`core.ground.data.TICKET_ID`'s shape), sorted."""
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("T-*.json") if TICKET_ID.fullmatch(p.stem))


def list_tickets(folder: Path) -> list[tuple[str, Ticket | None, str]]:
    """The home's tickets, each as ``(task_id, ticket or None, problem)``: a file that no longer
    reads (edited or damaged by hand) is listed with its one-sentence problem, not skipped."""
    out: list[tuple[str, Ticket | None, str]] = []
    for task_id in home_ticket_ids(folder):
        try:
            out.append((task_id, find_task(task_id, folder), ""))
        except ResolverError as exc:
            out.append((task_id, None, str(exc)))
    return out


def ticket_line(ticket: Ticket) -> str:
    """``T-70001  double_charge  C-1001  LK-507862  "subject"``: one line, the subject's breaks
    shown (:func:`core.ground.safetext.one_line`)."""
    return (
        f'{ticket.task_id}  {one_line(ticket.kind)}  {ticket.customer_id}  {ticket.order_id}  "{one_line(ticket.subject)[:80]}"'
    )


def shipped_folder() -> Path:
    """The shipped tickets' folder (``data/tickets``)."""
    return data_dir() / "tickets"
