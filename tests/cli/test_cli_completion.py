"""The command line's help, completion and reference: ``resolver --help`` lists every command
under its readers' heading, every command's help has an example, bash completes the commands
(click's own completion, ``_RESOLVER_COMPLETE``), ``resolver completion SHELL`` prints the
script, and ``docs/cli.md`` is what ``tools/cli_reference.py`` writes from the commands now."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from core.api.home import Home
from core.cli import build_parser, main
from core.trainer.demo import build_demo

ROOT = Path(__file__).resolve().parent.parent.parent
RESOLVER = Path(sys.executable).parent / "resolver"
HEADINGS = ("For approvers:", "For the team's owner:", "For trainers:", "For operators:")


def _every_command() -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = []

    def walk(path: str, cmd: click.Command) -> None:
        if path:
            found.append((path, cmd))
        if isinstance(cmd, click.Group):
            for name, child in cmd.commands.items():
                walk(f"{path} {name}".strip(), child)

    walk("", build_parser())
    return found


def test_help_lists_every_command_under_its_heading(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and out.startswith("usage: resolver")
    where = [out.index(h) for h in HEADINGS]
    assert where == sorted(where), "the headings in their order"
    from core.cli.tree import ORDER

    assert list(build_parser().commands) == list(ORDER), "every command, each once, in the help's order"
    listed = " ".join(out.split())
    for name, cmd in build_parser().commands.items():
        assert f" {name} {' '.join(cmd.get_short_help_str(200).split())}" in listed, name


def test_every_command_argument_and_option_has_help_and_every_command_an_example():
    for path, cmd in _every_command():
        assert cmd.help and cmd.help.strip(), path
        if not isinstance(cmd, click.Group) or path == "":
            assert getattr(cmd, "example", None) is not None, f"{path} has no example"
        for param in cmd.params:
            assert getattr(param, "help", None), f"{path}: {param.name} has no help"


def test_approve_help_shows_its_argument_and_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["approve", "--help"])
    out = capsys.readouterr().out
    assert "RUN" in out and "the waiting run's ID" in out
    assert "Example: resolver approve T-65273-agent-chat-small-1 --as grace" in out


def test_the_approve_example_runs_as_printed_in_the_demo_queue(tmp_path, capsys):
    """A newcomer copies the example of ``approve --help`` into the demo home the README opens:
    it must approve, not refuse (an example naming a shop approver, ``--name Grace``, was refused
    in the practice home with "Say who decides")."""
    with pytest.raises(SystemExit):
        main(["approve", "--help"])
    example = capsys.readouterr().out.split("Example: resolver ", 1)[1].splitlines()[0].split()
    build_demo(Home(tmp_path / "home"))  # as the app's first screen loads it: now, on the real clock
    code = main(["--home", str(tmp_path / "home"), *example])
    out = capsys.readouterr().out
    assert code == 0 and "Status: done" in out, out


def test_a_usage_error_says_usage_and_error_on_stderr(capsys):
    with pytest.raises(SystemExit) as bad:
        main(["runs", "--sort", "price"])
    out, err = capsys.readouterr()
    assert bad.value.code == 2 and out == ""
    assert err.startswith("usage: resolver runs") and "resolver runs: error: " in err and "price" in err


def _complete(words: str, cword: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword), "_RESOLVER_COMPLETE": "bash_complete"}
    return subprocess.run([str(RESOLVER)], capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.skipif(not RESOLVER.exists(), reason="the resolver command is not installed beside this Python")
def test_bash_completion_offers_the_commands_and_the_choices():
    done = _complete("resolver app", 1)
    assert done.returncode == 0, done.stderr
    offered = [line.split(",", 1)[1] for line in done.stdout.splitlines()]
    assert "approve" in offered and "approvers" in offered and "runs" not in offered
    done = _complete("resolver runs --sort a", 3)
    assert {line.split(",", 1)[1] for line in done.stdout.splitlines()} == {"age", "amount"}


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_clicks_script(shell, capsys):
    assert main(["completion", shell]) == 0
    script = capsys.readouterr().out
    assert "_RESOLVER_COMPLETE" in script and f"{shell}_complete" in script


@pytest.mark.skipif(shutil.which("bash") is None or not RESOLVER.exists(), reason="needs bash and the installed command")
def test_bash_registers_the_completion():
    env = {**os.environ, "PATH": f"{RESOLVER.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-c", 'eval "$(resolver completion bash)"; complete -p resolver'],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "resolver" in done.stdout and "_resolver_completion" in done.stdout


def test_the_reference_page_is_what_the_commands_say_now():
    spec = importlib.util.spec_from_file_location("resolver_cli_reference", ROOT / "tools" / "cli_reference.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert page == tool.reference(), "docs/cli.md is out of date: run python tools/cli_reference.py"


def test_a_long_option_is_taken_by_a_unique_beginning_as_argparse_took_it(tmp_path, capsys):
    """``--stat`` is ``--status`` and ``--ho`` is ``--home``, as the command line always took
    them; a beginning that names two options is refused (exit 2), and a value is never read
    as an option."""
    home = str(tmp_path / "home")
    assert main(["run", "T-65273", "--ho", home]) == 0
    capsys.readouterr()
    assert main(["runs", "--stat", "waiting_approval", "--home", home]) == 0
    assert capsys.readouterr().out.startswith("T-65273-agent-chat-small-1")
    assert main(["runs", "--search=--stat", "--home", home]) == 0
    assert capsys.readouterr().out.startswith("No runs match '--stat'")
    with pytest.raises(SystemExit) as bad:
        main(["runs", "--s", "x", "--home", home])
    assert bad.value.code == 2


def _help_at(columns: int, *command: str, flag: str = "--help") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": str(ROOT)}
    return subprocess.run([*command, flag], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


CLICK_DRAWS = (sys.executable, "-c", "from core.cli import entry; entry()")
"""The command line with click drawing every help (no written text)."""


@pytest.mark.parametrize("columns", [80, 100, 132, 90, 60])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_the_written_help_is_what_click_prints_at_every_width(columns, flag):
    """``resolver --help`` is printed from ``core/cli/help-WIDTH.txt`` at 78 and 98 columns
    (terminals of 80 and of 100 or more) and by click at any other: the user sees the same text
    either way, and the written files are what click draws from the commands now."""
    fast = _help_at(columns, str(RESOLVER), flag=flag)
    drawn = _help_at(columns, *CLICK_DRAWS, flag=flag)
    assert fast.returncode == drawn.returncode == 0, fast.stderr + drawn.stderr
    assert fast.stdout == drawn.stdout
    assert fast.stderr == drawn.stderr == ""
    width = max(min(columns, 100) - 2, 50)
    written = ROOT / "core" / "cli" / f"help-{width}.txt"
    if width in (78, 98):
        assert written.read_text(encoding="utf-8") == drawn.stdout, "run python tools/cli_reference.py"
    assert HEADINGS[0] in fast.stdout and "approve" in fast.stdout


def test_the_written_help_loads_neither_click_nor_the_command_modules():
    """The point of the written help: ``resolver --help`` on a terminal of 80 columns imports
    no click and no command module; any other command line does."""
    probe = (
        "import sys, core.__main__ as m\n"
        "sys.argv = ['resolver', '--help']\n"
        "try:\n    m.entry()\nexcept SystemExit as e:\n    code = e.code\n"
        "print('LOADED', code, 'click' in sys.modules, 'core.cli' in sys.modules)\n"
    )
    done = _help_at(80, sys.executable, "-c", probe, flag="--")
    assert done.returncode == 0, done.stderr
    assert done.stdout.rstrip().endswith("LOADED 0 False False")
    other = _help_at(80, str(RESOLVER), "runs", flag="--help")
    assert other.returncode == 0 and other.stdout.startswith("usage: resolver runs")


def test_the_written_help_ends_quietly_on_a_closed_pipe():
    """``resolver --help | head -1``: the first line, no traceback, exit 0."""
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run(
        f"'{RESOLVER}' --help | head -1", shell=True, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0
    assert done.stdout == "usage: resolver [OPTIONS] COMMAND [ARGS]...\n"
    assert "Traceback" not in done.stderr
