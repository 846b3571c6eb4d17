"""A model's value never reaches the world's SQL as anything but a string it may hold, on every
back-end: a read-only tool refuses other arguments with :class:`~core.contract.world.UnknownTool` and one
sentence before any query, and a recording whose turn calls ``get_order`` with a list for its ID
replays to an error result in the evidence, never a store error (a trial: the run stayed
``running`` for good, every resume blamed the store).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from core.api.home import Home
from core.cli import main
from core.contract.world import MAX_ARG_CHARS, READ_TOOLS, TOOL_ARGS, UnknownTool, World
from core.ground.data import DataError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

GOOD = {"order_id": "LK-507862", "customer_id": "C-1001", "rule_id": "W7"}
"""A value each tool's argument finds in the practice world."""

BAD_VALUES: list[tuple[Any, str]] = [
    (["LK-507862"], "as text, not a list"),
    (507862, "as text, not a number"),
    (5.0e300, "as text, not a number"),
    (10**400, "as text, not a number"),
    (None, "as text, not null"),
    (True, "as text, not true or false"),
    ({"id": "LK-507862"}, "as text, not an object"),
    ("", "not an empty string"),
    ("L" * (MAX_ARG_CHARS + 1), f"as text of 1 to {MAX_ARG_CHARS} characters, not {MAX_ARG_CHARS + 1}"),
    ("x" * 1_000_000, "not 1000000"),
    ("LK-507862\x00", "as one line of printable text, not text holding U+0000"),
    ("LK-\ud800", "not text holding U+D800"),
    ("LK-507862\nW7", "not text holding U+000A"),
]
"""What a model has sent, or could, for an ID, and the end of the sentence refusing it."""


def _no_sql(world: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on every connection or snapshot ``world`` opens fails the test: a refusal must
    come before any query."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the world opened a connection for arguments it should have refused")

    monkeypatch.setattr(world, "_connect", refuse)
    monkeypatch.setattr(world, "_snapshot", refuse)


@pytest.mark.parametrize("tool", READ_TOOLS)
@pytest.mark.parametrize(("value", "said"), BAD_VALUES, ids=lambda v: repr(v)[:30])
def test_a_tools_argument_that_is_not_its_own_string_is_refused_before_any_sql(world, monkeypatch, tool, value, said):
    (name,) = TOOL_ARGS[tool]
    _no_sql(world, monkeypatch)
    for call in (
        lambda: world.read_tool(tool, {name: value}),
        lambda: world.call_tool(tool, {name: value}),
        lambda: getattr(world, tool)(value),  # get_customer, get_policy ... called directly too
    ):
        with pytest.raises(UnknownTool) as caught:
            call()
        message = str(caught.value)
        assert message.startswith(f"{tool} takes {name} ") and said in message and message.endswith(".")
        assert "\n" not in message and "\x00" not in message and len(message) < 200
        message.encode("utf-8")  # it can be kept as the call's result


@pytest.mark.parametrize(
    ("tool", "args", "sentence"),
    [
        ("get_order", {}, "get_order takes order_id, not nothing."),
        ("get_order", {"order_id": "LK-507862", "verbose": True}, "get_order takes order_id, not order_id, verbose."),
        ("get_customer", {"order_id": "LK-507862"}, "get_customer takes customer_id, not order_id."),
        ("get_order", ["LK-507862"], "get_order takes an object of arguments (order_id), not a list."),
        ("get_order", {"\ud800\x1b[31m": "x"}, "get_order takes order_id, not \\ud800\\x1b[31m."),
        ("get_orders", {"order_id": "LK-507862"}, "No tool 'get_orders'; the tools are " + ", ".join(READ_TOOLS) + "."),
    ],
)
def test_missing_extra_and_foreign_arguments_and_unknown_tools_are_one_sentence(world, monkeypatch, tool, args, sentence):
    _no_sql(world, monkeypatch)
    with pytest.raises(UnknownTool) as caught:
        world.read_tool(tool, args)
    assert str(caught.value) == sentence


def test_good_arguments_still_read_the_world(world):
    for tool in READ_TOOLS:
        (name,) = TOOL_ARGS[tool]
        result, seq = world.read_tool(tool, {name: GOOD[name]})
        assert seq == 0 and "error" not in (result if isinstance(result, dict) else {})
    assert world.read_tool("get_order", {"order_id": "L" * MAX_ARG_CHARS})[0] == {"error": f"No order {'L' * MAX_ARG_CHARS}"}
    assert world.read_tool("get_order", {"order_id": "LK-%' OR 1=1 --"})[0]["error"].startswith("No order")


_strings = st.one_of(
    st.text(max_size=20),
    st.text(st.characters(codec=None, categories=["Cs", "Cc"]), max_size=5),
    st.sampled_from(["", "LK-507862", "C-1001", "W7", "x" * (MAX_ARG_CHARS + 1), "\x00", "%", "?", "'"]),
)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.integers(min_value=10**20) | st.floats() | _strings,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_strings, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tool=st.sampled_from([*READ_TOOLS, "get_orders", "", "get_order\x00"]),
    args=st.one_of(
        st.dictionaries(st.sampled_from(["order_id", "customer_id", "rule_id"]) | _strings, _json, max_size=3),
        _json,
    ),
)
def test_any_json_as_a_tools_arguments_gives_a_result_or_unknown_tool(world: World, tool: str, args: Any) -> None:
    """Whatever JSON a model gives as arguments (the world only reads: one world serves every
    example), ``read_tool`` returns its result or raises UnknownTool, never a store error."""
    try:
        world.read_tool(tool, args)
    except UnknownTool as exc:
        str(exc).encode("utf-8")


def _recording(home: Home, first_args: Any, repeat: int = 4) -> Path:
    """Write the home's ``recordings/T-65273.json`` as ``resolver record`` does: T-65273's
    recording ``agent/chat-small#1`` as repeat ``repeat``, its first turn's arguments
    ``first_args``."""
    shipped = json.loads((Path(__file__).parents[2] / "data" / "recordings" / "T-65273.json").read_text())
    run = next(r for r in shipped["runs"] if (r["variant"], r["model"], r["repeat"]) == ("agent", "chat-small", 1))
    turns = [dict(t) for t in run["turns"]]
    turns[0]["args"] = first_args
    folder = home.root / "recordings"
    folder.mkdir(exist_ok=True)
    path = folder / "T-65273.json"
    body = {"task_id": "T-65273", "runs": [{"variant": "agent", "model": "chat-small", "repeat": repeat, "turns": turns}]}
    path.write_text(json.dumps(body, indent=2))
    return path


def test_a_home_recording_calling_get_order_with_a_list_replays_to_an_error_result(home):
    _recording(home, {"order_id": ["LK-507862"]})
    state = home.run("T-65273", "agent", "chat-small", repeat=4)
    assert state.status == "waiting_approval" and state.step == 3
    first = home.store.load(state.run_id).evidence[0]
    assert (first.tool, first.args) == ("get_order", {"order_id": ["LK-507862"]})
    assert first.result == {"error": "get_order takes order_id as text, not a list."}
    assert next(m.content for m in state.messages if m.role == "tool") == json.dumps(first.result)
    assert state.proposal is not None and state.proposal.actions[0].payment_id == "PAY-507862-2"


@pytest.mark.parametrize(
    ("first_args", "said"), [({"order_id": 507862}, "a number"), ({"order_id": None}, "null"), ({"order_id": 1.5}, "a number")]
)
def test_a_home_recording_with_an_id_of_another_kind_goes_on_too(home, first_args, said):
    """An integer for the ID failed in PostgreSQL (text = integer); on SQLite it was looked up
    as the text ``507862``."""
    _recording(home, first_args)
    state = home.run("T-65273", "agent", "chat-small", repeat=4)
    assert state.status == "waiting_approval"
    assert state.evidence[0].result == {"error": f"get_order takes order_id as text, not {said}."}


@pytest.mark.usefixtures("not_memory_cli")
def test_the_command_line_replays_it_with_one_outcome_and_no_store_error(home, team_url, capsys):
    _recording(home, {"order_id": ["LK-507862"]})
    store = ["--store", team_url] if team_url else []
    code = main(["run", "T-65273", "--model", "chat-small", "--repeat", "4", "--home", str(home.root), *store])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "resolve (rule W7) | 3 model call(s), 2 tool call(s)" in out
    code = main(["show", "T-65273-agent-chat-small-1", "--home", str(home.root), *store])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert 'step 1: get_order {"order_id": ["LK-507862"]}' in out
    assert '"error": "get_order takes order_id as text, not a list."' in out


@pytest.mark.parametrize(
    ("first_args", "said"),
    [
        ({"order_id": "\ud800"}, "the arguments of 'get_order' hold a lone surrogate (text that is not Unicode)"),
        ({"order_id": float("nan")}, "the arguments of 'get_order' hold a number that is not finite"),
        ({"order_id": json.loads("[" * 40 + "]" * 40)}, "the arguments of 'get_order' hold nesting deeper than 32 levels"),
    ],
)
def test_a_recording_holding_what_a_run_cannot_keep_is_refused_before_the_run_is_saved(home, first_args, said):
    """A lone surrogate or a NaN cannot be written as the call's evidence (the checkpoint's JSON
    is UTF-8; NaN is not JSON), nor 32 levels of lists: every replay would meet it at the same
    step, so the recording is refused, one sentence, and no run is made."""
    _recording(home, first_args)
    with pytest.raises(DataError) as caught:
        home.run("T-65273", "agent", "chat-small", repeat=4)
    assert str(caught.value) == f"The recording agent/chat-small#4 of T-65273 cannot be replayed: in turn 1, {said}."
    assert home.store.run_ids("T-65273") == []


def test_odd_json_a_run_may_keep_is_saved_and_read_back_whole(home):
    """What the checks let through is kept exactly, on each back-end: a huge integer, 31 levels
    of lists, non-ASCII and control text, as the arguments of a tool that does not exist (its
    evidence is the world's sentence)."""
    odd = {
        "n": 10**400,
        "deep": json.loads("[" * 31 + "]" * 31),
        "text": "é\u202e\x1b[31m\t" + "x" * 1000,
        "neg": -(2**70),
        "f": 1.5e308,
    }
    _recording(home, odd)
    recordings = home.root / "recordings" / "T-65273.json"
    body = json.loads(recordings.read_text())
    body["runs"][0]["turns"][0]["tool"] = "lookup"
    recordings.write_text(json.dumps(body))
    state = home.run("T-65273", "agent", "chat-small", repeat=4)
    assert state.status == "waiting_approval"
    first = home.store.load(state.run_id).evidence[0]
    assert (first.tool, first.args) == ("lookup", odd)
    assert first.result == {"error": "No tool 'lookup'; the tools are " + ", ".join(READ_TOOLS) + "."}


@pytest.mark.parametrize(
    "text", ['{"task_id": "T-65273", "runs": ' + "[" * 100_000, '{"task_id": "T-65273", "runs": ' + "1" * 5000 + "}"]
)
def test_a_recording_file_python_cannot_parse_is_one_sentence_not_an_unexpected_error(home, text):
    """Nesting past the parser's recursion limit and an integer of over 4,300 digits raised
    RecursionError and ValueError through ``resolver run`` (an unexpected error)."""
    folder = home.root / "recordings"
    folder.mkdir(exist_ok=True)
    (folder / "T-65273.json").write_text(text)
    with pytest.raises(DataError) as caught:
        home.run("T-65273", "agent", "chat-small", repeat=4)
    assert str(caught.value) == f"{folder / 'T-65273.json'} cannot be read as JSON here (a number too long, or nesting too deep)."
