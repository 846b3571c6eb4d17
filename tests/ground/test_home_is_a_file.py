"""A home given as a file, or under one, is one sentence on every command, and the file is left
as it was. A new user's trial: ``runs`` said "No home folder ... start this one with resolver
run", ``run`` said "File exists" and ``init`` called the file's home.json "damaged"."""

from __future__ import annotations

from pathlib import Path

import pytest
from core.ground.errors import ResolverError
from core.ground.homepath import locate_home

from helpers import run_process

COMMANDS = (["runs"], ["run", "T-65273"], ["init"], ["init", "--shop"], ["doctor"], ["show", "T-65273-agent-chat-small-1"])


@pytest.mark.parametrize("below", [False, True], ids=["the file", "a folder under it"])
def test_locate_home_says_the_home_is_a_file(tmp_path, below, monkeypatch):
    file = tmp_path / "homefile"
    file.write_text("hi\n", encoding="utf-8")
    home = file / "sub" if below else file
    said = "lies inside a file" if below else "is a file, not a folder"
    with pytest.raises(ResolverError, match=f"from --home\\) {said}"):
        locate_home(home)
    monkeypatch.setenv("RESOLVER_HOME", str(home))  # the same from the environment, naming it
    with pytest.raises(ResolverError, match=f"RESOLVER_HOME.*{said}"):
        locate_home()


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a) for a in COMMANDS])
def test_every_command_says_so_in_one_sentence_and_leaves_the_file(tmp_path, argv):
    file = tmp_path / "homefile"
    file.write_text("hi\n", encoding="utf-8")
    done = run_process(file, *argv, env={"HOME": str(tmp_path)})
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == (
        f"The home {file} (from --home) is a file, not a folder; choose a folder with --home DIR. Nothing was changed."
    )
    assert file.read_text(encoding="utf-8") == "hi\n" and sorted(p.name for p in tmp_path.iterdir()) == ["homefile"]
    assert Path(file).is_file()
