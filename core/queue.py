"""The queue's columns for one run: what the checkpoint store is handed to index and list.

The store knows no policy and no customer data (issue 8, item 4). :class:`~core.home.Home` hands
:func:`queue_columns` to :class:`~core.checkpoint.CheckpointStore` as its ``summarize`` hook, and the
store writes the result beside each checkpoint so that a page of the queue is read from indexed
columns only, never from the saved state.
"""

from __future__ import annotations

import threading
from decimal import Decimal
from typing import TypedDict

from core.data import customer_names, load_policy
from core.policy import action_value, proposal_role, rank
from core.state import TaskState, action_short


class QueueColumns(TypedDict):
    """The columns of one run in the queue.

    ``customer``: the customer's name (the ID when unknown); ``total_amount``: CAD as a decimal
    string (``"119.00"``, ``""`` without actions); ``amount_cents``: the same total in cents (0
    without actions), for sorting; ``required_role``: the role the proposal needs under the
    current policy (``""`` without actions); ``role_rank``: 0 agent, 1 team lead, 2 grace (-1
    without actions), for sorting; ``actions``: the actions, short (``request_refund LK-507862``).
    """

    customer: str
    total_amount: str
    amount_cents: int
    required_role: str
    role_rank: int
    actions: str


def blank_columns(state: TaskState) -> QueueColumns:
    """Columns without policy or customer data (a store that was handed no ``summarize``)."""
    return QueueColumns(customer=state.customer_id, total_amount="", amount_cents=0, required_role="", role_rank=-1, actions="")


def queue_columns(state: TaskState) -> QueueColumns:
    """The queue's columns for ``state``: customer name (``data/world.json``), the proposal's total
    in CAD (refund amounts, reships at catalog price: :func:`core.policy.action_value`), the role
    it needs (:func:`core.policy.proposal_role`, the highest of its actions) and its actions.

    It runs at every save, so the result is kept per customer, policy version and actions (each
    action's type and every argument): the same proposal is priced once per process.
    """
    actions = state.proposal.actions if state.proposal else []
    customer = customer_names().get(state.customer_id, state.customer_id)
    if not actions:
        return QueueColumns(customer=customer, total_amount="", amount_cents=0, required_role="", role_rank=-1, actions="")
    key = (customer, load_policy().version, tuple((type(a), *a.__dict__.values()) for a in actions))
    cached = _priced.get(key)
    if cached is None:
        cached = _price(customer, actions)
        with _priced_lock:
            if len(_priced) >= 4096:
                _priced.clear()
            _priced[key] = cached
    return QueueColumns(**cached)


_priced: dict[tuple, QueueColumns] = {}
_priced_lock = threading.Lock()


def _price(customer: str, actions: list) -> QueueColumns:
    total = sum((action_value(a) for a in actions), Decimal("0.00"))
    role = proposal_role(actions)
    return QueueColumns(
        customer=customer,
        total_amount=f"{total:.2f}",
        amount_cents=int(total * 100),
        required_role=role,
        role_rank=rank(role),
        actions="; ".join(action_short(a).split("  ")[0] for a in actions),
    )
