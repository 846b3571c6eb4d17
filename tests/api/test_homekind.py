"""Practice homes and shop homes: `resolver init --shop` makes a shop home for good; there the
trainer's clock, reset, class, exercise, manual-refund, the demo and the lesson's Python API are
refused with one sentence, and nothing changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from core.api.home import Home
from core.api.homekind import DIFFERENCES, home_kind, init_home
from core.cli import main
from core.ground.clock import FileClock, SystemClock
from core.ground.errors import ResolverError, ShopRefused

from helpers import FRIDAY, T65273_RUN


@pytest.fixture
def shop(tmp_path, capsys):
    """``resolver init --shop`` in a new folder, then a CLI runner on it."""
    root = tmp_path / "shop"
    assert main(["init", "--shop", "--home", str(root)]) == 0
    assert "Made a shop home in" in capsys.readouterr().out

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--home", str(root)])
        out, err = capsys.readouterr()
        return code, out, err

    run.root = root
    return run


def test_every_home_is_a_practice_home_unless_made_a_shop(cli, tmp_path):
    cli("init")  # `show` never makes a home
    assert cli("show")[1].strip() == f"Home: {cli.home} (practice)"
    assert Home(cli.home).kind == "practice"
    assert home_kind(tmp_path / "nowhere") == "practice"


def test_show_names_the_kind_in_one_word_and_json_and_the_lesson_lines_do_not(shop, cli):
    assert shop("show") == (0, f"Home: {shop.root} (shop)\n", "")
    code, out, _ = shop("run", "T-65273")
    assert code == 0 and "Outcome: resolve (rule W7) | 3 model call(s)" in out and "shop" not in out
    assert shop("show", T65273_RUN)[1].splitlines()[-1] == "Home: shop"
    rows = json.loads(shop("runs", "--json")[1])
    cli("run", "T-65273")
    practice_rows = json.loads(cli("runs", "--json")[1])
    assert set(rows[0]) == set(practice_rows[0]) and "kind" not in rows[0]


def test_a_shop_home_refuses_reset_and_keeps_its_runs(shop):
    shop("run", "T-65273")
    for argv in (("reset",), ("reset", "--all"), ("reset", "--run", T65273_RUN)):
        code, out, err = shop(*argv)
        assert (code, out) == (4, "")  # refused
        assert err.startswith(f"{shop.root} is a shop home: `reset` runs only in a practice home") and err.count("\n") == 1
    assert shop("runs")[1].startswith(T65273_RUN)


def test_a_shop_homes_clock_is_real_time_only(shop):
    for argv in (("clock", "set", FRIDAY), ("clock", "advance", "2d")):
        code, _out, err = shop(*argv)
        assert code == 4 and "a shop home's clock is real time only" in err
    assert not (shop.root / "clock.json").exists()
    assert shop("clock", "show")[1].endswith("(real)\n")
    # A clock file copied in by hand changes nothing: a shop home reads real time.
    (shop.root / "clock.json").write_text(json.dumps({"at": FRIDAY, "set_at": FRIDAY}))
    assert isinstance(Home(shop.root).clock, SystemClock)
    assert shop("clock", "show")[1].endswith("(real)\n")


@pytest.mark.parametrize(
    "argv",
    [
        ("class", "friday"),
        ("class", "all"),
        ("exercise", "crash-at-step"),
        ("exercise", "resume-twice"),
        ("manual-refund", "manual-1", "LK-507862", "119.00", "RFD-DOUBLE", "PAY-507862-2"),
    ],
)
def test_a_shop_home_refuses_the_lessons_commands_and_nothing_changes(shop, argv):
    code, out, err = shop(*argv)
    assert code == 4 and out == ""
    assert "is a shop home:" in err and "nothing changed" in err
    assert shop("runs")[1].startswith("No saved runs")
    assert shop("changes")[1].startswith("0 change(s)")


def test_the_demo_queue_is_refused_in_a_shop_home(shop):
    from core.trainer.demo import build_demo

    with pytest.raises(ShopRefused, match="the demo queue runs only in a practice home"):
        build_demo(Home(shop.root))


def test_the_lessons_python_api_is_refused_in_a_shop_home(shop, monkeypatch):
    from core.ground.data import load_task
    from core.stores.sqlite.world import SqliteWorld as CoreWorld
    from core.trainer.lesson_api import CheckpointStore, MockProvider, World, run_task

    monkeypatch.setenv("RESOLVER_HOME", str(shop.root))
    with pytest.raises(ShopRefused, match="the lesson's Python API"):
        CheckpointStore()
    with pytest.raises(ShopRefused):
        CheckpointStore(shop.root / "runs.sqlite")
    with pytest.raises(ShopRefused):
        World(ticket_id="phone-call")
    task = load_task("T-65273")
    with pytest.raises(ShopRefused):
        run_task(task, "agent", "chat-small", MockProvider().complete, CoreWorld(shop.root / "larkfield.sqlite"))
    assert shop("changes")[1].startswith("0 change(s)")


def test_a_shop_home_stays_one_and_a_used_practice_home_cannot_become_one(shop, cli, tmp_path):
    assert shop("init", "--shop") == (0, f"{shop.root} is already a shop home.\n", "")
    code, _out, err = shop("init")
    assert code == 1 and "stays one" in err
    cli("run", "T-65273")
    code, _out, err = cli("init", "--shop")
    assert code == 1 and "is already a practice home" in err and "runs.sqlite" in err
    assert home_kind(cli.home) == "practice"
    assert cli("init")[1] == f"{cli.home} is a practice home.\n"
    # An empty folder that exists is new enough.
    (tmp_path / "empty").mkdir()
    assert init_home(tmp_path / "empty", shop=True).startswith("Made a shop home")


def test_a_damaged_home_file_fails_closed_with_a_sentence(tmp_path, capsys):
    root = tmp_path / "damaged"
    root.mkdir()
    (root / "home.json").write_text("{not json")
    with pytest.raises(ResolverError, match=r"home\.json is damaged"):
        home_kind(root)
    assert main(["reset", "--all", "--home", str(root)]) == 1
    assert "is damaged" in capsys.readouterr().err


def test_a_practice_home_keeps_the_trainers_clock(cli):
    assert isinstance(Home(cli.home).clock, FileClock)


def test_the_shop_homes_page_has_one_table_of_every_difference():
    page = (Path(__file__).parent.parent.parent / "docs" / "shop-homes.md").read_text(encoding="utf-8")
    section = page[page.index("## Practice homes and shop homes") :]
    section = section[: section.index("\n## ", 4)]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert rows[0].startswith("| what | practice home | shop home |")
    table = [tuple(cell.strip() for cell in row.strip("|").split(" | ")) for row in rows[1:]]
    assert table == list(DIFFERENCES)


def test_python_m_resolver_init_shop_in_a_new_process(tmp_path):
    root = tmp_path / "real-queue"
    made = subprocess.run(
        [sys.executable, "-m", "resolver", "init", "--shop", "--home", str(root)], capture_output=True, text=True, timeout=60
    )
    assert made.returncode == 0, made.stderr
    refused = subprocess.run(
        [sys.executable, "-m", "resolver", "reset", "--all", "--home", str(root)], capture_output=True, text=True, timeout=60
    )
    assert refused.returncode == 4 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().endswith("Use a practice home for the lesson: --home DIR or RESOLVER_HOME.")


def test_init_shop_makes_a_private_home_even_under_a_loose_umask(tmp_path):
    """A new user's finding: `init --shop` left the folder 0755 and home.json 0644 (umask 022),
    and `resolver doctor` then failed its own home."""
    old = os.umask(0o022)
    try:
        init_home(tmp_path / "shop", shop=True)
        (tmp_path / "empty").mkdir(mode=0o755)
        init_home(tmp_path / "empty", shop=True)
    finally:
        os.umask(old)
    for root in (tmp_path / "shop", tmp_path / "empty"):
        assert root.stat().st_mode & 0o777 == 0o700
        assert (root / "home.json").stat().st_mode & 0o777 == 0o600
