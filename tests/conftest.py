"""Shared fixtures: a home folder in tmp_path under a fixed Friday clock, CLI runners, and the
demo queue built once per test session (each test gets its own copy)."""

from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from core.api.home import Home
from core.cli import main
from core.ground.clock import FixedClock
from core.models.chat_stub import ChatStub

from helpers import FRIDAY, MONDAY, run_process

# The tests live in folders that mirror the wings of core; what modules of two folders share lives
# in a helper module here in tests/ (helpers.py, pg.py, pg_roles.py), which pytest's import puts on
# the path with this file's folder, and never in a test module (tests/test_suite_hygiene.py).


@pytest.fixture(autouse=True)
def ctrl_c_is_heard() -> None:
    """Every test starts with Ctrl-C's signal heard, never ignored. A process started while
    SIGINT is ignored inherits that, and Python then never turns SIGINT into KeyboardInterrupt:
    the tests that stop a watcher or the stub server as Ctrl-C does (``send_signal(SIGINT)``)
    waited 30 s for a process that would not stop. That happened when the suite ran as a
    background job (which starts with SIGINT ignored) on two workers of four. A handler of our own
    is not inherited: each child starts with the default, and installs Python's own."""
    try:
        if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
            signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread: signals cannot be set from here
        pass


@pytest.fixture(autouse=True)
def approver_config_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's config file is in a temporary folder: no test reads or writes the real
    user's config directory ($RESOLVER_CONFIG names the file, core.ground.homepath.config_path)."""
    folder = tmp_path_factory.mktemp("config")
    monkeypatch.setenv("RESOLVER_CONFIG", str(folder / "config.toml"))
    return folder


@pytest.fixture(autouse=True)
def user_data_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's user data folder is a temporary one: a test that leaves ``$RESOLVER_HOME``
    unset outside the project folder gets the default home of platformdirs' data folder
    (:func:`core.ground.homepath.default_home`), which ``$XDG_DATA_HOME`` names on Linux; the real
    user's is never written."""
    folder = tmp_path_factory.mktemp("data")
    monkeypatch.setenv("XDG_DATA_HOME", str(folder))
    return folder


@pytest.fixture(autouse=True)
def resolver_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test's default home is a temporary folder: ``$RESOLVER_HOME`` points into it, so a
    test that calls the command line without ``--home`` (the lesson page's own
    ``tests/test_checkpoint.py`` does) never writes into ``./work``. Product code never checks
    whether pytest is running; this is the only place the tests choose the home."""
    folder = tmp_path_factory.mktemp("resolver-home") / "work"
    monkeypatch.setenv("RESOLVER_HOME", str(folder))
    monkeypatch.delenv("RESOLVER_STORE", raising=False)  # a developer's team store is never a test's
    return folder


def cheap_key_cost() -> Iterator[None]:
    """Keys made by a test are encrypted at scrypt n = 2**10 (about 1 ms) instead of the
    product's 2**16 (about 0.28 s), through the one seam for it (core.engine.approvers.use_key_cost);
    an unlock uses the cost stored with the key. Processes a test starts use the product's cost."""
    from core.engine.approvers import KeyCost, use_key_cost

    before = use_key_cost(KeyCost(n=2**10))
    yield
    use_key_cost(before)


@pytest.fixture
def stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatStub]:
    """A chat-completions server on 127.0.0.1 (:mod:`core.models.chat_stub`) replaying T-65273's
    chat-small recording 1; it accepts the key ``sk-test``, which ``$STUB_KEY`` holds."""
    monkeypatch.setenv("STUB_KEY", "sk-test")
    with ChatStub(key="sk-test") as server:
        yield server


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(FRIDAY)


@pytest.fixture
def home(tmp_path: Path, clock: FixedClock) -> Home:
    return Home(tmp_path / "home", clock=clock)


@pytest.fixture(scope="session")
def demo_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding the demo queue, built once per session on Monday 2026-10-12 09:00 by the
    real runner, approvals and executor. Never use it directly: :func:`copy_home` it."""
    from core.trainer.demo import build_demo

    root = tmp_path_factory.mktemp("demo-template") / "home"
    build_demo(Home(root, clock=FixedClock(MONDAY)))
    for db in root.glob("*.sqlite"):  # fold the write-ahead logs in, so a copy is whole
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return root


@pytest.fixture
def demo_home(tmp_path: Path, demo_template: Path) -> Home:
    """The demo queue, seen on Monday 2026-10-12 09:00: this test's own copy of the template."""
    root = tmp_path / "home"
    shutil.copytree(demo_template, root)
    return Home(root, clock=FixedClock(MONDAY))


@pytest.fixture
def cli(tmp_path: Path, capsys):
    """Run the CLI in this process: ``cli("run", "T-65273") -> (code, stdout, stderr)``."""
    home_dir = tmp_path / "home"

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--home", str(home_dir)])
        out, err = capsys.readouterr()
        return code, out, err

    run.home = home_dir
    return run


@pytest.fixture
def proc(tmp_path: Path):
    """Run the CLI in a fresh process against the test's home folder."""
    home_dir = tmp_path / "home"

    def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return run_process(home_dir, *argv, env=env)

    run.home = home_dir
    return run
