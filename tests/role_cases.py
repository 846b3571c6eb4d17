"""The role a proposal needs, as a table of cases both back-ends are tested on.

Each case is a list of actions (JSON, as a proposal stores them) and the role the shipped policy
needs for it, written out by hand from ``data/policy.json`` (refunds: agent up to 25.00, team
lead up to 250.00, grace above; reships at catalog price x quantity: agent up to 60.00, team
lead up to 300.00, grace above; labels: agent), never computed by the code under test.
``tests/engine/test_needed_role.py`` checks :func:`core.engine.policy.proposal_role` and the team store's
``resolver_needed_role`` against every row.
"""

from __future__ import annotations

from typing import Any


def refund(amount: str, payment: str = "PAY-507862-2", order: str = "LK-507862") -> dict[str, Any]:
    """A refund line of ``amount`` CAD (text, as stored)."""
    return {
        "type": "request_refund",
        "order_id": order,
        "amount": amount,
        "currency": "CAD",
        "reason_code": "RFD-DOUBLE",
        "payment_id": payment,
    }


def reship(sku: str = "PLANTER", quantity: int = 1, order: str = "LK-640436") -> dict[str, Any]:
    """A reship line of ``quantity`` of ``sku``."""
    return {"type": "reship_item", "order_id": order, "sku": sku, "quantity": quantity}


LABEL = {"type": "create_return_label", "order_id": "LK-640436", "sku": "PLANTER", "reason": "damaged", "return_shipping": "free"}

CASES: list[tuple[str, list[dict[str, Any]], str]] = [
    ("nothing", [], "agent"),
    ("T-90104's 9.95", [refund("9.95")], "agent"),
    ("25.00, an agent's limit", [refund("25.00")], "agent"),
    ("25.01, over it", [refund("25.01")], "team_lead"),
    ("T-65273's 119.00", [refund("119.00")], "team_lead"),
    ("250.00, a team lead's limit", [refund("250.00")], "team_lead"),
    ("250.01", [refund("250.01")], "grace"),
    ("ten lines of 23.80 (238.00)", [refund("23.80")] * 10, "team_lead"),
    ("eleven lines of 23.80 (261.80)", [refund("23.80")] * 11, "grace"),
    # no line lowers the role: what would move is counted, never subtracted
    ("119.00 and -100.00 on one payment", [refund("119.00"), refund("-100.00")], "team_lead"),
    ("-100.00 and 119.00 (the order does not matter)", [refund("-100.00"), refund("119.00")], "team_lead"),
    ("a negative line alone", [refund("-500.00")], "agent"),
    ("0.00", [refund("0.00")], "agent"),
    ("300.00 and -290.00", [refund("300.00"), refund("-290.00")], "grace"),
    ("24.00 and -1000.00 and 24.00", [refund("24.00"), refund("-1000.00"), refund("24.00")], "team_lead"),
    ("a PLANTER (42.00)", [reship()], "agent"),
    ("two PLANTERs (84.00)", [reship(quantity=2)], "team_lead"),
    ("a BED-LINEN-SET (289.00)", [reship("BED-LINEN-SET")], "team_lead"),
    ("two BED-LINEN-SETs (578.00)", [reship("BED-LINEN-SET", 2)], "grace"),
    ("three reships of a PLANTER (126.00)", [reship()] * 3, "team_lead"),
    ("an item not in the catalog", [reship("NO-SUCH-SKU", 5)], "agent"),
    ("labels only", [LABEL, LABEL], "agent"),
    ("a label beside 119.00", [refund("119.00"), LABEL], "team_lead"),
    ("kinds not added together: 24.00 and a PLANTER", [refund("24.00"), reship()], "agent"),
    ("a reship needs more than the refund", [refund("9.95"), reship("WOOL-BLANKET", 2)], "grace"),
]
"""``(what, actions, role needed)``."""
