"""A live model paid for once: real processes, a real HTTP server.

``resolver run T-65273 --model stub`` asks :mod:`core.models.chat_stub` on 127.0.0.1 through the real
``openai`` client and is SIGKILLed at every point from sending a request to the step's save,
then resumed in a new process. What the sweep holds, for every point:

- killed after the answer was saved in the journal (the answer, the step's rows, its save, the
  step's end): the resume pays for nothing twice (the server answers 3 calls in all), and the run
  ends with the seed's line and the proposal digest of a run never killed;
- killed in flight (the server received the request and the process died before the answer was
  saved: killed by the server as it answers, or just after the answer was read): exactly one
  more call, and the outcome line counts it as paid (4 calls, its tokens and cost).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from core.api.home import Home
from core.engine.runner import outcome_line
from core.ground.data import load_recordings
from core.models.chat_stub import ChatStub
from core.models.pricing import cost_usd, show_usd

from helpers import core_command, run_process, stub_config

SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"
RUN = "T-65273-agent-stub-1"
TURNS = [t.usage for t in next(r for r in load_recordings("T-65273").runs if (r.model, r.repeat) == ("chat-small", 1)).turns]


def config(tmp_path: Path, stub: ChatStub) -> dict[str, str]:
    path = stub_config(tmp_path / "models.toml", stub.url, "max_retries = 0")
    return {"RESOLVER_CONFIG": str(path), "STUB_KEY": "sk-test"}


def points(tmp_path: Path, stub: ChatStub, monkeypatch) -> list[tuple[int, str]]:
    """Every crash point an unkilled ``resolver run`` passes from each step's answer read
    (``received``) to the end of that step (``step``), as ``(step, "kind:N")``, N counting that
    kind from the process's start as ``tests/crash_entry.py`` does."""
    from core.cli import main
    from core.contract.store import set_crash_hook

    for k, v in config(tmp_path, stub).items():
        monkeypatch.setenv(k, v)
    seen: list[str] = []
    set_crash_hook(seen.append)
    try:
        assert main(["run", "T-65273", "--model", "stub", "--home", str(tmp_path / "probe")]) == 0
    finally:
        set_crash_hook(None)
    counts: dict[str, int] = {}
    out: list[tuple[int, str]] = []
    step = 0
    for kind in seen:
        counts[kind] = counts.get(kind, 0) + 1
        if kind == "received":
            step += 1
        if step:
            out.append((step, f"{kind}:{counts[kind]}"))
    stub.calls = 0
    return out


def finished(home_dir: Path):
    state = Home(home_dir).store.load(RUN)
    assert state.status == "waiting_approval"
    return state


def what(state) -> dict:
    """What a proposal proposes: outcome, rule, reason, actions and reply draft."""
    return state.proposal.model_dump(include={"outcome", "rule", "reason", "actions", "reply_draft"})


def in_flight_line(step: int) -> str:
    """The outcome line when step ``step``'s first request was lost in flight: one more call at its tokens."""
    lost = TURNS[step - 1]
    t_in, t_out = 7155 + lost.tokens_in, 192 + lost.tokens_out
    return (
        f"resolve (rule W7) | 4 model call(s), 2 tool call(s) | {t_in} tokens in, {t_out} out | "
        f"{show_usd(cost_usd('chat-small', t_in, t_out))}"
    )


@pytest.mark.slow
def test_a_sigkill_at_every_point_from_the_request_to_the_steps_save_pays_once(stub, tmp_path, monkeypatch):
    env = config(tmp_path, stub)
    sweep = points(tmp_path, stub, monkeypatch)
    kinds = {p.split(":")[0] for _, p in sweep}
    assert {"received", "answer", "row", "save", "step"} <= kinds and {s for s, _ in sweep} == {1, 2, 3}
    clean = run_process(tmp_path / "clean", "run", "T-65273", "--model", "stub", env=env)
    assert clean.returncode == 0 and SEED_OUTCOME in clean.stdout, clean.stderr
    proposal = what(finished(tmp_path / "clean"))
    for i, (step, point) in enumerate(sweep):
        stub.calls = 0
        home_dir = tmp_path / f"k{i}"
        killed = run_process(home_dir, "run", "T-65273", "--model", "stub", env={**env, "RESOLVER_KILL_AT": point})
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        resumed = run_process(home_dir, "resume", RUN, env=env)
        assert resumed.returncode == 0, (point, resumed.stderr)
        state = finished(home_dir)
        if point.startswith("received"):  # read, not yet saved: in flight for the journal
            assert stub.calls == 4, point
            assert outcome_line(state) == in_flight_line(step), point
        else:
            assert stub.calls == 3, point  # 0 calls paid twice
            assert outcome_line(state) == SEED_OUTCOME, point
        assert what(state) == proposal, point  # the same proposal (its digest binds the run and the time read)


@pytest.mark.slow
@pytest.mark.parametrize("step", [1, 2, 3])
def test_a_sigkill_while_the_request_is_in_flight_costs_exactly_one_more_call_counted_as_paid(stub, tmp_path, step):
    """The server kills the client when it receives step ``step``'s request, before answering."""
    env = {**os.environ, **config(tmp_path, stub)}
    env.pop("RESOLVER_KILL_AT", None)
    home_dir = tmp_path / "home"
    client = subprocess.Popen(
        [*core_command(), "run", "T-65273", "--model", "stub", "--home", str(home_dir)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )

    def kill(n: int) -> None:
        if n == step:
            os.kill(client.pid, signal.SIGKILL)
            client.wait()  # dead before the answer leaves

    stub.on_request = kill
    _, err = client.communicate(timeout=60)
    assert client.returncode == -signal.SIGKILL, err
    stub.on_request = None
    assert stub.calls == step
    journal = Home(home_dir).store.model_calls(RUN)
    assert (journal[-1]["step"], journal[-1]["answer"]) == (step, None)  # sent, never answered
    resumed = run_process(home_dir, "resume", RUN, env=config(tmp_path, stub))
    assert resumed.returncode == 0, resumed.stderr
    assert stub.calls == 4  # exactly one more call
    assert in_flight_line(step) in resumed.stdout
    assert outcome_line(finished(home_dir)) == in_flight_line(step)


def test_the_stub_server_ships_as_a_command_and_a_config_route_on_it_prints_the_seed_line(tmp_path):
    """A config route ``stub`` on ``python -m core.models.chat_stub``, replaying T-65273's chat-small
    recording 1 and priced as chat-small, prints the seed's line."""
    env = {**os.environ, "STUB_KEY": "sk-demo"}
    server = subprocess.Popen(
        [sys.executable, "-m", "core.models.chat_stub", "--port", "0", "--key-env", "STUB_KEY"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first.startswith("Serving T-65273 agent/chat-small#1 at http://127.0.0.1:"), first
        url = first.split(" at ", 1)[1].split(" ", 1)[0]
        path = stub_config(tmp_path / "config.toml", url)
        done = run_process(
            tmp_path / "home", "run", "T-65273", "--model", "stub", env={"RESOLVER_CONFIG": str(path), "STUB_KEY": "sk-demo"}
        )
        assert done.returncode == 0, done.stderr
        assert SEED_OUTCOME in done.stdout and RUN in done.stdout
    finally:
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=30)
    assert server.returncode == 0
    assert "3 call(s) answered." in out
    assert err.splitlines() == [
        "call 1: turn 1 of 3, get_order (2105 tokens in, 48 out, US$0.00023 as chat-small)",
        "call 2: turn 2 of 3, get_payments (2390 tokens in, 46 out, US$0.00026 as chat-small)",
        "call 3: turn 3 of 3, finish (2660 tokens in, 98 out, US$0.00032 as chat-small)",
    ]


@pytest.mark.parametrize(
    ("argv", "sentence"),
    [
        (["--task", "T-00000"], "No recorded model runs for T-00000"),
        (["--repeat", "9"], "T-65273 has no recording agent/chat-small#9; there are"),
        (["--key-env", "RESOLVER_NO_SUCH_KEY"], "--key-env names $RESOLVER_NO_SUCH_KEY, which is not set"),
        (["--port", "70000"], "--port is a TCP port from 0 to 65535, not 70000."),
    ],
)
def test_the_stub_command_says_a_bad_option_in_one_sentence(argv, sentence, capsys):
    from core.models.chat_stub import main

    assert main(argv) == 2
    err = capsys.readouterr().err
    assert sentence in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.slow
def test_a_sigkill_at_every_point_of_a_finish_that_breaks_a_rule_never_leaves_it_waiting(stub, tmp_path, monkeypatch):
    """The model's finish proposes a second, negative line on T-65273's payment (the proposal
    rules' P2): killed at every point from each request to its step's save and resumed in a new
    process, the run ends handed to a person every time, with one ``rule_broken`` event, nothing
    planned or written, and no call paid twice."""
    from core.ground.data import FinalTurn

    final = stub.turns[-1]
    assert isinstance(final, FinalTurn)
    negative = {**final.actions[0], "amount": "-100.00"}
    stub.turns[-1] = final.model_copy(update={"actions": [final.actions[0], negative]})
    env = config(tmp_path, stub)
    sweep = points(tmp_path, stub, monkeypatch)
    assert {s for s, _ in sweep} == {1, 2, 3}
    for i, (_step, point) in enumerate(sweep):
        stub.calls = 0
        home_dir = tmp_path / f"k{i}"
        killed = run_process(home_dir, "run", "T-65273", "--model", "stub", env={**env, "RESOLVER_KILL_AT": point})
        assert killed.returncode == -signal.SIGKILL, (point, killed.stderr)
        mid = Home(home_dir).store.load(RUN)
        assert mid.status in ("running", "handed_to_person"), point  # never waiting, even for a moment
        resumed = run_process(home_dir, "resume", RUN, env=env)
        assert resumed.returncode == 0, (point, resumed.stderr)
        home = Home(home_dir)
        state = home.store.load(RUN)
        assert state.status == "handed_to_person" and state.proposal is not None and not state.proposal.actions, point
        assert [e.data["rule"] for e in state.events if e.kind == "rule_broken"] == ["P2"], point
        assert state.operations == [] and home.world().changes() == [], point
        assert stub.calls == (4 if point.startswith("received") else 3), point
