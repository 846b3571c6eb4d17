"""A live model: an OpenAI-compatible chat-completions server, through the ``openai`` package.

Imported only for an ``openai:`` route (:func:`core.models.pick.model_for`), so the recorded path
never imports ``openai`` (the ``openai`` extra, :func:`core.install_hint` says how to install it).

What is sent: the run's messages (the system prompt, the ticket, each tool call the model made
and its result), the five read-only tools and a ``finish`` tool as JSON-schema functions, with
``tool_choice="required"``. What comes back is one tool call: a read-only tool becomes a
:class:`~core.ground.data.ToolCallTurn`, ``finish`` a :class:`~core.ground.data.FinalTurn` validated by the
same model as the recordings. Each tool call's ID and arguments are stored with the messages and
sent back as returned (messages saved before schema 6: ``call_<step>``). With a journal (:class:`~core.models.model.CallJournal`),
each attempt (each retry too: the client's own retries are off) is recorded before it is sent,
and its raw answer, or a failure, before the runner acts on it.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

from pydantic import ValidationError

from core import install_hint
from core.contract.store import crash_point
from core.contract.world import READ_TOOLS, tool_args_problem
from core.ground.data import FinalTurn, ToolCallTurn, TurnUsage
from core.ground.errors import ResolverError
from core.ground.state import Message
from core.models.model import CallJournal, LiveRoute, ModelUnavailable, api_key, failure, is_failure, resume_hint
from core.models.toolschema import TOOL_NAME, TOOLS, turn_problem


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
    """A :class:`~core.models.model.Model` over an OpenAI-compatible chat-completions server.

    Args:
        route: base URL, model name, the key's environment variable, timeout (seconds) and
            retries (:class:`~core.models.model.LiveRoute`).
        journal: the run's journal of model calls (:class:`~core.models.model.CallJournal`); each
            attempt is recorded before it is sent and its raw answer saved before it is acted
            on, and a step already answered is answered from the journal with no call.
        run_id: the run asking (default: the journal's), named with the command that resumes it
            in every sentence of a call that failed (:func:`~core.models.model.resume_hint`).

    Raises:
        ResolverError: the ``openai`` package is not installed.
    """

    def __init__(self, route: LiveRoute, journal: CallJournal | None = None, run_id: str | None = None) -> None:
        try:
            # lazy: openai is optional (the openai extra) and imported only for a live route
            import openai
        except ImportError:
            raise ResolverError(
                f"The model route {route.name} is a live model, which needs the openai extra: {install_hint('openai')}."
            ) from None
        self.route = route
        self.journal = journal
        self.run_id = run_id or (journal.run_id if journal is not None else None)
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
        its output is taken as this one's), never dropped (:meth:`~core.models.model.CallJournal.unanswered`).

        An answer the server gave (HTTP 200) that cannot be used (:func:`turn_of`: not one tool
        call with its usage, a read-only tool's arguments that are not its own, a ``finish``
        whose fields do not validate) is the model's mistake at this step, not the run's end: it
        is journaled as a paid failure (:func:`~core.models.model.failure` with status 200 and the
        tokens it gave) and asked again with the same backoff as a server error. A resume never
        takes such a failure for the step's answer; nor an answer journaled before a check
        that now refuses it (it was paid, and is counted so).

        Raises:
            ModelUnavailable: no key, authentication refused, rate limit or server error after
                the retries, network failure or timeout, or no usable answer after the retries.
                One sentence; nothing was acted on, and the run stays resumable.
        """
        r = self.route
        at = f"The model server at {r.base_url}"
        step = sum(1 for m in messages if m.role == "assistant") + 1
        journal = self.journal
        if journal is not None:
            saved = journal.answered(step)
            if saved is not None and not is_failure(saved):
                try:
                    return self._paid(turn_of(saved, at), step)
                except UnusableAnswer:
                    pass  # saved as an answer before its check refused it (a release before): paid, and asked again
        key = api_key(r, self.run_id)
        turn = self._ask(messages, key, at, step)
        crash_point("answer")
        return self._paid(turn, step)

    def _paid(self, turn: ToolCallTurn | FinalTurn, step: int) -> ToolCallTurn | FinalTurn:
        """``turn`` with the usage of every call paid for ``step`` (:meth:`~core.models.model.CallJournal.also_paid`)."""
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
        sent, an error answer or an unusable one saved as a failure (:func:`failure`; an
        unusable HTTP 200 with its tokens, as paid), a good answer saved before it is returned.
        Raises ModelUnavailable (one sentence) when the retries are spent."""
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
                raise ModelUnavailable(
                    f"{at} did not answer within {r.timeout_s:g} s ({tries}); {resume_hint(self.run_id, 'later')}."
                ) from None
            except openai.APIConnectionError as exc:
                if _never_sent(exc) and journal is not None:
                    journal.answer(step, attempt, failure(0, "connection refused"), 0, 0)
                if n < r.max_retries:
                    time.sleep(_backoff_s(n, None))
                    continue
                raise ModelUnavailable(
                    f"{at} could not be reached ({tries}); {resume_hint(self.run_id, 'when it is up')}."
                ) from None
            except openai.APIStatusError as exc:
                self._error_answer(exc, step, attempt, n, at, tries)
                continue
            except openai.APIError as exc:  # the client could not read it: left unanswered, counted as paid
                if n < r.max_retries:
                    time.sleep(_backoff_s(n, None))
                    continue
                raise ModelUnavailable(
                    f"{at} gave an answer that cannot be read ({type(exc).__name__}, {tries}); "
                    f"{resume_hint(self.run_id, 'to ask again')}."
                ) from None
            crash_point("received")
            try:
                turn = turn_of(raw, at)
            except UnusableAnswer as exc:  # a paid answer that cannot be used: saved as a failure with its usage
                if journal is not None:
                    journal.answer(step, attempt, failure(200, raw), *_usage_of(raw))
                if n < r.max_retries:
                    time.sleep(_backoff_s(n, None))
                    continue
                raise ModelUnavailable(
                    f"{at} gave no usable answer in {tries} (the last: {exc.what}); {resume_hint(self.run_id, 'to ask again')}."
                ) from None
            if journal is not None:
                journal.answer(step, attempt, raw, turn.usage.tokens_in, turn.usage.tokens_out)
            return turn
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _error_answer(self, exc: Any, step: int, attempt: int, n: int, at: str, tries: str) -> None:
        """An HTTP error answer (``exc``, the client's ``APIStatusError``) to attempt ``n``: saved
        as a failure, then waited out before the next attempt when it may pass (a timeout, a
        conflict, a rate limit, a server error) and attempts are left; else raised as one
        sentence: a refused key, a rate limit, or the status code."""
        if self.journal is not None:
            self.journal.answer(step, attempt, failure(exc.status_code, exc.response.text), 0, 0)
        code = exc.status_code
        if (code in (408, 409, 429) or code >= 500) and n < self.route.max_retries:
            time.sleep(_backoff_s(n, _retry_after_s(exc.response.headers)))
            return
        raise self._refusal(exc, at, tries) from None

    def _refusal(self, exc: Any, at: str, tries: str) -> ModelUnavailable:
        """The one sentence for an HTTP error answer not retried: a refused key, a rate limit,
        or the status code."""
        openai = self._openai
        r = self.route
        code = exc.status_code
        if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
            whose = f" for model {r.model}" if isinstance(exc, openai.PermissionDeniedError) else ""
            return ModelUnavailable(
                f"{at} refused the key in ${r.key_env}{whose} (HTTP {code}); check the key and {resume_hint(self.run_id)}."
            )
        later = resume_hint(self.run_id, "later")
        if isinstance(exc, openai.RateLimitError):
            return ModelUnavailable(f"{at} is limiting the rate (HTTP 429) after {tries}; {later}.")
        return ModelUnavailable(f"{at} answered HTTP {code} ({tries}); {later}.")


class UnusableAnswer(ModelUnavailable):
    """An answer the server gave (HTTP 200, paid) that cannot be used as the step's turn.
    ``what`` says why as a clause (``get_order takes order_id as text, not a list``), without a
    value of the model's; the message is one sentence around it. The model's retries catch it;
    the sentence a person sees when they are spent names the run to resume (:meth:`OpenAIChatModel._ask`)."""

    def __init__(self, at: str, what: str) -> None:
        super().__init__(f"{at} gave an answer that cannot be used ({what}).")
        self.what = what


_FINISH_NEEDS = {
    "outcome": "one of resolve, reply and hand_to_person",
    "rule": "text",
    "reason": "text",
    "reply_draft": "text",
    "actions": "a list of objects",
}
"""What each field of ``finish`` is, for the sentence refusing one that is not."""


def _strict_constant(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: NaN and Infinity are not JSON (Python reads them)."""
    raise ValueError(f"{name} is not JSON")


def turn_of(raw: str, at: str) -> ToolCallTurn | FinalTurn:
    """The turn a chat completion's JSON text ``raw`` holds: its one tool call (a read-only
    tool, a tool that does not exist, or ``finish`` validated as a :class:`~core.ground.data.FinalTurn`),
    with its usage in tokens. ``at`` names the server in the sentence.

    Usable means: strict JSON (no NaN), one tool call whose name is a function name
    (:data:`~core.models.toolschema.TOOL_NAME`) and whose arguments are a JSON object; a read-only
    tool's arguments exactly its own, each a string of 1 to 100 printable characters
    (:func:`core.contract.world.tool_args_problem`: a list or a number for an ID failed in the store, and
    a resume replayed it for good); ``finish``'s fields valid; nothing the checkpoint cannot
    keep (:func:`core.models.toolschema.turn_problem`); a call ID of up to 200 printable characters.
    A tool name that is well formed but not a tool is usable: the world answers it with a
    sentence naming the tools, which the model reads at its next step and may correct.

    Raises:
        UnusableAnswer: (a ModelUnavailable) any of the above does not hold; the sentence
            never repeats a value of the model's.
    """

    def malformed(what: str) -> UnusableAnswer:
        return UnusableAnswer(at, what)

    usage, call = _usage_and_call(raw, malformed)
    fn = call.get("function")
    if not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
        raise malformed("a tool call without a function name")
    name = fn["name"]
    if not TOOL_NAME.fullmatch(name):
        raise malformed("a tool call whose name is not a function name (letters, digits, '_' and '-', up to 64)")
    arguments = fn.get("arguments") or "{}"
    try:
        args = json.loads(arguments, parse_constant=_strict_constant)
    except (ValueError, TypeError, RecursionError):
        raise malformed(f"the arguments of {name!r} are not JSON") from None
    if not isinstance(args, dict):
        raise malformed(f"the arguments of {name!r} are not an object")
    call_id = call.get("id")
    call_id = call_id if isinstance(call_id, str) else ""
    if len(call_id) > 200 or not call_id.isprintable():
        raise malformed("a tool call ID that is not one line of up to 200 printable characters")
    turn: ToolCallTurn | FinalTurn
    if name == "finish":
        turn = _final_turn(args, usage, malformed)
    else:
        if name in READ_TOOLS:
            problem = tool_args_problem(name, args)
            if problem is not None:
                raise malformed(problem)
        turn = ToolCallTurn(tool=name, args=args, usage=usage, call_id=call_id, arguments=arguments)
    said = turn_problem(turn)
    if said is not None:
        raise malformed(said)
    return turn


def _usage_and_call(raw: str, malformed: Callable[[str], UnusableAnswer]) -> tuple[TurnUsage, dict[str, Any]]:
    """The token usage and the one tool call of the chat completion ``raw``: strict JSON, an
    object, with usage and exactly one tool call (an object); else ``malformed`` with the
    clause saying which does not hold, in that order."""
    try:
        answer = json.loads(raw, parse_constant=_strict_constant)
    except (ValueError, RecursionError):
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
    return usage, calls[0]


def _final_turn(args: dict[str, Any], usage: TurnUsage, malformed: Callable[[str], UnusableAnswer]) -> FinalTurn:
    """``finish``'s arguments ``args`` as a :class:`~core.ground.data.FinalTurn` with ``usage``; when
    they do not validate, ``malformed`` with our own clause naming the first field that does not
    (``finish: outcome is missing``, ``finish: rule is not text``), never pydantic's text.
    ``usage`` and ``kind`` are not fields of the ``finish`` the model is sent."""
    for ours in ("usage", "kind"):
        if ours in args:
            raise malformed(f"finish: {ours} is not a field of finish")
    try:
        return FinalTurn.model_validate({**args, "usage": usage})
    except ValidationError as exc:
        first = exc.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        where = ".".join(_shown(p) for p in first["loc"])
        if first["type"] == "missing":
            raise malformed(f"finish: {where} is missing") from None
        if field not in _FINISH_NEEDS:
            raise malformed(f"finish: {where} is not a field of finish") from None
        raise malformed(f"finish: {where} is not {_FINISH_NEEDS[field]}") from None


def _shown(part: Any) -> str:
    """A part of a field's location, safe in a sentence: ASCII (``ascii()`` escapes control
    characters), cut to 40 characters."""
    text = str(part)
    return ascii(text[:40])[1:-1]


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
