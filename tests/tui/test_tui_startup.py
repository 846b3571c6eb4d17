"""Starting the app on bad input: one sentence on stderr and an exit code, never a traceback
(a new user's report: a damaged ``clock.json``, an argument that is not UTF-8, ``--demo`` in a
shop home), and a clock damaged while the app runs is a message, not a crash."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from core.api.home import Home
from core.api.homekind import init_home
from tui_helpers import make_app, screen_text, settle


def _start(home: Path, *args: str | bytes, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    """``python -m resolver_tui --home HOME ARGS`` with no approver config and no terminal."""
    env = {**os.environ, "RESOLVER_CONFIG": str(tmp_path / "no-config.toml"), "RESOLVER_HOME": ""}
    env.pop("RESOLVER_HOME")
    return subprocess.run(
        [sys.executable, "-m", "resolver_tui", "--home", str(home), *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )


def _practice_home(tmp_path: Path) -> Path:
    """A practice home with no runs yet (its folder exists, as after the lesson's set-up)."""
    root = tmp_path / "home"
    root.mkdir()
    init_home(root)
    return root


def _one_sentence(err: bytes) -> str:
    text = err.decode("utf-8", "replace").strip()
    assert "Traceback" not in text and "locals" not in text, text
    assert len(text.splitlines()) == 1, text
    return text


@pytest.mark.parametrize("damage", ["folder", "garbage"])
def test_a_damaged_clock_is_one_sentence_and_exit_1(tmp_path, damage):
    root = _practice_home(tmp_path)
    clock = root / "clock.json"
    if damage == "folder":
        clock.mkdir()
    else:
        clock.write_text("{garbage", encoding="utf-8")
    done = _start(root, "--as", "team_lead", "--name", "Tomás", tmp_path=tmp_path)
    assert done.returncode == 1
    said = _one_sentence(done.stderr)
    assert "clock file" in said and "damaged" in said


def test_an_argument_that_is_not_utf8_is_refused_with_exit_2(tmp_path):
    root = _practice_home(tmp_path)
    done = _start(root, "--as", "team_lead", "--name", b"\xff", tmp_path=tmp_path)
    assert done.returncode == 2
    said = _one_sentence(done.stderr)
    assert "is not UTF-8" in said and "\\xff" in said


def test_demo_in_a_shop_home_is_refused(tmp_path):
    root = tmp_path / "shop"
    init_home(root, shop=True)
    (tmp_path / "me.toml").write_text('name = "Tomás"\nrole = "team_lead"\n', encoding="utf-8")
    env = {**os.environ, "RESOLVER_CONFIG": str(tmp_path / "me.toml")}
    done = subprocess.run(
        [sys.executable, "-m", "resolver_tui", "--home", str(root), "--demo"],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1
    said = _one_sentence(done.stderr)
    assert "shop home" in said and "--demo" in said
    assert not (root / "runs.sqlite").exists() or Home(root).queue.total() == 0


async def test_a_clock_damaged_while_the_app_runs_is_a_message(tmp_path):
    root = _practice_home(tmp_path)
    home = Home(root)  # the home's own clock: clock.json
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        (root / "clock.json").write_text("{garbage", encoding="utf-8")
        app.queue.on_resize()  # the top bar reads the clock again
        await pilot.press("R")
        await settle(pilot)
        assert app.is_running
        told = " ".join(n.message for n in app._notifications)
        assert "clock file" in told and "damaged" in told


async def test_demo_on_a_home_with_runs_says_it_opened_the_home_as_it_is(tmp_path):
    """A newcomer's trip: ``resolver-tui --demo`` on a home that already held runs opened it in
    silence, and its queue passed for the demo. It is opened as it is, and a notice says so."""
    from resolver_tui.app import ResolverApp

    home = Home(tmp_path / "home")
    home.run("T-65273")
    home.run("T-90103")
    app = ResolverApp(home, "team_lead", "Tomás", refresh_interval=None, demo=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        told = [n.message for n in app._notifications]
        assert told == [
            f"The home {home.root} already holds 2 runs; --demo loads the demo queue only into an empty home, "
            "so it was opened as it is."
        ]
        assert home.queue.total() == 2 and "loading the Larkfield demo queue" not in screen_text(app)
        await pilot.press("R")  # a refresh says nothing more and loads nothing
        await settle(pilot)
        assert len(app._notifications) <= 1 and home.queue.total() == 2


async def test_demo_on_an_empty_home_loads_the_demo_without_a_notice(tmp_path):
    from resolver_tui.app import ResolverApp

    home = Home(_practice_home(tmp_path))
    app = ResolverApp(home, "team_lead", "Tomás", refresh_interval=None, demo=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert home.queue.total() > 2
        assert not any("already holds" in n.message for n in app._notifications)


async def test_an_empty_shop_home_never_offers_the_demo(tmp_path):
    root = tmp_path / "shop"
    init_home(root, shop=True)
    home = Home(root)
    app = make_app(home)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        assert "No saved runs" in text
        assert "demo" not in text.lower() and "press L" not in text
        assert "Load demo" not in text.splitlines()[-1]  # the footer
        await pilot.press("L")  # not offered: nothing happens, no refusal either
        await settle(pilot)
        assert home.queue.total() == 0
        assert not app._notifications
        app.queue.try_action("load_demo")  # as the palette would: a sentence, nothing loaded
        await settle(pilot)
        assert "only in a practice home" in " ".join(n.message for n in app._notifications)
        assert home.queue.total() == 0
        await pilot.press("question_mark")
        await settle(pilot)
        assert "demo" not in screen_text(app).lower()


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_daily_shop_example_of_the_app_starts_in_a_shop_home(tmp_path, monkeypatch):
    """The "every day" block of docs/shop-homes.md: its ``resolver-tui`` line is accepted by
    the app's start-up in a shop home (it once passed ``--as``, which a shop home refuses)."""
    import shlex

    from resolver_tui.__main__ import parse_args, who

    text = (DOCS / "shop-homes.md").read_text(encoding="utf-8")
    block = text[text.index("Then, every day:") :]
    block = block[: block.index("```", block.index("```") + 3)]
    line = next(ln for ln in block.splitlines() if ln.startswith("resolver-tui"))
    words = shlex.split(line, comments=True)[1:]
    root = tmp_path / "shop"
    init_home(root, shop=True)
    config = tmp_path / "me.toml"
    config.write_text('name = "Tomás"\nrole = "team_lead"\n', encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    args = parse_args([*words, "--home", str(root)])
    assert who(args, Home(root).kind) == ("team_lead", "Tomás")


def test_the_lesson_page_says_its_check_needs_the_test_extra():
    text = (DOCS / "lesson.md").read_text(encoding="utf-8")
    command = text.index(".venv/bin/python -m pytest tests/trainer/test_lesson_page.py")
    before = text[text.rindex("One command checks the whole page", 0, command) : command]
    assert "test extra" in before and "'.[test]'" in before


def test_without_a_terminal_the_app_refuses_with_one_sentence(tmp_path):
    """Started with no terminal (a pipe, cron), the app waited for one until killed."""
    root = _practice_home(tmp_path)
    done = _start(root, "--as", "team_lead", "--name", "Tomás", tmp_path=tmp_path)
    assert done.returncode == 1
    said = _one_sentence(done.stderr)
    assert "needs a terminal" in said and "resolver runs" in said
    assert done.stdout == b""


def test_require_terminal_looks_at_both_ends():
    from core.ground.errors import ResolverError
    from resolver_tui.__main__ import require_terminal

    class Tty:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    require_terminal(Tty(), Tty())
    for stdin, stdout in ((Pipe(), Tty()), (Tty(), Pipe()), (Tty(), object())):
        with pytest.raises(ResolverError, match="needs a terminal"):
            require_terminal(stdin, stdout)


def test_without_a_terminal_the_first_start_question_is_never_asked(tmp_path):
    """A new user's finding: with no config and no terminal the app said "Nobody said who is at
    the keyboard" instead of naming the missing terminal; the terminal comes first now."""
    root = _practice_home(tmp_path)
    done = _start(root, tmp_path=tmp_path)
    assert done.returncode == 1
    assert "needs a terminal" in _one_sentence(done.stderr)
    assert not (tmp_path / "no-config.toml").exists()


def test_in_a_shop_home_the_app_runs_as_the_registrys_approver_with_the_registrys_role(tmp_path, monkeypatch):
    """A new user's finding: the app took the role from the config file and showed it as fact;
    only the passphrase dialog learned otherwise."""
    from core.engine.approvers import Registry
    from core.ground.clock import SystemClock
    from core.ground.errors import ApprovalRefused
    from resolver_tui.__main__ import approver_at, parse_args

    root = tmp_path / "shop"
    init_home(root, shop=True)
    home = Home(root)
    config = tmp_path / "me.toml"
    config.write_text('name = "tomás"\nrole = "grace"\n', encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    args = parse_args(["--home", str(root)])
    assert approver_at(home, args) == ("grace", "tomás")  # no registry yet: nothing can be decided anyway
    registry = Registry(root)
    registry.init("Grace", "grace-passphrase", SystemClock().now())
    registry.add("Tomás", "team_lead", "tomas-passphrase", "grace-passphrase", SystemClock().now())
    assert approver_at(home, args) == ("team_lead", "Tomás")
    config.write_text('name = "Tomas Q"\nrole = "team_lead"\n', encoding="utf-8")
    with pytest.raises(ApprovalRefused, match="is not an approver of this shop home"):
        approver_at(home, args)


@pytest.mark.parametrize(("given", "kept"), [("0", 0.0), ("0.5", 0.5), ("2", 2.0), ("30", 30.0)])
def test_the_refresh_interval_is_off_or_at_least_half_a_second(given, kept):
    from resolver_tui.__main__ import parse_args

    assert parse_args(["--refresh", given]).refresh == kept


@pytest.mark.parametrize("given", ["0.001", "0.1", "-1", "inf", "nan", "soon"])
def test_a_refresh_interval_that_would_spin_or_is_not_a_number_is_one_sentence(given, capsys):
    """A new user's finding: ``--refresh 0.001`` was accepted and kept a core at 100 %."""
    from resolver_tui.__main__ import parse_args

    with pytest.raises(SystemExit) as exc:
        parse_args(["--refresh", given])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--refresh" in err and "Traceback" not in err


def test_name_in_a_shop_home_with_a_registry_asks_nothing_and_saves_nothing(tmp_path, monkeypatch):
    """A new user's trial: ``resolver-tui --name Bea`` on a shop store still asked who was at the
    keyboard and the role, and saved the answer (Grace) over the file while the app ran as Bea."""
    from core.engine.approvers import Registry
    from core.ground.clock import SystemClock
    from resolver_tui.__main__ import approver_at, parse_args

    root = tmp_path / "shop"
    init_home(root, shop=True)
    registry = Registry(root)
    registry.init("Grace", "grace-passphrase", SystemClock().now())
    registry.add("Bea", "team_lead", "bea-passphrase-long", "grace-passphrase", SystemClock().now())
    config = tmp_path / "none" / "me.toml"
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))

    def ask(_prompt: str = "") -> str:
        raise AssertionError("asked")

    assert approver_at(Home(root), parse_args(["--home", str(root), "--name", "bea"]), ask) == ("team_lead", "Bea")
    assert not config.exists()


@pytest.mark.parametrize("name", ["\x1b[31mX", "Gr\u200bace", "Grace\nStatus: done"])
@pytest.mark.parametrize("shop", [False, True])
def test_a_name_the_decisions_would_refuse_is_refused_at_the_start(tmp_path, name, shop):
    """A new user's trial: ``resolver-tui --name $'\\e[31mX'`` started, showed "approver: X" and
    "Approving as: X", and refused the name only after ``y``; the command line refuses it at once."""
    from core.ground.errors import ResolverError
    from resolver_tui.__main__ import approver_at, parse_args

    root = tmp_path / "h"
    init_home(root, shop=shop)
    args = parse_args(["--home", str(root), "--as", "team_lead", "--name", name])
    with pytest.raises(ResolverError, match=r"type it as plain text|must be one line"):
        approver_at(Home(root), args)
