"""A bad model answer ends the step, not the run: a live answer whose tool call does not validate
(a read-only tool's arguments of the wrong kind, missing or extra, a ``finish`` whose fields do
not) is journaled as paid, asked again within ``max_retries``, then one sentence; the run stays
resumable and a resume asks again. Never a store error, on either back-end.

A trial: ``get_order`` with ``{"order_id": ["LK-507862"]}`` (and, on PostgreSQL, an integer)
failed in the store, which the error blamed; the journal kept the answer as the step's, so every
resume replayed it and failed again, and the run stayed ``running`` for good.

Every test talks to the local chat-completions server (:mod:`core.models.chat_stub`) through the real
``openai`` client, on a home of each back-end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from core.api.home import Home
from core.engine.runner import LoopCrash, crash_after_step, outcome_line
from core.ground.clock import FixedClock
from core.models.model import ModelUnavailable, is_failure
from core.stores import BACKENDS

from helpers import stub_route
from pg import team_store

RUN = "T-65273-agent-stub-1"
SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
STORE_WORDS = ("database", "PostgreSQL", "SQLite", "store", "operator", "binding", "Traceback")
"""Words of a store's error: none may be in a sentence about a model's answer."""


@pytest.fixture(params=BACKENDS)
def live_home(request: pytest.FixtureRequest, tmp_path: Path, clock: FixedClock) -> Iterator[Home]:
    """A home on the Friday clock, on each back-end (SQLite files, a PostgreSQL schema of its own)."""
    with team_store(str(request.param)) as url:
        yield Home(tmp_path / "home", clock, store=url)


def _no_store_error(message: str) -> None:
    assert "\n" not in message and message.endswith("."), message
    assert not any(word in message for word in STORE_WORDS), message


BAD_GET_ORDER = [
    ('{"order_id": ["LK-507862"]}', "get_order takes order_id as text, not a list"),
    ('{"order_id": 507862}', "get_order takes order_id as text, not a number"),
    ('{"order_id": "LK-507862", "verbose": true}', "get_order takes order_id, not order_id, verbose"),
    ("{}", "get_order takes order_id, not nothing"),
    ('{"order_id": null}', "get_order takes order_id as text, not null"),
    ('{"order_id": "LK-507862\\u0000"}', "get_order takes order_id as one line of printable text, not text holding U+0000"),
    ('{"order_id": "\\ud800"}', "get_order takes order_id as one line of printable text, not text holding U+D800"),
    (json.dumps({"order_id": "L" * 5000}), "get_order takes order_id as text of 1 to 100 characters, not 5000"),
]
"""The arguments text a model gave for step 1's ``get_order``, and what the sentence says of it."""


@pytest.mark.parametrize("arguments", [a for a, _ in BAD_GET_ORDER], ids=[s for _, s in BAD_GET_ORDER])
def test_one_bad_answer_then_a_good_one_finishes_the_run_with_the_bad_one_paid(live_home, stub, arguments):
    """max_retries = 1: the bad answer is journaled as a paid failure, the retry gets the good
    one. Paid: the seed's 3 calls and one more at the bad answer's tokens (step 1's: 2105 in,
    48 out): 4 calls, 9260 tokens in, 240 out."""
    stub.fail = [{"arguments": arguments}]
    state = live_home.run("T-65273", live=stub_route(stub, max_retries=1))
    assert outcome_line(state) == "resolve (rule W7) | 4 model call(s), 2 tool call(s) | 9260 tokens in, 240 out | US$0.00105"
    assert stub.calls == 4
    assert [(e.tool, e.args) for e in state.evidence] == [
        ("get_order", {"order_id": "LK-507862"}),
        ("get_payments", {"order_id": "LK-507862"}),
    ]
    assert not any("error" in e.result for e in state.evidence if isinstance(e.result, dict))
    calls = live_home.store.model_calls(RUN)
    assert [(c["step"], c["attempt"]) for c in calls] == [(1, 1), (1, 2), (2, 1), (3, 1)]
    bad = calls[0]
    assert is_failure(bad["answer"]) and (bad["tokens_in"], bad["tokens_out"]) == (2105, 48)
    error = json.loads(bad["answer"])["error"]
    assert error["status"] == 200
    if len(error["body"]) < 2000:  # a failure keeps the first 2,000 characters of the answer
        assert json.loads(error["body"])["choices"][0]["message"]["tool_calls"][0]["function"] == {
            "name": "get_order",
            "arguments": arguments,
        }
    saved = live_home.store.load(RUN)
    assert (saved.status, saved.usage.model_calls, saved.usage.tokens_in) == ("waiting_approval", 4, 9260)


@pytest.mark.parametrize(("arguments", "said"), BAD_GET_ORDER, ids=[s for _, s in BAD_GET_ORDER])
def test_every_attempt_bad_is_one_sentence_the_run_stays_running_and_resumes(live_home, stub, arguments, said):
    """Two attempts (max_retries = 1), both bad: one sentence naming the last one's mistake,
    the run saved as it was before the step; a resume while the server still answers so asks
    again (the failures are not the step's answer) and says it again; a resume once it answers
    well finishes, every bad answer paid (four at step 1's tokens)."""
    route = stub_route(stub, max_retries=1)
    stub.fail = [{"arguments": arguments}] * 2
    with pytest.raises(ModelUnavailable) as caught:
        live_home.run("T-65273", live=route)
    message = str(caught.value)
    assert (
        message == f"The model server at {stub.url} gave no usable answer in 2 attempt(s) (the last: {said}); "
        f"run `resolver resume {RUN}` to ask again."
    )
    _no_store_error(message)
    saved = live_home.store.load(RUN)
    assert (saved.status, saved.step, saved.usage.model_calls, saved.evidence) == ("running", 0, 0, [])
    stub.fail = [{"arguments": arguments}] * 2
    with pytest.raises(ModelUnavailable) as again:
        live_home.resume(RUN)
    assert str(again.value) == message and stub.calls == 4
    assert live_home.store.load(RUN).status == "running"
    done = live_home.resume(RUN)
    assert done.kind == "continued"
    assert (
        outcome_line(done.state) == "resolve (rule W7) | 7 model call(s), 2 tool call(s) | 15575 tokens in, 384 out | US$0.00175"
    )
    assert stub.calls == 7
    assert [c["attempt"] for c in live_home.store.model_calls(RUN) if c["step"] == 1] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ('{"outcome": "maybe", "rule": "W7", "reason": "x"}', "finish: outcome is not one of resolve, reply and hand_to_person"),
        ('{"outcome": "reply", "reason": "x"}', "finish: rule is missing"),
        ('{"outcome": "reply", "rule": 7, "reason": "x"}', "finish: rule is not text"),
        ('{"outcome": "reply", "rule": "W7", "reason": "x", "usage": {}}', "finish: usage is not a field of finish"),
        (
            '{"outcome": "reply", "rule": "W7", "reason": "x", "\\u001b[31mnote": 1}',
            "finish: \\x1b[31mnote is not a field of finish",
        ),
        ('{"outcome": "reply", "rule": "W7", "reason": "x", "actions": [1]}', "finish: actions.0 is not a list of objects"),
        (
            json.dumps(
                {
                    "outcome": "resolve",
                    "rule": "W7",
                    "reason": "x",
                    "actions": [
                        {
                            "type": "request_refund",
                            "order_id": "LK-507862",
                            "amount": "119.00",
                            "currency": "CAD",
                            "reason_code": "RFD-DOUBLE",
                            "payment_id": "PAY-507862-2\x00",
                        }
                    ],
                }
            ),
            "finish holds a NUL character",
        ),
        ('{"outcome": "reply", "rule": "W7", "reason": "\\udc80", "reply_draft": "Hi"}', "finish holds a lone surrogate"),
    ],
)
def test_a_finish_that_does_not_validate_is_a_model_error_for_the_step(live_home, stub, arguments, said):
    """Step 3's finish: its fields do not validate, or hold what the store cannot keep (a NUL
    in a payment ID failed PostgreSQL's save of the queue's columns, and the run stayed
    running). With no retries, one sentence at once; the resume asks again and finishes."""

    def arm(state):
        if state.step == 2:
            stub.fail = [{"arguments": arguments}]

    with pytest.raises(ModelUnavailable) as caught:
        live_home.run("T-65273", live=stub_route(stub, max_retries=0), on_step=arm)
    message = str(caught.value)
    assert said in message and "in 1 attempt(s)" in message
    _no_store_error(message)
    saved = live_home.store.load(RUN)
    assert (saved.status, saved.step, saved.proposal) == ("running", 2, None)
    done = live_home.resume(RUN)
    assert (
        outcome_line(done.state) == "resolve (rule W7) | 4 model call(s), 2 tool call(s) | 9815 tokens in, 290 out | US$0.00113"
    )


def test_an_unknown_tool_name_is_an_error_result_the_model_reads_and_the_run_goes_on(live_home, stub):
    """A well-formed name that is no tool is not retried: the world's sentence is the call's
    result, sent back with the next request, so the model can correct itself."""
    stub.fail = [{"name": "get_refunds"}]
    state = live_home.run("T-65273", live=stub_route(stub, max_retries=0))
    assert state.status == "waiting_approval" and stub.calls == 3
    first = state.evidence[0]
    assert (first.tool, first.result) == (
        "get_refunds",
        {"error": "No tool 'get_refunds'; the tools are get_order, get_payments, get_shipment, get_customer, get_policy."},
    )
    sent = [m for m in stub.requests[1]["messages"] if m["role"] == "tool"]
    assert json.loads(sent[0]["content"]) == first.result


@pytest.mark.parametrize(
    ("function", "said"),
    [
        ({"name": "get order; drop"}, "a tool call whose name is not a function name"),
        ({"name": "x" * 65}, "a tool call whose name is not a function name"),
        (
            {"name": "lookup", "arguments": json.dumps({"q": "x" * 3000})},
            "the arguments of 'lookup' are longer than 2,000 characters",
        ),
        (
            {"name": "lookup", "arguments": json.dumps({"q": json.loads("[" * 40 + "]" * 40)})},
            "hold nesting deeper than 32 levels",
        ),
        ({"name": "lookup", "arguments": '{"q": NaN}'}, "the arguments of 'lookup' are not JSON"),
        ({"name": "lookup", "arguments": "[" * 100_000}, "the arguments of 'lookup' are not JSON"),
    ],
)
def test_a_tool_call_the_checkpoint_could_not_keep_is_a_model_error_too(live_home, stub, function, said):
    stub.fail = [function]
    with pytest.raises(ModelUnavailable) as caught:
        live_home.run("T-65273", live=stub_route(stub, max_retries=0))
    assert said in str(caught.value)
    _no_store_error(str(caught.value))
    assert live_home.resume(RUN).state.status == "waiting_approval"


def test_a_run_stuck_on_an_answer_journaled_before_the_check_is_asked_again(live_home, stub):
    """The trial's run, as a release before this check left it: step 2's answer (get_order with
    a list) journaled as the step's answer, not as a failure. A resume does not replay it: it
    asks again, and counts the old answer as paid (a call at its tokens: 2390 in, 46 out)."""
    route = stub_route(stub, max_retries=0)
    with pytest.raises(LoopCrash):
        live_home.run("T-65273", live=route, on_step=crash_after_step(1))
    bad = stub.answer(1, override={"name": "get_order", "arguments": '{"order_id": ["LK-507862"]}'})
    store = live_home.store
    attempt = store.journal_attempt(RUN, 2, route.route())
    store.journal_answer(RUN, 2, attempt, json.dumps(bad), 2390, 46)
    assert not is_failure(store.journal_answered(RUN, 2))
    done = live_home.resume(RUN)
    assert stub.calls == 3  # step 1, then step 2 asked again, then step 3
    assert (
        outcome_line(done.state) == "resolve (rule W7) | 4 model call(s), 2 tool call(s) | 9545 tokens in, 238 out | US$0.00107"
    )
    assert [(e.tool, e.args) for e in done.state.evidence] == [
        ("get_order", {"order_id": "LK-507862"}),
        ("get_payments", {"order_id": "LK-507862"}),
    ]
