"""The tools a live model is offered, as chat-completions JSON-schema functions, and their hash.

Every request sends :data:`TOOLS`: the five read-only tools of the practice world and ``finish``
(the final outcome, validated by the same model as the recordings' final turns). A run records
:func:`tool_schema_hash` of them in ``Meta.tool_schema_version`` when it starts, and a resume of
its loop refuses when the tools sent now hash otherwise (the model was shown
other tools than the ones it would be sent).

What an answer calling them may hold is checked beyond the schema's types, and the schema sent is
left as it is (a change of it would refuse every running loop's resume until
``--accept-changes``): a read-only tool's arguments by :func:`core.contract.world.tool_args_problem`
(exactly its own, each a string of 1 to 100 printable characters), and every turn, a live answer
or a recording's, by :func:`turn_problem` (a tool name of the API's form, no text the store
cannot hold, no nesting deeper than :data:`MAX_NESTING`, a tool call's arguments within
:data:`MAX_TOOL_ARGS_CHARS`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from core.contract.world import READ_TOOLS
from core.ground.data import FinalTurn, ToolCallTurn

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


TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""The form of a function's name in the chat-completions protocol: a tool call named otherwise
cannot name any tool."""

MAX_NESTING = 32
"""The deepest a turn's arguments or a ``finish``'s fields may nest (lists and objects). The
checkpoint's serializer stops at about 250 levels, counting the state's own; no tool or outcome
needs more than three."""

MAX_TOOL_ARGS_CHARS = 2_000
"""The longest a tool call's arguments may be, as JSON text, in characters: a read-only tool
takes one ID; a call of a tool that does not exist is kept whole in the checkpoint, the trace and
every later request, so its arguments are bounded too."""


def json_problem(value: Any, depth: int = 0) -> str | None:
    """What the JSON value ``value`` (a model's, decoded) holds that cannot be kept as given in
    the checkpoint and the practice world, as a noun phrase (``a NUL character``), else None.

    Refused: a string or key holding NUL (PostgreSQL's text cannot hold it: a reply draft or an
    ID with one failed in the store) or a lone surrogate (not Unicode: it cannot be written as
    UTF-8 at all), a number that is not finite (NaN and infinity are not JSON, and would be kept
    as null), and nesting deeper than :data:`MAX_NESTING` levels. Huge integers are kept (JSON
    and the checkpoint hold them).
    """
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "a number that is not finite"
    if isinstance(value, list | dict):
        if depth >= MAX_NESTING:
            return f"nesting deeper than {MAX_NESTING} levels"
        for key in value if isinstance(value, dict) else ():
            said = _text_problem(str(key))
            if said:
                return said
        for item in value.values() if isinstance(value, dict) else value:
            said = json_problem(item, depth + 1)
            if said:
                return said
    return None


def _text_problem(text: str) -> str | None:
    if "\x00" in text:
        return "a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "a lone surrogate (text that is not Unicode)"
    return None


def turn_problem(turn: ToolCallTurn | FinalTurn) -> str | None:
    """Why ``turn`` (a live model's, or a recording's) cannot be taken as given, as a clause
    naming the tool, else None: a tool name not of the API's form (:data:`TOOL_NAME`), arguments
    or fields the checkpoint cannot keep (:func:`json_problem`), a tool call's arguments longer
    than :data:`MAX_TOOL_ARGS_CHARS` as JSON text.

    A read-only tool's own arguments (a list for an ID, an extra key) are not checked here: the
    world refuses them with a sentence the model can read (:func:`core.contract.world.tool_args_problem`),
    and a live answer is checked for them as well (:func:`core.models.live_model.turn_of`). What is
    refused here could not even be kept as the call's evidence.
    """
    if isinstance(turn, FinalTurn):
        said = json_problem(turn.model_dump(mode="python", exclude={"usage", "kind"}))
        return f"finish holds {said}" if said else None
    if not TOOL_NAME.fullmatch(turn.tool):
        return "a tool call whose name is not a function name (letters, digits, '_' and '-', up to 64)"
    said = json_problem(turn.args)
    if said:
        return f"the arguments of {turn.tool!r} hold {said}"
    if len(json.dumps(turn.args, ensure_ascii=False)) > MAX_TOOL_ARGS_CHARS:
        return f"the arguments of {turn.tool!r} are longer than {MAX_TOOL_ARGS_CHARS:,} characters"
    return None
