"""The provider seam: what the loop asks a model, and which model a run's route names.

The runner is handed a :class:`Model` (one method, ``complete``); :func:`model_for` picks it from
the run's model route, ``state.meta.model_route``, which is saved with the run so a resume in a
fresh process asks the same model:

- ``recorded:VARIANT/MODEL#REPEAT``: the recorded model (:class:`~core.models.recorded_model.RecordedModel`),
  the test double that replays ``data/recordings``. This path never imports ``openai``.
- ``openai:{...}``: a live OpenAI-compatible chat-completions server
  (:class:`~core.models.live_model.OpenAIChatModel`), the route's :class:`LiveRoute` as JSON (base URL,
  model name, the NAME of the environment variable holding the key, never the key itself).

Live routes come from the approver's config file (``[models.NAME]`` tables, see
:func:`load_routes`) or from ``resolver run`` flags.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from core.ground.data import FinalTurn, ToolCallTurn, load_prices
from core.ground.errors import BadArgument, ResolverError
from core.ground.homepath import config_path, read_config
from core.ground.state import Message

if TYPE_CHECKING:
    from core.contract.store import CallStore
    from core.ground.state import TaskState

RECORDED = "recorded"
LIVE = "openai"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,39}$")
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


class Model(Protocol):
    """What the loop asks: the next turn for a working context."""

    def complete(self, messages: list[Message]) -> ToolCallTurn | FinalTurn:
        """The model's next turn (a tool call or the final outcome) for ``messages``, with its
        usage in tokens.

        Raises:
            NoRecording: the recorded model, past its last turn.
            ModelUnavailable: a live model that could not answer (authentication, rate limit,
                network, timeout or an answer that cannot be read); nothing was acted on.
        """
        ...


class ModelUnavailable(ResolverError):
    """A live model gave no usable answer. The message is one sentence; the run was not
    changed by the failed call and stays resumable, and the sentence names the command that
    resumes it (:func:`resume_hint`)."""


class KeyNotSet(ModelUnavailable):
    """A live route's key variable is not set (or empty) when a run of it is started: refused
    before the run is made (:func:`require_key`), so no run is left ``running`` behind."""


def resume_hint(run_id: str | None, when: str = "") -> str:
    """The end of a sentence that asks to resume a run: ``run `resolver resume RUN` later`` with
    the run's ID, so the person knows which run and the command; ``resume the run later`` only
    when no run is known (a model asked outside a run). ``when`` is ``later``, ``when it is up``,
    ``to ask again`` or empty."""
    tail = f" {when}" if when else ""
    return f"run `resolver resume {run_id}`{tail}" if run_id else f"resume the run{tail}"


@dataclass(frozen=True)
class LiveRoute:
    """An OpenAI-compatible chat-completions route.

    Attributes:
        name: the route's name, the MODEL part of run IDs (``stub`` -> ``T-65273-agent-stub-1``):
            lower-case letters, digits, ``_``, ``.`` and ``-``, up to 40 characters.
        base_url: the server's API root, e.g. ``https://api.openai.com/v1`` or
            ``http://127.0.0.1:8000/v1`` (http or https).
        model: the model name sent to the server (``gpt-4o-mini``).
        key_env: the NAME of the environment variable holding the API key (read at each call,
            never stored).
        price: the model of ``data/models.json`` whose prices (US$ per million tokens) cost
            this route; default ``name``.
        timeout_s: seconds to wait for one answer (default 60).
        max_retries: retries after a rate limit, a server error, a timeout, a lost connection
            or an answer that cannot be used (:func:`core.models.live_model.turn_of`), with exponential
            backoff (resolver's own, honouring ``Retry-After``; each attempt a journal row),
            default 2.
    """

    name: str
    base_url: str
    model: str
    key_env: str
    price: str = ""
    timeout_s: float = 60.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        where = f"the model route {self.name!r}"
        if not _NAME.match(self.name):
            raise BadArgument(
                f"A model route's name is lower-case letters, digits, '_', '.' and '-' (up to 40), not {self.name!r}."
            )
        if self.name in _recorded_names():
            raise BadArgument(f"{self.name} is a recorded model; name the live route otherwise.")
        if not re.match(r"^https?://[^\s/]+", self.base_url):
            raise BadArgument(f"The base URL of {where} must start with http:// or https://, not {self.base_url!r}.")
        if not self.model or not self.model.isprintable() or len(self.model) > 200:
            raise BadArgument(f"The model name of {where} must be one line of printable text.")
        if not _ENV.match(self.key_env):
            raise BadArgument(
                f"The key of {where} is named by an environment variable (letters, digits, '_'), not {self.key_env!r}."
            )
        if not (isinstance(self.timeout_s, int | float) and math.isfinite(self.timeout_s) and 0 < self.timeout_s <= 600):
            raise BadArgument(f"The timeout of {where} is seconds between 0 and 600, not {self.timeout_s!r}.")
        if not (isinstance(self.max_retries, int) and 0 <= self.max_retries <= 10):
            raise BadArgument(f"The retries of {where} are a whole number from 0 to 10, not {self.max_retries!r}.")
        if self.priced_as not in load_prices():
            raise BadArgument(
                f"No price for {self.priced_as} in data/models.json; give {where} a price = one of "
                f"{', '.join(sorted(load_prices()))}."
            )

    @property
    def priced_as(self) -> str:
        """The priced model of ``data/models.json`` (``price``, else the route's name)."""
        return self.price or self.name

    def route(self) -> str:
        """The saved route: ``openai:`` and this route as JSON."""
        return f"{LIVE}:" + json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


def _recorded_names() -> set[str]:
    return set(load_prices())


def recorded_route(variant: str, model: str, repeat: int) -> str:
    """``recorded:agent/chat-small#1``."""
    return f"{RECORDED}:{variant}/{model}#{repeat}"


def live_route_of(route: str) -> LiveRoute | None:
    """The :class:`LiveRoute` a saved ``openai:`` route holds, or None for a recorded one.

    Raises:
        ResolverError: an ``openai:`` route that does not read (a damaged or foreign checkpoint).
    """
    if not route.startswith(f"{LIVE}:"):
        return None
    try:
        fields: Any = json.loads(route[len(LIVE) + 1 :])
        return LiveRoute(**fields)
    except (ValueError, TypeError) as exc:
        raise ResolverError(f"The run's model route does not read ({exc}); it cannot ask its model again.") from None


def price_model(state: TaskState) -> str:
    """The model of ``data/models.json`` that prices ``state``'s tokens: the live route's
    ``priced_as``, else the run's recorded model."""
    live = live_route_of(state.meta.model_route)
    return live.priced_as if live else state.model


class CallJournal:
    """One run's journal of model calls in its store, keyed by step and attempt. Only the run's
    runner writes it; the store checks every row it reads back (a SQLite row's seal, a team
    store's writer), so a row planted by anyone else is never taken for the model's answer
    (:class:`~core.ground.errors.JournalUntrusted`) nor counted as paid.

    Args:
        store: the run's store (:meth:`~core.contract.store.Store.journal_attempt` and the rest).
        run_id: the run.
        route: its model route, written with each attempt.
    """

    def __init__(self, store: CallStore, run_id: str, route: str) -> None:
        self.store, self.run_id, self.route = store, run_id, route

    def answered(self, step: int) -> str | None:
        """The raw answer already received for ``step``, or None.

        Raises:
            JournalUntrusted: a row of the step was not written by the run's runner: nothing
                is asked or proposed (one sentence naming the run, step and attempt).
        """
        return self.store.journal_answered(self.run_id, step)

    def attempt(self, step: int) -> int:
        """Record the next attempt at ``step`` before it is sent; its number."""
        return self.store.journal_attempt(self.run_id, step, self.route)

    def answer(self, step: int, attempt: int, raw: str, tokens_in: int, tokens_out: int) -> None:
        """Save an attempt's raw answer (or a :func:`failure`) and usage (tokens) before it is acted on."""
        self.store.journal_answer(self.run_id, step, attempt, raw, tokens_in, tokens_out)

    def also_paid(self, step: int, tokens_in: int, tokens_out: int) -> tuple[int, int, int]:
        """What ``step``'s attempts other than its answer cost: ``(calls, tokens in, tokens out)``.

        An attempt sent and never answered (killed or timed out in flight) may have been paid:
        it counts as a call at the answer's tokens (``tokens_in``, ``tokens_out``: the same
        prompt was sent, its output is taken as the answer's). A :func:`failure` the server
        answered with HTTP 200 (an answer that could not be used) was paid: a call at its own
        tokens, and so was an answer saved as usable that a later check refused (journaled
        before the check existed; the step was asked again). A refusal (HTTP 4xx or 5xx) or a
        request that never left was not paid. A row the run's runner did not write
        (``trusted`` not True) is no call of this run: it counts nothing.
        """
        calls = t_in = t_out = 0
        rows = [c for c in self.store.model_calls(self.run_id) if c["step"] == step and c.get("trusted") is True]
        answered = max((c["attempt"] for c in rows if c["answer"] is not None and not is_failure(c["answer"])), default=0)
        for c in rows:
            if c["attempt"] == answered:
                continue
            if c["answer"] is None:
                calls, t_in, t_out = calls + 1, t_in + tokens_in, t_out + tokens_out
            elif not is_failure(c["answer"]) or json.loads(c["answer"])["error"].get("status") == 200:
                calls, t_in, t_out = calls + 1, t_in + (c["tokens_in"] or 0), t_out + (c["tokens_out"] or 0)
        return calls, t_in, t_out


def failure(status: int, body: str) -> str:
    """The journal's answer for an attempt the server refused or never received: ``{"error":
    {"status": HTTP status or 0, "body": the first 2,000 characters of what it said}}``. Such an
    attempt was not paid, and a resume asks again (:func:`is_failure`)."""
    return json.dumps({"error": {"status": status, "body": body[:2000]}}, ensure_ascii=False)


def is_failure(raw: str) -> bool:
    """True for a journaled :func:`failure` (a chat completion never has a top-level ``error``)."""
    try:
        answer = json.loads(raw)
    except ValueError:
        return False
    return isinstance(answer, dict) and "error" in answer and "choices" not in answer


_KEYS: dict[str, type | tuple[type, ...]] = {
    "base_url": str,
    "model": str,
    "api_key_env": str,
    "price": str,
    "timeout_s": (int, float),
    "max_retries": int,
}


def load_routes(path: Path | None = None) -> dict[str, LiveRoute]:
    """The live routes of the config file's ``[models.NAME]`` tables, by name.

    ``path`` defaults to the approver's config file (:func:`core.ground.homepath.config_path`). Each
    table holds ``base_url``, ``model`` and ``api_key_env`` (required), ``price``,
    ``timeout_s`` (seconds) and ``max_retries`` (optional); see :class:`LiveRoute`. A missing
    file or no ``models`` table gives no routes.

    Raises:
        BadArgument: the file does not parse, or a table has a missing, unknown or wrong key
            (one sentence naming the table and the key).
    """
    where = path or config_path()
    doc = read_config(where)
    tables = doc.get("models", {})
    if not isinstance(tables, dict):
        raise BadArgument(f"In {where}, models must be a table of [models.NAME] tables.")
    routes: dict[str, LiveRoute] = {}
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise BadArgument(f"In {where}, models.{name} must be a table.")
        for key, value in table.items():
            kind = _KEYS.get(key)
            if kind is None:
                raise BadArgument(f"In {where}, models.{name} has an unknown key {key}; the keys are {', '.join(_KEYS)}.")
            if not isinstance(value, kind) or isinstance(value, bool):
                raise BadArgument(f"In {where}, models.{name}.{key} has the wrong type ({type(value).__name__}).")
        missing = [k for k in ("base_url", "model", "api_key_env") if k not in table]
        if missing:
            raise BadArgument(f"In {where}, models.{name} needs {', '.join(missing)}.")
        routes[name] = LiveRoute(
            name=name,
            base_url=table["base_url"],
            model=table["model"],
            key_env=table["api_key_env"],
            price=table.get("price", ""),
            timeout_s=float(table.get("timeout_s", 60.0)),
            max_retries=table.get("max_retries", 2),
        )
    return routes


def api_key(route: LiveRoute, run_id: str | None = None) -> str:
    """The route's key, read now from its environment variable (at each call of run ``run_id``).

    Raises:
        ModelUnavailable: the variable is not set or empty (the sentence names it and the
            command that resumes ``run_id`` once it is set).
    """
    key = os.environ.get(route.key_env, "")
    if not key:
        raise ModelUnavailable(
            f"The model route {route.name} reads its key from ${route.key_env}, which is not set; "
            f"set it and {resume_hint(run_id)}."
        )
    return key


def require_key(route: LiveRoute) -> None:
    """Refuse to start a run of ``route`` while its key variable is unset or empty: the first
    call would fail, and the run made for it would be left ``running`` for nothing.

    Raises:
        KeyNotSet: one sentence naming the variable and how to set it; nothing was saved.
    """
    if not os.environ.get(route.key_env, ""):
        raise KeyNotSet(
            f"The model route {route.name} reads its key from ${route.key_env}, which is not set: "
            f"set it (export {route.key_env}=...) and run again. No run was made."
        )
