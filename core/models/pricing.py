"""What model calls cost: prices per model from ``data/models.json``, in US$.

``data/models.json`` lists each priced model with its US$ per million tokens in and out; a
recorded model is priced by its name, a live route by its ``price`` (:mod:`core.models.model`). The
outcome line, the usage line and the budget's sentence print amounts with :func:`show_usd`.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from core.ground.data import load_prices
from core.ground.errors import ResolverError


def cost_usd(model: str, tokens_in: int, tokens_out: int) -> Decimal:
    """US$ for the tokens at ``data/models.json`` prices (US$ per million tokens).

    chat-small at US$0.10 in and US$0.50 out: 7,155 in and 192 out cost US$0.0008115.
    """
    price = load_prices().get(model)
    if price is None:
        raise ResolverError(f"No price for model {model} in data/models.json.")
    million = Decimal(1_000_000)
    return (price.usd_per_million_in * tokens_in + price.usd_per_million_out * tokens_out) / million


def show_usd(amount: Decimal) -> str:
    """US$ to five decimals, as the outcome line prints it (``US$0.00081``)."""
    return f"US${amount.quantize(Decimal('0.00001'), rounding=ROUND_HALF_UP)}"
