"""The approvers' key files on a machine (core/engine/keyfiles.py): modes, the atomic write, a missing
file, a damaged one, and a file of another name."""

from __future__ import annotations

import json
import os
import stat

import pytest
from core.engine.keyfiles import FORMAT, KeyFile, KeyFileError, KeyFiles, key_id

PUB = "ab" * 32


def _key(name: str = "Ana", private: str = "resolver-scrypt-v1$x", recovery: str | None = None) -> KeyFile:
    return KeyFile(name, PUB, private, recovery)


def test_a_key_file_is_written_0600_in_a_0700_folder_and_read_back(tmp_path):
    files = KeyFiles(tmp_path)
    path = files.write(_key("Tomás", recovery="resolver-scrypt-v1$r"))
    assert path == tmp_path / "keys" / f"{key_id('Tomás')}.key" and path.name.endswith(".key")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(files.dir.stat().st_mode) == 0o700
    assert files.read("TOMÁS ") == _key("Tomás", recovery="resolver-scrypt-v1$r")  # the name as the registry compares it
    assert json.loads(path.read_text(encoding="utf-8"))["format"] == FORMAT
    assert [p.name for p in files.dir.iterdir()] == [path.name]  # no temporary file is left


def test_a_name_of_any_letters_maps_to_a_safe_file_name(tmp_path):
    for name in ("../../etc/passwd", "O'Neil", "Ana Lucía", "con"):
        assert KeyFiles(tmp_path).path(name).parent == tmp_path / "keys"
        assert len(key_id(name)) == 24 and all(c in "0123456789abcdef" for c in key_id(name))


def test_a_missing_key_file_is_none(tmp_path):
    assert KeyFiles(tmp_path).read("Ana") is None
    assert KeyFiles(tmp_path).listing() == []


def test_a_rewrite_replaces_the_file_whole_and_a_failed_one_leaves_the_old(tmp_path, monkeypatch):
    files = KeyFiles(tmp_path)
    files.write(_key(private="first"))
    files.write(_key(private="second"))
    assert files.read("Ana").private_key == "second"

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(KeyFileError, match=r"Cannot write .*/keys/.*No space left on device; nothing was changed"):
        files.write(_key(private="third"))
    monkeypatch.undo()
    assert files.read("Ana").private_key == "second"
    assert [p.name for p in files.dir.iterdir()] == [files.path("Ana").name]  # the temporary file was removed


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{not json",
        b"\xff\xfe",
        json.dumps({"format": "other", "name": "Ana", "public_key": PUB, "private_key": "x"}).encode(),
        json.dumps({"format": FORMAT, "name": "Ana", "public_key": "zz", "private_key": "x"}).encode(),
        json.dumps({"format": FORMAT, "name": "Ana", "public_key": PUB, "private_key": ""}).encode(),
        json.dumps({"format": FORMAT, "name": "Ana", "public_key": PUB, "private_key": "x", "recovery_key": 5}).encode(),
        b" " * (70 * 1024),
    ],
)
def test_a_damaged_key_file_is_one_sentence(tmp_path, body):
    files = KeyFiles(tmp_path)
    files.dir.mkdir(mode=0o700)
    files.path("Ana").write_bytes(body)
    with pytest.raises(KeyFileError, match=r"^The key file .* is damaged \(.*\); copy it again from where the key was made"):
        files.read("Ana")
    [(_path, key, problem)] = files.listing()
    assert key is None and "is damaged" in problem


def test_a_key_file_of_another_name_is_refused(tmp_path):
    files = KeyFiles(tmp_path)
    made = files.write(_key("Bob"))
    made.rename(files.path("Ana"))
    with pytest.raises(KeyFileError, match=r"belongs to Bob, not Ana; move it away"):
        files.read("Ana")
    [(_path, key, problem)] = files.listing()
    assert key is not None and "is not the file name of Bob" in problem


def test_the_listing_says_a_key_file_others_may_read(tmp_path):
    files = KeyFiles(tmp_path)
    files.write(_key()).chmod(0o644)
    [(_path, _key_read, problem)] = files.listing()
    assert problem.startswith("mode 644: others may read it")
