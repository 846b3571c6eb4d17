"""A live model: an OpenAI-compatible chat-completions server, through the ``openai`` package.

Imported only for an ``openai:`` route (:func:`core.model.model_for`), so the recorded path
never imports ``openai`` (the ``openai`` extra: ``pip install 'resolver[openai]'``).

What is sent: the run's messages (the system prompt, the ticket, each tool call the model made
and its result), the five read-only tools and a ``finish`` tool as JSON-schema functions, with
``tool_choice="required"``. What comes back is one tool call: a read-only tool becomes a
:class:`~core.data.ToolCallTurn`, ``finish`` a :class:`~core.data.FinalTurn` validated by the
same model as the recordings. Each tool call's ID and arguments are stored with the messages and
sent back as returned (messages saved before schema 6: ``call_<step>``). With a journal (:class:`~core.model.CallJournal`),
each attempt (each retry too: the client's own retries are off) is recorded before it is sent,
and its raw answer, or a failure, before the runner acts on it.
"""

from __future__ import annotations

import json
import random
import time
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import ValidationError

from core.data import FinalTurn, ToolCallTurn, TurnUsage
from core.errors import ResolverError
from core.model import CallJournal, LiveRoute, ModelUnavailable, api_key, failure, is_failure
from core.state import Message
from core.store import crash_point
from core.toolschema import TOOLS


def api_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """The run's messages as chat-completions messages.

    An assistant message holding a tool call (``{"tool": ..., "args": ...}``) becomes an
    assistant message with one ``tool_calls`` entry: the ID and arguments text the API returned
    (schema 6), else ``call_<step>`` and the arguments as JSON (a recorded or earlier turn); the
    tool message after it answers that ID. A final assistant message is sent as its text.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            try:
                body = json.loads(m.content)
            except ValueError:
                body = None
            if isinstance(body, dict) and "tool" in body:
                out.append(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": m.tool_call_id or f"call_{m.step}",
                                "type": "function",
                                "function": {"name": body["tool"], "arguments": m.arguments or json.dumps(body.get("args", {}))},
                            }
                        ],
                    }
                )
                continue
            out.append({"role": "assistant", "content": m.content})
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or f"call_{m.step}", "content": m.content})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


class OpenAIChatModel:
    """A :class:`~core.model.Model` over an OpenAI-compatible chat-completions server.

    Args:
        route: base URL, model name, the key's environment variable, timeout (seconds) and
            retries (:class:`~core.model.LiveRoute`).
        journal: the run's journal of model calls (:class:`~core.model.CallJournal`); each
            attempt is recorded before it is sent and its raw answer saved before it is acted
            on, and a step already answered is answered from the journal with no call.

    Raises:
        ResolverError: the ``openai`` package is not installed.
    """

    def __init__(self, route: LiveRoute, journal: CallJournal | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise ResolverError(
                f"The model route {route.name} is a live model, which needs the openai extra: pip install 'resolver[openai]'."
            ) from None
        self.route = route
        self.journal = journal
        self._openai = openai

    def complete(self, messages: list[Message]) -> ToolCallTurn | FinalTurn:
        """The model's next turn for ``messages``, with its usage in tokens.

        From the journal when this step was already answered (a resume after a crash: no second
        call), else one chat completion, each attempt journaled before it is sent: a rate limit,
        a server error, a timeout or a lost connection is tried again up to ``max_retries``
        times with exponential backoff (0.5 s doubling to 8 s, or the server's ``Retry-After``
        up to 60 s), each retry its own journal row. The openai client's own retries are off.

        The usage counts what was paid for the step: an earlier attempt of this step that was
        sent and never answered (a kill or a timeout while it was in flight) may have been paid,
        so it is counted as one more call at this answer's tokens (the same prompt was sent;
        its output is taken as this one's), never dropped (:meth:`~core.model.CallJournal.unanswered`).

        Raises:
            ModelUnavailable: no key, authentication refused, rate limit or server error after
                the retries, network failure or timeout, or an answer that is not exactly one
                tool call of a known shape with its usage. One sentence; nothing was acted on.
        """
        r = self.route
        at = f"The model server at {r.base_url}"
        step = sum(1 for m in messages if m.role == "assistant") + 1
        journal = self.journal
        if journal is not None:
            saved = journal.answered(step)
            if saved is not None and not is_failure(saved):
                return self._paid(turn_of(saved, at), step)
        key = api_key(r)
        turn = self._ask(messages, key, at, step)
        crash_point("answer")
        return self._paid(turn, step)

    def _paid(self, turn: ToolCallTurn | FinalTurn, step: int) -> ToolCallTurn | FinalTurn:
        """``turn`` with the usage of every call paid for ``step`` (:meth:`~core.model.CallJournal.also_paid`)."""
        if self.journal is None:
            return turn
        u = turn.usage
        calls, t_in, t_out = self.journal.also_paid(step, u.tokens_in, u.tokens_out)
        if not calls:
            return turn
        usage = TurnUsage(tokens_in=u.tokens_in + t_in, tokens_out=u.tokens_out + t_out, calls=1 + calls)
        return turn.model_copy(update={"usage": usage})

    def _ask(self, messages: list[Message], key: str, at: str, step: int) -> ToolCallTurn | FinalTurn:
        """Ask for ``step``'s turn, retrying with backoff; each attempt journaled before it is
        sent, an error answer saved as a failure (:func:`failure`), a good answer saved before
        it is returned. Raises ModelUnavailable."""
        openai = self._openai
        r = self.route
        client = openai.OpenAI(base_url=r.base_url, api_key=key, timeout=r.timeout_s, max_retries=0)
        journal = self.journal
        for n in range(r.max_retries + 1):
            tries = f"{n + 1} attempt(s)"
            attempt = journal.attempt(step) if journal is not None else n + 1
            try:
                response = client.chat.completions.with_raw_response.create(
                    model=r.model,
                    messages=api_messages(messages),
                    tools=TOOLS,
                    tool_choice="required",
                )
                raw = response.text
            except openai.APITimeoutError:  # it may have reached the server: left unanswered, counted as paid
                if n < r.max_retries:
                    time.sleep(_backoff_s(n, None))
                    continue
                raise ModelUnavailable(f"{at} did not answer within {r.timeout_s:g} s ({tries}); resume the run later.") from None
            except openai.APIConnectionError as exc:
                if _never_sent(exc) and journal is not None:
                    journal.answer(step, attempt, failure(0, "connection refused"), 0, 0)
                if n < r.max_retries:
                    time.sleep(_backoff_s(n, None))
                    continue
                raise ModelUnavailable(f"{at} could not be reached ({tries}); resume the run when it is up.") from None
            except openai.APIStatusError as exc:
                if journal is not None:
                    journal.answer(step, attempt, failure(exc.status_code, exc.response.text), 0, 0)
                code = exc.status_code
                if (code in (408, 409, 429) or code >= 500) and n < r.max_retries:
                    time.sleep(_backoff_s(n, _retry_after_s(exc.response.headers)))
                    continue
                if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
                    whose = f" for model {r.model}" if isinstance(exc, openai.PermissionDeniedError) else ""
                    raise ModelUnavailable(
                        f"{at} refused the key in ${r.key_env}{whose} (HTTP {code}); check the key and resume the run."
                    ) from None
                if isinstance(exc, openai.RateLimitError):
                    raise ModelUnavailable(f"{at} is limiting the rate (HTTP 429) after {tries}; resume the run later.") from None
                raise ModelUnavailable(f"{at} answered HTTP {code} ({tries}); resume the run later.") from None
            except openai.APIError as exc:
                raise ModelUnavailable(
                    f"{at} gave an answer that cannot be read ({type(exc).__name__}); resume the run to ask again."
                ) from None
            crash_point("received")
            try:
                turn = turn_of(raw, at)
            except ModelUnavailable:  # a paid answer that cannot be used: saved as a failure with its usage
                if journal is not None:
                    journal.answer(step, attempt, failure(200, raw), *_usage_of(raw))
                raise
            if journal is not None:
                journal.answer(step, attempt, raw, turn.usage.tokens_in, turn.usage.tokens_out)
            return turn
        raise AssertionError("unreachable: the last attempt returns or raises")


def turn_of(raw: str, at: str) -> ToolCallTurn | FinalTurn:
    """The turn a chat completion's JSON text ``raw`` holds: its one tool call (a read-only
    tool, or ``finish`` validated as a :class:`~core.data.FinalTurn`), with its usage in
    tokens. ``at`` names the server in the sentence.

    Raises:
        ModelUnavailable: not exactly one tool call of a known shape with its usage.
    """

    def malformed(what: str) -> ModelUnavailable:
        return ModelUnavailable(f"{at} gave an answer that cannot be read ({what}); resume the run to ask again.")

    try:
        answer = json.loads(raw)
    except ValueError:
        raise malformed("not JSON") from None
    if not isinstance(answer, dict):
        raise malformed("not a JSON object")
    try:
        usage = TurnUsage(tokens_in=answer["usage"]["prompt_tokens"], tokens_out=answer["usage"]["completion_tokens"])
    except (KeyError, TypeError, ValidationError):
        raise malformed("no token usage") from None
    try:
        calls = answer["choices"][0]["message"].get("tool_calls") or []
    except (KeyError, IndexError, TypeError, AttributeError):
        raise malformed("no choices") from None
    if not isinstance(calls, list) or len(calls) != 1 or not isinstance(calls[0], dict):
        raise malformed(f"{len(calls) if isinstance(calls, list) else 0} tool calls where one was asked for")
    fn = calls[0].get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise malformed("a tool call without a function name")
    name = fn["name"][:40]
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except (ValueError, TypeError):
        raise malformed(f"the arguments of {name!r} are not JSON") from None
    if not isinstance(args, dict):
        raise malformed(f"the arguments of {name!r} are not an object")
    try:
        if fn["name"] == "finish":
            return FinalTurn(**args, usage=usage)
        call_id = calls[0].get("id")
        return ToolCallTurn(
            tool=fn["name"],
            args=args,
            usage=usage,
            call_id=call_id if isinstance(call_id, str) else "",
            arguments=fn.get("arguments") or "{}",
        )
    except (ValidationError, TypeError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else {"loc": (), "msg": str(exc)}
        where = ".".join(str(p) for p in first["loc"])
        raise malformed(f"finish: {where} {first['msg']}".strip()) from None


INITIAL_BACKOFF_S = 0.5
MAX_BACKOFF_S = 8.0
MAX_RETRY_AFTER_S = 60.0


def _backoff_s(n: int, retry_after: float | None) -> float:
    """Seconds to wait before retry ``n + 1``: the server's ``Retry-After`` when it gives one
    from 0 to 60 s, else 0.5 s doubling each retry up to 8 s, less up to a quarter (jitter)."""
    if retry_after is not None and 0 <= retry_after <= MAX_RETRY_AFTER_S:
        return retry_after
    return min(INITIAL_BACKOFF_S * 2.0**n, MAX_BACKOFF_S) * (1 - 0.25 * random.random())


def _retry_after_s(headers: Any) -> float | None:
    """The server's ``retry-after-ms`` or ``retry-after`` (seconds or an HTTP date) in seconds, or None."""
    try:
        if headers.get("retry-after-ms"):
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return float(value)
        except ValueError:
            return (parsedate_to_datetime(value).timestamp()) - time.time()
    except (ValueError, TypeError, OverflowError):
        return None


def _never_sent(exc: BaseException) -> bool:
    """True when a connection error happened before the request left (the connection was
    refused or the name did not resolve: the transport's ``ConnectError``), so it cannot have
    been paid. Read by class name, so that the HTTP package under ``openai`` need not be imported."""
    cause = exc.__cause__
    return cause is not None and any(c.__name__ == "ConnectError" for c in type(cause).__mro__)


def _usage_of(raw: str) -> tuple[int, int]:
    """The prompt and completion tokens an answer's JSON text gives, else (0, 0)."""
    try:
        usage = json.loads(raw)["usage"]
        read = TurnUsage(tokens_in=usage["prompt_tokens"], tokens_out=usage["completion_tokens"])
    except (ValueError, KeyError, TypeError, ValidationError):
        return 0, 0
    return read.tokens_in, read.tokens_out
