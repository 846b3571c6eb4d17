"""Who may approve what: roles by action and amount, from ``data/policy.json``.

Roles rank ``agent`` < ``team_lead`` < ``grace`` (the owner). Each action needs the lowest role
whose limit covers its value; a proposal needs the highest role over its lines and its kinds of
action, each kind's values summed, every value taken as at least 0 (:func:`proposal_role`).
With the shipped policy an agent may approve the 9.95 refund of T-90104, and the 119.00
double-charge refund of T-65273 needs a team lead or above (seed 000).
"""

from __future__ import annotations

from decimal import Decimal

from pydantic import BaseModel

from core.ground.data import ROLES, PolicyData, catalog_prices, load_policy
from core.ground.errors import ResolverError

ROLE_LABELS = {"agent": "agent", "team_lead": "team lead", "grace": "grace"}


class UnknownRole(ResolverError):
    """A role that is not one of agent, team_lead, grace."""


def check_role(role: str) -> str:
    """Return ``role`` if known. Raises UnknownRole with the list of roles."""
    if role not in ROLES:
        raise UnknownRole(f"Unknown role {role!r}: use one of {', '.join(ROLES)}.")
    return role


def rank(role: str) -> int:
    """0 for agent, 1 for team_lead, 2 for grace. Raises UnknownRole."""
    return ROLES.index(check_role(role))


def action_value(action: BaseModel) -> Decimal:
    """What an action is worth for the approval limits, in CAD.

    A refund is its amount; a reship is unit price x quantity from the catalog; labels and
    replies are worth 0.
    """
    kind = getattr(action, "type", "")
    if kind == "request_refund":
        return action.amount  # type: ignore[attr-defined]
    if kind == "reship_item":
        return catalog_prices().get(action.sku, Decimal("0.00")) * action.quantity  # type: ignore[attr-defined]
    return Decimal("0.00")


def required_role(action: BaseModel, policy: PolicyData | None = None) -> str:
    """The lowest role that may approve ``action`` under ``policy`` (default: the shipped one).

    Raises:
        ResolverError: the policy names no limit for this kind of action.
    """
    return role_for(getattr(action, "type", ""), action_value(action), policy)


def role_for(kind: str, value: Decimal, policy: PolicyData | None = None) -> str:
    """The lowest role whose limit for ``kind`` covers ``value`` CAD under ``policy``.

    Raises:
        ResolverError: the policy names no limit for this kind of action.
    """
    policy = policy or load_policy()
    limits = sorted((l for l in policy.approval_limits if l.action == kind), key=lambda l: ROLES.index(l.role))
    if not limits:
        raise ResolverError(f"The policy {policy.version} says nobody may approve {kind}.")
    for limit in limits:
        if limit.max_amount is None or value <= limit.max_amount:
            return limit.role
    return limits[-1].role if limits[-1].max_amount is None else "grace"


def proposal_role(actions: list, policy: PolicyData | None = None) -> str:
    """The role a whole proposal needs: the highest of each line's own role and, per kind of
    action, the role for the kind's values summed (``agent`` if none).

    A limit is for what one approval moves, not for each line: a trial approved ten refunds of
    23.80, each within an agent's 25.00, as an agent, and 238.00 was paid; hence the sum. And no
    line can lower the role: only what would move counts, each line's value taken as at least 0
    (a second line of -100.00 on a 119.00 refund summed to 19.00, which an agent may approve, and
    the 119.00 was paid). The proposal rules refuse such a line before it waits for approval
    (:mod:`core.engine.proposal_rules`, P2); this rule holds without them. ``resolver_needed_role``
    computes the same in SQL on a team store.

    Raises:
        ResolverError: the policy names no limit for one of the kinds.
    """
    zero = Decimal("0.00")
    totals: dict[str, Decimal] = {}
    roles = ["agent"]
    for action in actions:
        kind = getattr(action, "type", "")
        value = max(action_value(action), zero)
        totals[kind] = totals.get(kind, zero) + value
        roles.append(role_for(kind, value, policy))
    roles += [role_for(kind, value, policy) for kind, value in totals.items()]
    return max(roles, key=ROLES.index)


def may_approve(role: str, needed: str) -> bool:
    """True when ``role`` ranks at least ``needed``."""
    return rank(role) >= rank(needed)


def who_may_approve(needed: str) -> str:
    """``team lead or above``, ``agent or above``, or ``grace`` (the top role)."""
    label = ROLE_LABELS[needed]
    return label if needed == ROLES[-1] else f"{label} or above"
