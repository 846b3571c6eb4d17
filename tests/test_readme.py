"""The README stays true: its story runs as written, and CI runs its test command."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks(section: str) -> list[str]:
    body = README.split(f"## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    setup = _blocks("Set-up")
    assert len(setup) == 2
    test_command = setup[1].strip()
    assert "pytest" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()


@pytest.mark.slow
def test_the_friday_to_monday_story_runs_as_written(tmp_path):
    env = {**os.environ, "RESOLVER_HOME": str(tmp_path / "work")}
    env.pop("RESOLVER_KILL_AT", None)
    outputs = []
    for block in _blocks("Friday to Monday, on the command line"):
        for line in block.strip().splitlines():
            if line.startswith(". .venv/bin/activate"):
                continue
            argv = shlex.split(line)
            assert argv[0] == "resolver", line
            result = subprocess.run(
                [sys.executable, "-m", "core", *argv[1:]], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=60
            )
            handed = line == "resolver approve T-65273-agent-chat-small-1 --as grace --name Grace"
            expected = 3 if "--interrupt" in argv else 5 if handed else 0  # the README's exit codes
            assert result.returncode == expected, f"{line}\n{result.stdout}\n{result.stderr}"
            outputs.append((line, result.stdout))
    text = dict(outputs)
    said = re.sub(r"\s+", " ", README)  # the README's lines wrap where its quotes do not
    assert f"`run` prints `{text['resolver run T-65273'].splitlines()[0]}`" in said  # a trial: "Outcome: " was missing
    assert "Status: handed_to_person" in text["resolver approve T-65273-agent-chat-small-1 --as grace --name Grace"]
    assert "RF-4CFEAE8E" in text["resolver manual-refund manual-1 LK-507862 119.00 RFD-DOUBLE PAY-507862-2"]
    resumes = [out for line, out in outputs if line == "resolver resume T-90104-agent_structured-chat-strong-1"]
    assert resumes[-1].strip() == "Nothing to resume: the run is done."


def _command_tables() -> str:
    """The README's command tables: "Every command" down to "Exit codes"."""
    return README.split("### Every command", 1)[1].split("### Exit codes", 1)[0]


def _options(parser) -> dict[str, set[str]]:
    """Each command of ``parser`` (``approvers add`` for nested ones) and its options, without
    the ones every command takes (``--home``, ``--store``, ``--json``, ``-h``) and hidden ones."""
    import click

    found: dict[str, set[str]] = {}

    def walk(prefix: str, cmd: click.Command) -> None:
        if isinstance(cmd, click.Group):
            for name, child in cmd.commands.items():
                walk(f"{prefix} {name}".strip(), child)
        if prefix:
            found[prefix] = {
                o
                for p in cmd.params
                if isinstance(p, click.Option) and not p.hidden
                for o in p.opts
                if o not in ("-h", "--help", "--home", "--store", "--json")
            }

    walk("", parser)
    return found


def test_the_command_tables_name_every_command_and_option():
    """A new user's finding: `reset --run` worked but no table named it. Every command of the
    parser, and each of its options, is in the README's command tables (the shop home's
    passphrase options in "Approvers in a shop home")."""
    from core.cli import build_parser

    tables = _command_tables()
    shop = README.split("## Approvers in a shop home", 1)[1].split("\n## ", 1)[0]
    missing = []
    for command, options in _options(build_parser()).items():
        top = command.split()[0]
        if f"`resolver {top}" not in tables and f"/ `{top}" not in tables:
            missing.append(command)
        missing += [f"{command} {o}" for o in sorted(options) if o not in tables and o not in shop]
    assert not missing, f"commands and options the README's tables do not name: {missing}"
    assert "newest change first" in tables and "`--status waiting_approval` oldest first" in tables


def test_what_the_readme_says_about_reject_is_what_the_command_does(cli):
    """The README said "Any approver may reject a waiting proposal"; a reject needs the role the
    proposal needs, as an approval does (core.engine.rulebook). The sentence and the command agree."""
    flat = " ".join(README.split())
    assert "Any approver may reject" not in flat
    assert "A reject needs the same role as an approval of that proposal" in flat
    assert cli("run", "T-65273")[0] == 0
    code, _, err = cli("reject", "T-65273-agent-chat-small-1", "--as", "agent", "--reason", "no")
    assert code == 4 and "needs team lead or above" in err
    assert cli("reject", "T-65273-agent-chat-small-1", "--as", "team_lead", "--reason", "no")[0] == 0
