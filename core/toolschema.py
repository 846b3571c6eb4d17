"""The tools a live model is offered, as chat-completions JSON-schema functions, and their hash.

Every request sends :data:`TOOLS`: the five read-only tools of the practice world and ``finish``
(the final outcome, validated by the same model as the recordings' final turns). A run records
:func:`tool_schema_hash` of them in ``Meta.tool_schema_version`` when it starts, and a resume of
its loop refuses when the tools sent now hash otherwise (issue 26, item 4: the model was shown
other tools than the ones it will be sent).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from core.world import READ_TOOLS

_ARG = {"get_customer": "customer_id", "get_policy": "rule_id"}


def _read_tool(name: str) -> dict[str, Any]:
    arg = _ARG.get(name, "order_id")
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"Read-only: look up by {arg}.",
            "parameters": {"type": "object", "properties": {arg: {"type": "string"}}, "required": [arg]},
        },
    }


FINISH = {
    "type": "function",
    "function": {
        "name": "finish",
        "description": "End with one outcome. Nothing proposed happens until a person approves it.",
        "parameters": {
            "type": "object",
            "properties": {
                "outcome": {"type": "string", "enum": ["resolve", "reply", "hand_to_person"]},
                "rule": {"type": "string", "description": "the policy rule, W1-Wn"},
                "reason": {"type": "string"},
                "actions": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "description": "request_refund (order_id, amount, currency, reason_code, payment_id), "
                        "create_reshipment or create_return_label",
                    },
                },
                "reply_draft": {"type": "string"},
            },
            "required": ["outcome", "rule", "reason"],
        },
    },
}

TOOLS: list[dict[str, Any]] = [*(_read_tool(t) for t in READ_TOOLS), FINISH]
"""The tools sent with every request: the read-only tools and ``finish``."""


def tool_schema_hash(tools: list[dict[str, Any]] | None = None) -> str:
    """``sha256:`` and 64 hex digits: the SHA-256 of ``tools`` (default :data:`TOOLS`) as
    canonical JSON (keys sorted, no spaces, UTF-8). Any change to a name, a description or a
    parameter changes it."""
    text = json.dumps(TOOLS if tools is None else tools, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
