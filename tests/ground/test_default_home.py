"""The default home (:func:`core.ground.homepath.default_home`): when no ``--home``,
``$RESOLVER_HOME`` or ``home`` in the config file names one, ``./work`` in the project folder or
where an earlier release made a home in ``./work``, else the user's data folder.

A newcomer's trip: the default was ``./work`` of whatever folder the command ran in, so the
installed tool left ``work/`` folders about and a home (its runs, its key) made in one folder was
not found from another."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from core.api.home import Home
from core.cli import main
from core.ground.exitcodes import EXIT_ERROR
from core.ground.homepath import default_home, locate_home

from helpers import T65273_RUN

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_home_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Neither ``$RESOLVER_HOME`` nor a config file names a home: the default decides."""
    monkeypatch.delenv("RESOLVER_HOME", raising=False)
    monkeypatch.delenv("RESOLVER_STORE", raising=False)
    monkeypatch.setenv("RESOLVER_CONFIG", str(tmp_path / "no-config.toml"))


def _data_home(user_data_dir: Path) -> Path:
    return user_data_dir / "resolver" / "home"


def test_outside_the_project_one_home_in_the_data_folder_serves_every_folder(
    tmp_path, monkeypatch, capsys, no_home_named, user_data_dir
):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(first)
    assert main(["run", "T-65273"]) == 0
    home = _data_home(user_data_dir)
    assert not (first / "work").exists(), "the installed tool left a work/ folder behind"
    assert (home / "runs.sqlite").is_file()
    capsys.readouterr()
    monkeypatch.chdir(second)  # another folder: the same home, its runs and its key
    assert main(["runs"]) == 0
    assert T65273_RUN in capsys.readouterr().out
    assert locate_home().path == home
    assert not (second / "work").exists()


def test_the_project_folder_keeps_the_lessons_work(tmp_path, no_home_named):
    where = default_home(ROOT)  # the lesson's `python -m resolver` in the project folder
    assert where.path == ROOT / "work" and where.source == "default" and "project folder" in where.detail
    project = tmp_path / "clone"
    project.mkdir()
    (project / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    assert default_home(project).path == project / "work"


def test_the_project_folder_is_known_by_its_entry_point_whatever_the_distribution_is_called(tmp_path):
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    (renamed / "pyproject.toml").write_text(
        '[project]\nname = "larkfield-resolver"\n[project.scripts]\nresolver = "core.__main__:entry"\n', encoding="utf-8"
    )
    assert default_home(renamed).path == renamed / "work"


@pytest.mark.parametrize(
    "text",
    [
        b'[project]\nname = "resolver"\n[project.scripts]\nresolver = "other.cli:main"\n',  # another project's command
        b'[project]\nname = "mine"\n',
        b"[project\nresolver = 'core.__main__:entry'\n",  # not TOML
        b'project = "core.__main__:entry"\n',
        b"\xff\xfe core.__main__:entry",  # not UTF-8
    ],
)
def test_another_projects_folder_gets_the_data_folder(tmp_path, text, user_data_dir):
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_bytes(text)
    (other / "work").mkdir()  # a work/ folder of that project's own, no home in it
    (other / "work" / "notes.txt").write_text("mine", encoding="utf-8")
    where = default_home(other)
    assert where.path == _data_home(user_data_dir) and where.detail == "the default: your data folder"


@pytest.mark.parametrize("mark", ["runs.sqlite", "approval.key", "resolver.log"])
def test_a_work_home_made_by_an_earlier_release_is_still_found(tmp_path, monkeypatch, capsys, no_home_named, mark):
    old = tmp_path / "somewhere"
    if mark == "runs.sqlite":
        Home(old / "work").run("T-65273")  # a home the earlier default made here
    else:
        (old / "work").mkdir(parents=True)
        (old / "work" / mark).write_bytes(b"")
    monkeypatch.chdir(old)
    where = locate_home()
    assert where.path.absolute() == old / "work" and "./work already holds a home" in where.detail
    assert main(["doctor"]) in (0, 1)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Home: {old / 'work'} (the default here: ./work already holds a home)"
    assert out[1].startswith("Why this home: no --home, $RESOLVER_HOME or `home` in the config file names a home")
    assert "earlier releases made the home ./work" in out[1]


def test_doctor_says_which_rule_picked_the_home(tmp_path, monkeypatch, capsys, no_home_named, user_data_dir):
    monkeypatch.chdir(tmp_path)
    assert main(["doctor"]) == EXIT_ERROR  # no home there yet: a FAIL line, nothing made
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Home: {_data_home(user_data_dir)} (the default: your data folder)"
    assert "is not the project's and has no ./work home" in out[1] and "the same from every folder" in out[1]
    assert not _data_home(user_data_dir).exists()
    # a new user's trial: right after a tool install the advice named only `resolver run TASK`
    assert any(line.startswith("FAIL  no home folder there yet") and "`resolver-tui --demo`" in line for line in out)
    monkeypatch.chdir(ROOT)
    main(["doctor"])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Home: {ROOT / 'work'} (the default in the project folder: the lesson's ./work)"
    assert "this is the project's folder, where the lesson keeps its home in ./work" in out[1]
    main(["doctor", "--home", str(tmp_path / "mine")])
    assert "Why this home: the command line named it" in capsys.readouterr().out


def test_a_deleted_current_folder_gets_the_data_folder(tmp_path, monkeypatch, user_data_dir):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    os.rmdir(gone)
    assert default_home().path == _data_home(user_data_dir)
