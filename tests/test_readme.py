"""The README and the documentation stay true.

Every block of commands or Python marked ``<!-- runs -->`` on the line above it runs as printed:
in the README, in every page of ``docs/``, in ``SECURITY.md``, ``CONTRIBUTING.md`` and
``benchmarks/README.md``. The blocks of one file run in order, in one new home, each command in
a new process; a command's exit code is 0 unless its line ends with ``# exit N``. CI runs the
README's test command, the README stays one screen with the queue's picture near its top, and
every page of ``docs/`` is in the site's nav.
"""

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
DOCS = ROOT / "docs"
PAGES = (
    ROOT / "README.md",
    *sorted(DOCS.glob("*.md")),
    ROOT / "SECURITY.md",
    ROOT / "CONTRIBUTING.md",
    ROOT / "benchmarks" / "README.md",
)
"""Every file whose marked blocks run: the README, the site's pages and the pages it includes."""

MARK = re.compile(r"^<!-- runs(?::[^>]*)? -->\n(?:```(\w*)\n(.*?)^```)?", re.M | re.S)
EXIT = re.compile(r"\s*exit (\d+)\b")
"""A comment that sets a command's exit code: ``# exit 5: handed to a person``."""

FACTS: dict[str, dict[str, tuple[str, ...]]] = {
    "README.md": {
        "resolver manual-refund manual-1 LK-507862 119.00 RFD-DOUBLE PAY-507862-2": ("RF-4CFEAE8E",),
        "resolver approve T-65273-agent-chat-small-1 --as grace --name Grace": ("Status: handed_to_person",),
    },
    "docs/index.md": {
        "resolver manual-refund manual-1 LK-507862 119.00 RFD-DOUBLE PAY-507862-2": ("RF-4CFEAE8E",),
        "resolver approve T-65273-agent-chat-small-1 --as grace --name Grace": ("Status: handed_to_person",),
        "resolver resume T-90104-agent_structured-chat-strong-1": ("Nothing to resume: the run is done.",),
    },
    "docs/lesson.md": {"python -m resolver run T-65273": ("Next: python -m resolver",)},
}
"""(file, command line) -> what its output must hold; a line run twice is checked on its last run."""


def _page(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def runnable_blocks(text: str) -> list[tuple[str, str]]:
    """The marked blocks of ``text`` as ``(language, body)``, in order. Raises AssertionError for
    a mark that stands above no ``sh`` or ``python`` block."""
    blocks = []
    for found in MARK.finditer(text):
        language, body = found.group(1), found.group(2)
        assert language in ("sh", "python"), f"a <!-- runs --> mark stands above no sh or python block: {found.group(0)[:80]!r}"
        blocks.append((language, body))
    return blocks


def _argv(line: str) -> list[str]:
    """The process that runs a command of a block: ``resolver ...`` and ``python -m resolver ...``
    with this interpreter."""
    words = shlex.split(line, comments=True)
    if words[0] == "resolver":
        return [sys.executable, "-m", "core", *words[1:]]
    if words[:3] == ["python", "-m", "resolver"]:
        return [sys.executable, "-m", "resolver", *words[3:]]
    raise AssertionError(f"a marked block holds a line this test cannot run: {line}")


def play(text: str, home: Path) -> dict[str, str]:
    """Run every marked block of ``text`` in order in the home folder ``home``; return each command
    line (without its comment) -> its last output (stdout and stderr)."""
    env = {**os.environ, "RESOLVER_HOME": str(home)}
    for name in ("RESOLVER_KILL_AT", "RESOLVER_STORE"):
        env.pop(name, None)
    outputs: dict[str, str] = {}
    for language, body in runnable_blocks(text):
        if language == "python":
            done = subprocess.run(
                [sys.executable, "-c", body], capture_output=True, text=True, env=env, cwd=home.parent, timeout=60
            )
            assert done.returncode == 0, f"{body}\n{done.stdout}\n{done.stderr}"
            continue
        for line in body.strip().splitlines():
            if not line.strip() or line.startswith(". .venv/bin/activate"):
                continue
            said = EXIT.match(line.partition("#")[2])
            expected = int(said.group(1)) if said else 0
            done = subprocess.run(_argv(line), capture_output=True, text=True, env=env, cwd=home.parent, timeout=60)
            assert done.returncode == expected, f"{line}\n{done.stdout}\n{done.stderr}"
            outputs[" ".join(shlex.split(line, comments=True))] = done.stdout + done.stderr
    return outputs


def _with_blocks() -> list[Path]:
    return [p for p in PAGES if runnable_blocks(p.read_text(encoding="utf-8"))]


@pytest.mark.slow
@pytest.mark.parametrize("path", _with_blocks(), ids=_page)
def test_the_marked_blocks_run_as_printed(path, tmp_path):
    text = path.read_text(encoding="utf-8")
    outputs = play(text, tmp_path / "work")
    for line, facts in FACTS.get(_page(path), {}).items():
        assert line in outputs, f"{_page(path)} no longer runs {line}"
        for fact in facts:
            assert fact in outputs[line], f"{line}: {fact!r} not in\n{outputs[line]}"
    run = outputs.get("resolver run T-65273")
    if run is not None and "`run` prints `" in text:  # the page quotes the outcome line as printed
        assert f"`run` prints `{run.splitlines()[0]}`" in " ".join(text.split()), "a trial: 'Outcome: ' was missing"


def test_the_stories_are_marked_to_run():
    """The README's story, the getting-started page's and the lesson's are played; a mark lost
    from one of them would leave it unchecked."""
    played = {_page(p) for p in _with_blocks()}
    assert {"README.md", "docs/index.md", "docs/lesson.md"} <= played
    assert len(runnable_blocks(README)) == 2


def test_a_mark_above_no_block_is_refused():
    with pytest.raises(AssertionError, match="stands above no sh or python block"):
        runnable_blocks("<!-- runs -->\n```toml\nname = 1\n```\n")
    assert runnable_blocks("<!-- runs -->\n```sh\nresolver runs\n```\n") == [("sh", "resolver runs\n")]


def test_an_exit_comment_sets_the_expected_code(tmp_path):
    outputs = play("<!-- runs -->\n```sh\nresolver show NO-SUCH-RUN   # exit 1: no home yet\n```\n", tmp_path / "work")
    assert "No home folder at" in outputs["resolver show NO-SUCH-RUN"]
    with pytest.raises(AssertionError):
        play("<!-- runs -->\n```sh\nresolver show NO-SUCH-RUN\n```\n", tmp_path / "work")


def _set_up_blocks() -> list[str]:
    body = README.split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)```", body, re.S)


def test_ci_runs_exactly_the_readme_test_command():
    setup = _set_up_blocks()
    assert len(setup) == 2
    test_command = setup[1].strip()
    assert "pytest" in test_command and "mkdocs build --strict" in test_command
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    contributing = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert re.findall(r"```sh\n(.*?)```", contributing, re.S)[0].strip() == test_command


def test_the_readme_is_one_screen_with_the_queue_near_its_top():
    lines = README.splitlines()
    assert len(lines) < 250, f"the README has {len(lines)} lines: move the detail into docs/"
    first = next(i for i, line in enumerate(lines) if "![" in line)
    assert first < 15 and "screenshots/queue.svg" in lines[first]
    before = " ".join(lines[:first]).lower()
    for word in ("digest", "lease", "register", "hmac", "binds", "schema"):
        assert word not in before, f"{word!r} comes before the README's first picture"


def test_the_readme_cites_no_test_file_and_no_numbered_issue():
    assert "tests/" not in README
    assert not re.search(r"\bissue\s*#?\d", README, re.I)


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    assert isinstance(nav, list)
    return [p for item in nav for p in _nav_pages(item)]


def test_every_docs_page_is_in_the_nav():
    import yaml

    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = _nav_pages(config["nav"])
    assert len(listed) == len(set(listed)), "a page is listed twice in mkdocs.yml's nav"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "screenshots" not in p.parts}
    assert set(listed) == on_disk, f"not in the nav: {on_disk - set(listed)}; in the nav, not on disk: {set(listed) - on_disk}"


def test_the_site_includes_the_pages_that_live_outside_docs():
    for page, source in (
        ("security.md", "SECURITY.md"),
        ("contributing.md", "CONTRIBUTING.md"),
        ("benchmarks.md", "benchmarks/README.md"),
    ):
        assert f'--8<-- "{source}"' in (DOCS / page).read_text(encoding="utf-8")


def _command_tables() -> str:
    """The command tables of docs/command-line.md: "Every command" down to "Exit codes"."""
    text = (DOCS / "command-line.md").read_text(encoding="utf-8")
    return text.split("## Every command", 1)[1].split("## Exit codes", 1)[0]


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
    parser, and each of its options, is in the command tables of docs/command-line.md (the shop
    home's passphrase options in docs/shop-homes.md)."""
    from core.cli import build_parser

    tables = _command_tables()
    shop = (DOCS / "shop-homes.md").read_text(encoding="utf-8")
    missing = []
    for command, options in _options(build_parser()).items():
        top = command.split()[0]
        if f"`resolver {top}" not in tables and f"/ `{top}" not in tables:
            missing.append(command)
        missing += [f"{command} {o}" for o in sorted(options) if o not in tables and o not in shop]
    assert not missing, f"commands and options the command tables do not name: {missing}"
    assert "newest change first" in tables and "`--status waiting_approval` oldest first" in tables


def test_what_the_docs_say_about_reject_is_what_the_command_does(cli):
    """The README said "Any approver may reject a waiting proposal"; a reject needs the role the
    proposal needs, as an approval does (core.engine.rulebook). The sentence and the command agree."""
    flat = " ".join((DOCS / "shop-homes.md").read_text(encoding="utf-8").split())
    assert "Any approver may reject" not in flat
    assert "A reject needs the same role as an approval of that proposal" in flat
    assert cli("run", "T-65273")[0] == 0
    code, _, err = cli("reject", "T-65273-agent-chat-small-1", "--as", "agent", "--reason", "no")
    assert code == 4 and "needs team lead or above" in err
    assert cli("reject", "T-65273-agent-chat-small-1", "--as", "team_lead", "--reason", "no")[0] == 0


def test_a_pipe_in_a_tables_code_span_shows_without_its_backslash_on_the_site():
    """GitHub needs ``\\|`` inside a table's code span; the site printed the backslash
    (``--sort age\\|updated``) until the hook of tools/mkdocs_hooks.py took it off."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "tools" / "mkdocs_hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    page = "| `runs [--sort age\\|updated]` | a \\| b |\nText `x\\|y` outside a table.\n"
    assert hooks.unescape_table_pipes(page) == "| `runs [--sort age|updated]` | a \\| b |\nText `x\\|y` outside a table.\n"
