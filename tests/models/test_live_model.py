"""A live model beside the recordings: the provider seam.

Every test talks to a real HTTP server on 127.0.0.1 speaking chat-completions
(:mod:`core.models.chat_stub`), through the real ``openai`` client; nothing of ours is mocked.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from core.engine.runner import outcome_line
from core.ground.errors import BadArgument
from core.models.model import KeyNotSet, LiveRoute, ModelUnavailable, load_routes

from helpers import stub_config, stub_route

FIXTURES = Path(__file__).parent.parent / "fixtures"
SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
RUN = "T-65273-agent-stub-1"
PAID_TWICE = "resolve (rule W7) | 5 model call(s), 2 tool call(s) | 11935 tokens in, 284 out | US$0.00134"
"""The seed's outcome with two unusable answers at step 2 paid: 7155 + 2 x 2390 tokens in, 192 + 2 x 46 out."""


def route(stub, **kw) -> LiveRoute:
    return stub_route(stub, **kw)


def test_a_live_route_replaying_t65273_prints_the_seed_outcome(home, stub):
    state = home.run("T-65273", live=route(stub))
    assert state.run_id == RUN
    assert outcome_line(state) == SEED_OUTCOME
    assert stub.calls == 3
    assert [e.tool for e in state.evidence] == ["get_order", "get_payments"]
    assert state.proposal and state.proposal.actions[0].payment_id == "PAY-507862-2"
    # the history goes back as the API takes it: each tool call answered by its tool message
    last = stub.requests[-1]
    assert last["model"] == "stub-model" and last["tool_choice"] == "required"
    calls = [m for m in last["messages"] if m["role"] == "assistant"]
    answers = [m for m in last["messages"] if m["role"] == "tool"]
    assert [c["tool_calls"][0]["id"] for c in calls] == [a["tool_call_id"] for a in answers] == ["call_0", "call_1"]
    assert json.loads(calls[0]["tool_calls"][0]["function"]["arguments"]) == {"order_id": "LK-507862"}
    assert "finish" in {t["function"]["name"] for t in last["tools"]}
    assert json.loads(home.store.load(RUN).meta.model_route.split(":", 1)[1])["base_url"] == stub.url


@pytest.mark.parametrize(
    ("fail", "key", "sentence", "paid"),
    [
        ([], "wrong", "refused the key in $STUB_KEY (HTTP 401)", SEED_OUTCOME),
        ([429, 429], None, "is limiting the rate (HTTP 429) after 2 attempt(s)", SEED_OUTCOME),
        ([500, 503], None, "answered HTTP 503 (2 attempt(s))", SEED_OUTCOME),
        # An HTTP 200 that cannot be used is retried as a server error is (max_retries = 1: two
        # attempts, so two such answers end the step), and each was paid: two more calls than the
        # seed's three, at the tokens each gave: none for a 200 without usage, step 2's (2390 in,
        # 46 out) for a tool call the stub answers at step 2 with other arguments.
        (
            ["malformed"] * 2,
            None,
            "gave no usable answer in 2 attempt(s) (the last: no token usage)",
            SEED_OUTCOME.replace("3 model", "5 model"),
        ),
        (["bad-args"] * 2, None, "(the last: the arguments of 'get_payments' are not JSON)", PAID_TWICE),
        # the trial's answers: get_order with a list, and with an integer, for its ID
        (
            [{"name": "get_order", "arguments": '{"order_id": ["LK-507862"]}'}] * 2,
            None,
            "(the last: get_order takes order_id as text, not a list)",
            PAID_TWICE,
        ),
        (
            [{"name": "get_order", "arguments": '{"order_id": 507862}'}] * 2,
            None,
            "(the last: get_order takes order_id as text, not a number)",
            PAID_TWICE,
        ),
    ],
)
def test_a_failed_call_is_one_sentence_writes_nothing_and_the_run_resumes(home, stub, fail, key, sentence, paid):
    def arm(state):  # step 1 is answered; the call for step 2 meets the failure
        if state.step == 1:
            stub.fail = [*fail]
            stub.key = key or stub.key

    with pytest.raises(ModelUnavailable) as caught:
        home.run("T-65273", live=route(stub, max_retries=1), on_step=arm)
    message = str(caught.value)
    assert sentence in message and "\n" not in message and message.endswith(".")
    assert f"`resolver resume {RUN}`" in message  # the run to resume, named with its command
    saved = home.store.load(RUN)
    assert (saved.status, saved.step, saved.usage.model_calls) == ("running", 1, 1)
    stub.key, stub.fail = "sk-test", []
    done = home.resume(RUN)
    assert done.kind == "continued" and outcome_line(done.state) == paid


def test_a_timeout_and_an_unreachable_server_are_one_sentence(home, stub):
    stub.fail, stub.slow_s = ["slow"], 2.0
    with pytest.raises(
        ModelUnavailable, match=rf"did not answer within 0.3 s \(1 attempt\(s\)\); run `resolver resume {RUN}` later\.$"
    ):
        home.run("T-65273", live=route(stub, timeout_s=0.3, max_retries=0))
    assert home.store.load(RUN).step == 0
    gone = route(stub, base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(
        ModelUnavailable,
        match=r"could not be reached \(1 attempt\(s\)\); run `resolver resume T-65273-agent-stub-2` when it is up\.$",
    ):
        home.run("T-65273", live=gone)


def test_a_missing_key_is_said_before_any_call(home, stub, monkeypatch):
    monkeypatch.delenv("STUB_KEY")
    with pytest.raises(ModelUnavailable, match=r"reads its key from \$STUB_KEY, which is not set"):
        home.run("T-65273", live=route(stub))
    assert stub.calls == 0


@pytest.mark.parametrize("value", [None, ""])
def test_a_missing_key_refuses_the_run_before_it_is_made(home, stub, monkeypatch, value):
    """A newcomer's trip: the README's live route without `export STUB_KEY=...` left a run
    ``running`` behind at the first try. The run is refused before it is made, naming the variable."""
    if value is None:
        monkeypatch.delenv("STUB_KEY")
    else:
        monkeypatch.setenv("STUB_KEY", value)
    with pytest.raises(KeyNotSet) as caught:
        home.run("T-65273", live=route(stub))
    assert str(caught.value) == (
        "The model route stub reads its key from $STUB_KEY, which is not set: set it (export STUB_KEY=...) and run "
        "again. No run was made."
    )
    assert home.queue.total() == 0 and not home.store.exists(RUN) and stub.calls == 0
    monkeypatch.setenv("STUB_KEY", "sk-test")
    assert home.run("T-65273", live=route(stub)).run_id == RUN  # the first run once the key is set


def test_the_cli_refuses_a_live_run_without_its_key_and_saves_nothing(cli, stub, monkeypatch):
    monkeypatch.delenv("STUB_KEY")
    flags = ["--model", "stub", "--base-url", stub.url, "--model-name", "stub-model", "--api-key-env", "STUB_KEY"]
    code, out, err = cli("run", "T-65273", *flags, "--price-as", "chat-small")
    assert code == 1 and out == "" and "$STUB_KEY, which is not set" in err and "No run was made." in err
    assert cli("runs")[1].startswith("No saved runs")


def test_a_key_unset_at_resume_names_the_run_and_its_command(home, stub, monkeypatch):
    def unset(state):  # step 1 is answered; the key is gone before step 2
        if state.step == 1:
            monkeypatch.delenv("STUB_KEY")

    with pytest.raises(ModelUnavailable) as caught:
        home.run("T-65273", live=route(stub), on_step=unset)
    assert str(caught.value) == (
        f"The model route stub reads its key from $STUB_KEY, which is not set; set it and run `resolver resume {RUN}`."
    )
    with pytest.raises(ModelUnavailable, match=rf"set it and run `resolver resume {RUN}`\.$"):
        home.resume(RUN)
    monkeypatch.setenv("STUB_KEY", "sk-test")
    assert outcome_line(home.resume(RUN).state) == SEED_OUTCOME


@pytest.mark.parametrize(
    ("fields", "sentence"),
    [
        ({"base_url": "ftp://x"}, "must start with http:// or https://"),
        ({"key_env": "sk-123 secret"}, "is named by an environment variable"),
        ({"name": "chat-small"}, "is a recorded model"),
        ({"name": "Bad Name"}, "A model route's name is"),
        ({"price": "gpt-9"}, "No price for gpt-9 in data/models.json"),
        ({"timeout_s": 0}, "seconds between 0 and 600"),
    ],
)
def test_a_bad_route_is_one_sentence(stub, fields, sentence):
    with pytest.raises(BadArgument, match=sentence):
        route(stub, **fields)


def test_repeat_is_refused_for_a_live_route(home, stub):
    with pytest.raises(BadArgument, match="--repeat replays a recording"):
        home.run("T-65273", repeat=1, live=route(stub))
    assert stub.calls == 0


def test_the_cli_runs_a_config_route_and_resumes_it(cli, stub, tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVER_CONFIG", str(stub_config(tmp_path / "config.toml", stub.url, "max_retries = 0")))
    assert set(load_routes()) == {"stub"}
    code, out, _ = cli("run", "T-65273", "--model", "stub")
    assert code == 0 and SEED_OUTCOME in out and RUN in out
    stub.key = "rotated"
    code, out, err = cli("run", "T-65273", "--model", "stub")
    assert code == 1 and "refused the key in $STUB_KEY (HTTP 401)" in err and "Traceback" not in err + out
    stub.key = "sk-test"
    code, out, _ = cli("resume", "T-65273-agent-stub-2")
    assert code == 0 and SEED_OUTCOME in out
    assert stub.calls == 7


def test_the_cli_takes_a_route_from_flags(cli, stub):
    flags = ["--base-url", stub.url, "--model-name", "stub-model", "--api-key-env", "STUB_KEY", "--price-as", "chat-small"]
    code, out, _ = cli("run", "T-65273", "--model", "stub", *flags)
    assert code == 0 and SEED_OUTCOME in out
    code, _, err = cli("run", "T-65273", "--model", "stub", "--base-url", stub.url)
    assert code == 2 and "needs --model-name and --api-key-env beside --base-url" in err
    code, _, err = cli("run", "T-65273", "--model-name", "x")
    assert code == 2 and "--model-name describes a live model, which needs --base-url too." in err
    code, _, err = cli("run", "T-65273", "--model", "stub", *flags, "--repeat", "2")
    assert code == 2 and "--repeat replays a recording" in err


@pytest.mark.parametrize(
    ("text", "sentence"),
    [
        ("[models.x]\nmodel = 'm'\napi_key_env = 'K'\n", "models.x needs base_url"),
        ("[models.x]\nbase_url = 1\n", "models.x.base_url has the wrong type"),
        ("[models.x]\nurl = 'http://x'\n", "models.x has an unknown key url"),
        ("[models\n", "is not TOML"),
    ],
)
def test_a_bad_config_route_is_one_sentence(cli, tmp_path, monkeypatch, text, sentence):
    config = tmp_path / "config.toml"
    config.write_text(text)
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    code, out, err = cli("run", "T-65273", "--model", "x")
    assert code == 2 and sentence in err and "Traceback" not in err + out


def test_the_recorded_path_never_imports_openai(tmp_path):
    code = (
        "import sys\n"
        "from core.api.home import Home\n"
        f"Home({str(tmp_path / 'home')!r}).run('T-65273')\n"
        "assert 'openai' not in sys.modules, 'openai imported'\n"
        "assert 'core.models.live_model' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_each_attempt_is_journaled_before_it_is_sent_and_its_answer_before_it_is_used(home, stub):
    """Our own retries (the openai client's are off): each attempt is a journal row of its own,
    a refusal saved as a failure, which a resume never takes for an answer."""
    from core.models.model import is_failure

    def arm(state):
        if state.step == 1:
            stub.fail = [500]

    with pytest.raises(ModelUnavailable):
        home.run("T-65273", live=route(stub, max_retries=0), on_step=arm)
    calls = home.store.model_calls(RUN)
    assert [(c["step"], c["attempt"], c["answer"] is not None) for c in calls] == [(1, 1, True), (2, 1, True)]
    assert (calls[0]["tokens_in"], calls[0]["tokens_out"]) == (2105, 48)
    assert json.loads(calls[0]["answer"])["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "get_order"
    assert is_failure(calls[1]["answer"]) and json.loads(calls[1]["answer"])["error"]["status"] == 500
    assert home.store.journal_answered(RUN, 2) == calls[1]["answer"]  # the contract's latest answer: a failure
    done = home.resume(RUN)
    assert outcome_line(done.state) == SEED_OUTCOME  # a refusal is not paid
    calls = home.store.model_calls(RUN)
    assert [(c["step"], c["attempt"]) for c in calls] == [(1, 1), (2, 1), (2, 2), (3, 1)]
    assert sum(c["tokens_in"] or 0 for c in calls) == 7155
    home.delete(RUN)  # prune deletes through delete: the journal goes with the run
    assert home.store.model_calls(RUN) == []


def test_the_clients_retries_are_ours_each_a_journal_row(home, stub):
    stub.fail = [429, 503]
    state = home.run("T-65273", live=route(stub, max_retries=2))
    assert outcome_line(state) == SEED_OUTCOME and stub.calls == 5
    rows = [
        (c["step"], c["attempt"], (json.loads(c["answer"]).get("error") or {}).get("status")) for c in home.store.model_calls(RUN)
    ]
    assert rows == [(1, 1, 429), (1, 2, 503), (1, 3, None), (2, 1, None), (3, 1, None)]


def test_an_attempt_lost_in_flight_is_counted_as_paid(home, stub):
    """A timeout leaves its attempt unanswered: the server may have charged, so the step's
    answer counts it as one more call at its own tokens."""
    stub.fail, stub.slow_s = ["slow"], 1.0
    state = home.run("T-65273", live=route(stub, timeout_s=0.4, max_retries=1))
    assert stub.calls == 4
    assert outcome_line(state) == "resolve (rule W7) | 4 model call(s), 2 tool call(s) | 9260 tokens in, 240 out | US$0.00105"


def test_a_step_answered_before_a_crash_is_taken_from_the_journal_with_no_second_call(home, stub):
    from core.models.model import CallJournal
    from core.models.pick import model_for

    state = home.run("T-65273", live=route(stub))
    assert stub.calls == 3
    model = model_for(state, home.store)
    assert isinstance(model.journal, CallJournal)
    # the context before step 1 (system prompt and ticket): step 1 is in the journal, no request is sent
    turn = model.complete(state.messages[:2])
    assert (turn.tool, turn.args, turn.usage.tokens_in) == ("get_order", {"order_id": "LK-507862"}, 2105)
    assert stub.calls == 3


@pytest.mark.slow
def test_a_kill_after_the_answer_and_before_the_step_save_pays_for_nothing_on_resume(stub, tmp_path):
    """A real process is SIGKILLed right after the journal saved step 2's answer (before the
    step's checkpoint); the resume in a new process takes that answer from the journal."""
    from helpers import run_process

    env = {"RESOLVER_CONFIG": str(stub_config(tmp_path / "models.toml", stub.url)), "STUB_KEY": "sk-test"}
    home_dir = tmp_path / "home"
    killed = run_process(home_dir, "run", "T-65273", "--model", "stub", env={**env, "RESOLVER_KILL_AT": "answer:2"})
    assert killed.returncode == -9, killed.stderr
    assert stub.calls == 2
    resumed = run_process(home_dir, "resume", RUN, env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert SEED_OUTCOME in resumed.stdout
    assert stub.calls == 3  # step 2 was not paid twice: only step 3 was asked


def test_stored_messages_keep_each_tool_calls_id_and_arguments_as_returned(home, stub):
    """Schema 6: the history a resumed loop sends is the one the API returned, IDs included."""
    from core.engine.runner import LoopCrash, crash_after_step

    with pytest.raises(LoopCrash):
        home.run("T-65273", live=route(stub), on_step=crash_after_step(2))
    saved = home.store.load(RUN)
    made = [m for m in saved.messages if m.role == "assistant"]
    answered = [m for m in saved.messages if m.role == "tool"]
    assert [(m.tool_call_id, m.arguments) for m in made] == [
        ("call_0", '{"order_id": "LK-507862"}'),
        ("call_1", '{"order_id": "LK-507862"}'),
    ]
    assert [m.tool_call_id for m in answered] == ["call_0", "call_1"]
    home.resume(RUN)
    sent = stub.requests[-1]["messages"]
    assert [m["tool_calls"][0]["id"] for m in sent if m["role"] == "assistant"] == ["call_0", "call_1"]
    assert [m["tool_call_id"] for m in sent if m["role"] == "tool"] == ["call_0", "call_1"]


def test_a_schema_5_checkpoint_loads_as_current_with_messages_without_tool_call_ids():
    from core.ground.state import SCHEMA_VERSION, TaskState, migrate

    raw = json.loads((FIXTURES / "task_state_v5.json").read_text())
    assert raw["schema_version"] == 5 and "tool_call_id" not in raw["messages"][2]
    state = TaskState.model_validate(migrate(raw))
    assert state.schema_version == SCHEMA_VERSION == 7
    assert all((m.tool_call_id, m.arguments) == ("", "") for m in state.messages)
    assert state.proposal is not None and state.proposal.actions[0].payment_id == "PAY-507862-2"


def test_a_home_of_the_release_before_resumes_its_loop_and_approves_its_waiting_run(tmp_path, clock):
    """The frozen home of schema 5 and store format 2 (``tests/fixtures/home_schema_5``)."""
    import shutil

    from core.api.home import Home

    root = tmp_path / "home"
    shutil.copytree(FIXTURES / "home_schema_5", root)
    for path in root.iterdir():
        path.chmod(0o600)
    home = Home(root, clock=clock)
    resumed = home.resume("T-65273-crash-1")
    assert resumed.kind == "continued" and outcome_line(resumed.state) == SEED_OUTCOME
    assert [e["data"]["step"] for e in home.store.events("T-65273-crash-1") if e["kind"] in ("tool_call", "outcome")] == [
        1,
        2,
        3,
    ]
    waiting = home.resume("T-65273-agent-chat-small-1")
    assert waiting.kind == "request" and waiting.state.schema_version == 7
    done = home.approve("T-65273-agent-chat-small-1", "team_lead", "Grace", seen=home.queue.look(waiting.state))
    assert done.status == "done" and [op.status for op in done.operations] == ["done", "done"]


def test_without_the_openai_extra_a_live_route_says_how_to_install_it():
    """The sentence told pip to install the openai extra of ``resolver``, an unrelated package on
    PyPI; it names the project folder's install now (:func:`core.install_hint`)."""
    from core import install_hint

    code = (
        "import sys; sys.modules['openai'] = None\n"
        "from core.ground.errors import ResolverError\n"
        "from core.models.live_model import OpenAIChatModel\n"
        "from core.models.model import LiveRoute\n"
        "route = LiveRoute(name='stub', base_url='http://127.0.0.1:9/v1', model='m', key_env='STUB_KEY', price='chat-small')\n"
        "try:\n"
        "    OpenAIChatModel(route)\n"
        "except ResolverError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60).stdout.strip()
    assert out == f"The model route stub is a live model, which needs the openai extra: {install_hint('openai')}."
    assert "pip install -e '.[openai]'" in out and "resolver[" not in out
