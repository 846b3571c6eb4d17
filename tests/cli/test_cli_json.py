"""``--json`` on every command that prints a result: the output parses, and its keys are the
ones the "JSON output" table of docs/command-line.md documents. The test loops over the parser's commands, so a
new command without an example here fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from core.cli import build_parser, main
from core.engine import signing

from helpers import T65273_RUN, documented_keys

ROOT = Path(__file__).resolve().parent.parent.parent
NOT_A_RESULT = {"tui", "completion"}
"""Commands that print no result: ``tui`` replaces the process with the app, ``completion`` prints a shell's script."""

ON_A_SERVER = {"store roles"}
"""Commands that need a team store and a database administrator (``store roles setup``): their
``--json`` output is checked against the page's table in ``tests/stores/test_pg_roles.py``."""

NOT_SEEN: dict[str, set[str]] = {}
"""Documented keys the examples here do not reach (none yet)."""

PRACTICE: tuple[tuple[str, ...], ...] = (
    ("init",),
    ("doctor",),
    ("clock", "set", "2026-10-09T17:00:00-04:00"),
    ("clock", "show"),
    ("class", "friday"),
    ("run", "T-90103", "--repeat", "2"),
    ("record", "T-65273", "--model", "stub"),  # on the stub server the test starts
    ("ticket", "add", "{tmp}/ticket.json"),
    ("ticket", "list"),
    ("runs",),
    ("runs", "--mine", "--as", "team_lead", "--sort", "amount"),
    ("show",),
    ("show", T65273_RUN),
    ("claim", T65273_RUN, "--as", "team_lead", "--name", "Tomás"),
    ("handover", T65273_RUN, "--as", "team_lead", "--name", "Tomás", "--to", "Ana", "--note", "check the capture"),
    ("snooze", T65273_RUN, "--as", "team_lead", "--name", "Ana", "--until", "1h"),
    ("runs",),  # a marked waiting run's row has `marks`
    ("watch", "--once", "--as", "grace"),  # the first start: from now on, an empty list
    ("reject", "T-90103-agent-chat-small-1", "--as", "grace", "--name", "Grace", "--reason", "a handed_to_person event"),
    ("watch", "--once", "--as", "grace"),
    ("show", T65273_RUN),
    ("trace", T65273_RUN),
    ("resume", T65273_RUN),
    ("refresh", "T-90103-agent-chat-small-2"),
    ("diff", "T-90103-agent-chat-small-1", "T-90103-agent-chat-small-2"),
    ("reject", "T-90103-agent-chat-small-2", "--as", "grace", "--name", "Grace", "--reason", "the second run dropped the label"),
    ("clock", "advance", "1d"),
    ("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2"),
    ("approve", T65273_RUN, "--as", "grace", "--name", "Grace"),
    ("changes",),
    ("audit",),
    ("audit", "--name", "Grace"),
    ("audit", "verify"),
    ("exercise", "resume-twice"),
    ("prune", "--older-than", "90d"),
    ("backup", "{tmp}/home.tar.gz"),
    ("restore", "{tmp}/home.tar.gz"),
    ("store", "check"),
    ("store", "migrate"),
    ("store", "copy", "--from", "sqlite://{tmp}/practice", "--to", "sqlite://{tmp}/copied"),
    ("reset", "--run", "T-90103-agent-chat-small-1"),
    ("reset", "--all"),
    ("clock", "real"),
)
"""Every command of a practice home with ``--json``, in an order that gives each a run to act on."""

SHOP: tuple[tuple[str, ...], ...] = (
    ("init", "--shop"),
    ("approvers", "init"),
    ("approvers", "add", "Tomás", "--role", "team_lead"),
    ("approvers", "key", "--name", "Priya"),
    ("approvers", "list"),
    ("approvers", "revoke", "Tomás"),
    ("approvers", "recover"),
    ("runs", "--mine", "--name", "Grace"),
)


def _commands() -> dict[str, set[str]]:
    """Every command of the parser, with its subcommands (``clock show`` ...)."""
    import click

    parser = build_parser()
    found: dict[str, set[str]] = {}
    for name, cmd in parser.commands.items():
        found[name] = set(cmd.commands) if isinstance(cmd, click.Group) else set()
    return found


def _keys(value: object) -> set[str]:
    if isinstance(value, list):
        return set().union(*(set(v) for v in value if isinstance(v, dict))) if value else set()
    assert isinstance(value, dict)
    return set(value)


def _play(argvs, home: Path, tmp: Path, capsys, monkeypatch) -> dict[str, list[object]]:
    seen: dict[str, list[object]] = {}
    for argv in argvs:
        argv = tuple(a.format(tmp=tmp) for a in argv)
        code = main([*argv, "--json", "--home", str(home)])
        out, err = capsys.readouterr()
        assert code in (0, 5), f"{argv}: exit {code}\n{err}"
        key = " ".join(argv[:2]) if argv[0] in ("clock", "approvers", "store", "ticket") else argv[0]
        seen.setdefault(key, []).append(json.loads(out))
        if key == "approvers init":  # the one-time code `approvers recover` asks for
            monkeypatch.setenv("RESOLVER_RECOVERY_CODE", seen[key][0]["recovery_code"])  # type: ignore[index]
    return seen


def test_every_command_that_prints_a_result_takes_json_and_its_keys_are_documented(tmp_path, capsys, monkeypatch, stub):
    monkeypatch.setenv(signing.PASSPHRASE_ENV, "correct horse battery staple")
    monkeypatch.setenv(signing.OWNER_PASSPHRASE_ENV, "correct horse battery staple")
    from core.models.chat_stub import ChatStub

    with ChatStub() as stub:
        config = tmp_path / "config.toml"
        config.write_text(
            f'[models.stub]\nbase_url = "{stub.url}"\nmodel = "m"\napi_key_env = "STUB_KEY"\nprice = "chat-small"\n'
        )
        monkeypatch.setenv("RESOLVER_CONFIG", str(config))
        monkeypatch.setenv("STUB_KEY", "any")
        ticket = json.loads((ROOT / "data" / "tickets" / "T-65273.json").read_text())
        (tmp_path / "ticket.json").write_text(json.dumps({**ticket, "task_id": "T-70001"}))
        seen = _play(PRACTICE, tmp_path / "practice", tmp_path, capsys, monkeypatch)
    for key, outputs in _play(SHOP, tmp_path / "shop", tmp_path, capsys, monkeypatch).items():
        seen.setdefault(key, []).extend(outputs)
    expected = set()
    for name, subs in _commands().items():
        if name in NOT_A_RESULT:
            continue
        expected |= {f"{name} {s}" for s in subs} if subs else {name}
    expected -= ON_A_SERVER
    assert expected == set(seen), f"commands without a --json example: {expected - set(seen)}"
    documented = documented_keys()
    for key, outputs in seen.items():
        doc = documented.get(key)
        assert doc is not None, f"`{key}` is not in the JSON output table of docs/command-line.md"
        for value in outputs:
            assert _keys(value) <= doc, f"{key}: keys {_keys(value) - doc} are not documented"
        shown = set().union(*(_keys(v) for v in outputs))
        unseen = doc - shown - NOT_SEEN.get(key, set())
        assert not unseen, f"{key}: docs/command-line.md documents keys {unseen} the command never printed here"


@pytest.mark.parametrize("command", sorted(set(_commands()) - NOT_A_RESULT))
def test_the_parser_takes_json_on(command):
    assert any("--json" in p.opts for p in build_parser().commands[command].params)


def test_every_row_of_runs_json_has_marks_an_empty_list_when_none_stands(tmp_path, capsys):
    """A new user's trial: ``runs --json`` left ``marks`` out of the rows of runs without any, so a
    script reading ``row["marks"]`` failed on them; every row has the same keys."""
    home = ["--home", str(tmp_path / "home")]
    for argv in (("run", "T-65273"), ("run", "T-90103"), ("claim", T65273_RUN, "--as", "team_lead", "--name", "Tomás")):
        assert main([*argv, *home]) == 0
    capsys.readouterr()
    assert main(["runs", "--json", *home]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 2 and len({frozenset(r) for r in rows}) == 1 and "marks" in rows[0]
    marks = {r["run_id"]: r["marks"] for r in rows}
    assert marks["T-90103-agent-chat-small-1"] == [] and marks[T65273_RUN][0].startswith("Tomás is on it (claimed ")
