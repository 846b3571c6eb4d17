"""``resolver restore`` on a Python without tarfile's extraction filters (before 3.11.4, such as
Debian 12's own 3.11.2): the members are checked by hand (core.ops.maintenance's
``_data_filter_by_hand``) with the refusals of ``filter="data"``. The hand check runs on every
Python here: the check that decides whether the interpreter has the filter is patched to say no.
Where the filter exists, the hand check is also compared with it member by member.

The command-line restore tests (round trip, newer runs, shop homes, folders in place of files)
are in tests/cli/test_cli_hardening.py; these are about what an archive may hold."""

from __future__ import annotations

import io
import stat
import tarfile
from collections.abc import Callable
from pathlib import Path

import pytest
from core.cli import EXIT_ERROR
from core.ground.errors import ResolverError
from core.ops import maintenance

from helpers import T65273_RUN, store_at

FRIDAY = "2026-10-09T17:00:00-04:00"
SRC = Path("backup.tar.gz")

# Python 3.12 and 3.13 warn when an archive is extracted without naming a filter, as the hand
# check's path does (only the tests take it on a Python that has the filters).
no_filter_warning = pytest.mark.filterwarnings("ignore:Python 3.14 will, by default, filter:DeprecationWarning")
needs_data_filter = pytest.mark.skipif(not hasattr(tarfile, "data_filter"), reason="this Python's tarfile has no data filter")


def _file(name: str, mode: int = 0o600, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.uid, info.gid, info.uname, info.gname = len(data), mode, 4242, 4242, "mallory", "mallory"
    return info, data


def _entry(name: str, kind: bytes, linkname: str = "", mode: int = 0o644) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.mode = kind, linkname, mode
    return info, b""


def _archive(path: Path, entries: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


def _members(tmp_path: Path, entries: list[tuple[tarfile.TarInfo, bytes]]) -> list[tarfile.TarInfo]:
    """The members as tarfile reads them back from a real archive (offsets and all)."""
    with tarfile.open(_archive(tmp_path / "members.tar.gz", entries)) as tar:
        return tar.getmembers()


# Each case: the archive's entries; the last one is the member under test.
HOSTILE = {
    "a ../ escape": [_file("../escape")],
    "a ../ escape from a folder": [_entry("sub", tarfile.DIRTYPE), _file("sub/../../escape")],
    "a symlink to an absolute path": [_entry("link", tarfile.SYMTYPE, "/etc/passwd")],
    "a symlink out": [_entry("link", tarfile.SYMTYPE, "../outside")],
    "a symlink out of a folder": [_entry("sub", tarfile.DIRTYPE), _entry("sub/link", tarfile.SYMTYPE, "../../outside")],
    "a hard link out": [_entry("link", tarfile.LNKTYPE, "../outside")],
    "a hard link to an absolute path": [_entry("link", tarfile.LNKTYPE, "/etc/passwd")],
    "a character device": [_entry("tty", tarfile.CHRTYPE)],
    "a block device": [_entry("disk", tarfile.BLKTYPE)],
    "a fifo": [_entry("pipe", tarfile.FIFOTYPE)],
}

# Each case: the archive's entries, and the mode the last one's file must get.
MODES = {
    "setuid": ([_file("f", 0o4755)], 0o755),
    "setgid": ([_file("f", 0o2755)], 0o755),
    "sticky and written by all": ([_file("f", 0o1777)], 0o755),
    "written by group and others": ([_file("f", 0o666)], 0o644),
    "no bit at all": ([_file("f", 0o000)], 0o600),
    "execute for others only": ([_file("f", 0o641)], 0o640),
    "setuid, no execute for its owner": ([_file("f", 0o4655)], 0o644),
}

KEPT = {
    "a symlink inside": [_entry("sub", tarfile.DIRTYPE), _file("f"), _entry("sub/link", tarfile.SYMTYPE, "../f")],
    "a hard link inside": [_file("f"), _entry("link", tarfile.LNKTYPE, "f")],
    "a folder": [_entry("sub", tarfile.DIRTYPE, mode=0o777)],
}


@pytest.mark.parametrize("entries", HOSTILE.values(), ids=HOSTILE.keys())
def test_the_hand_check_refuses_what_the_data_filter_refuses(tmp_path, entries):
    members = _members(tmp_path, entries)
    with pytest.raises(ResolverError, match=r"^The backup backup\.tar\.gz holds '.+', .+; nothing was replaced\.$"):
        maintenance._data_filter_by_hand(SRC, members)
    if hasattr(tarfile, "data_filter"):  # the rule it copies refuses the same member
        dest = tmp_path / "dest"
        dest.mkdir()
        for m in members[:-1]:
            tarfile.data_filter(m, str(dest))
        with pytest.raises(tarfile.FilterError):
            tarfile.data_filter(members[-1], str(dest))


def test_the_hand_check_refuses_an_absolute_name(tmp_path):
    """The data filter strips the leading / and extracts inside; the hand check refuses it, as
    the restore's own member check does (an absolute name is no file of a home)."""
    with pytest.raises(ResolverError, match=r"'/etc/cron\.d/evil', which is an absolute path; nothing was replaced"):
        maintenance._data_filter_by_hand(SRC, _members(tmp_path, [_file("/etc/cron.d/evil")]))


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        # A link to the folder itself, then a link through it to its parent: the data filter
        # refuses the second once the first is on disk; a check made before extracting cannot
        # follow the first, so it refuses any path through a link of the archive.
        ([_entry("here", tarfile.SYMTYPE, "."), _entry("up", tarfile.SYMTYPE, "here/..")], "through another link"),
        ([_entry("here", tarfile.SYMTYPE, "."), _file("here/../escape")], "would leave the folder"),
        ([_entry("sub", tarfile.SYMTYPE, "."), _file("sub/f")], "would leave the folder"),
        ([_entry("link", tarfile.SYMTYPE, "."), _file("link")], "would leave the folder"),
        ([_file("f"), _entry("f", tarfile.SYMTYPE, "g")], "in the place of something before it"),
        ([_file("f"), _entry("f", tarfile.LNKTYPE, "f")], "in the place of something before it"),
        ([_entry("link", tarfile.LNKTYPE, "later"), _file("later")], "not a file before it"),
        ([_entry("sub", tarfile.DIRTYPE), _entry("link", tarfile.LNKTYPE, "sub")], "not a file before it"),
        ([_file(".")], "names the folder restored into"),
    ],
)
def test_links_that_a_check_before_extracting_cannot_follow_are_refused(tmp_path, entries, says):
    with pytest.raises(ResolverError, match=says):
        maintenance._data_filter_by_hand(SRC, _members(tmp_path, entries))


@needs_data_filter
@no_filter_warning
def test_a_link_to_a_link_climbing_out_is_refused_by_both_rules(tmp_path):
    """The case the hand check is stricter for: the data filter also refuses it, at extraction."""
    archive = _archive(
        tmp_path / "climb.tar.gz", [_entry("here", tarfile.SYMTYPE, "."), _entry("up", tarfile.SYMTYPE, "here/..")]
    )
    with tarfile.open(archive) as tar:
        (tmp_path / "a").mkdir()
        with pytest.raises(tarfile.FilterError):
            tar.extractall(tmp_path / "a", filter="data")
        with pytest.raises(ResolverError):
            maintenance._data_filter_by_hand(SRC, tar.getmembers())


@pytest.mark.parametrize(("entries", "mode"), MODES.values(), ids=MODES.keys())
def test_the_hand_check_drops_the_bits_the_data_filter_drops(tmp_path, entries, mode):
    members = _members(tmp_path, entries)
    (checked,) = maintenance._data_filter_by_hand(SRC, members)
    assert checked.mode == mode and (checked.uid, checked.gid, checked.uname, checked.gname) == (-1, -1, "", "")
    assert members[0].uid == 4242 and members[0].mode == entries[0][0].mode  # the archive's own members are left alone
    if hasattr(tarfile, "data_filter"):
        assert tarfile.data_filter(members[0], str(tmp_path)).mode == mode


@pytest.mark.parametrize("entries", KEPT.values(), ids=KEPT.keys())
def test_links_and_folders_inside_are_kept(tmp_path, entries):
    members = _members(tmp_path, entries)
    checked = maintenance._data_filter_by_hand(SRC, members)
    assert [m.name for m in checked] == [m.name for m in members]
    if checked[-1].isdir():
        assert checked[-1].mode == 0o700
    if hasattr(tarfile, "data_filter"):
        dest = tmp_path / "dest"
        dest.mkdir()
        for m in members:
            tarfile.data_filter(m, str(dest))  # refuses none of them either


@no_filter_warning
def test_what_the_hand_check_lets_through_extracts_with_its_modes_and_no_device(tmp_path):
    """Extracted for real by tarfile without a filter, as on 3.11.2: the setuid bit and the
    write bits for others are gone, a hard link is a copy, and nothing is written outside."""
    entries = [
        _entry("sub", tarfile.DIRTYPE, mode=0o777),
        _file("sub/tool", 0o4777, b"#!/bin/sh\n"),
        _file("notes", 0o666, b"notes"),
        _entry("copy", tarfile.LNKTYPE, "sub/tool"),
        _entry("sub/link", tarfile.SYMTYPE, "../notes"),
    ]
    dest = tmp_path / "dest"
    dest.mkdir()
    with tarfile.open(_archive(tmp_path / "a.tar.gz", entries)) as tar:
        tar.extractall(dest, members=maintenance._data_filter_by_hand(SRC, tar.getmembers()), numeric_owner=True)
    assert stat.S_IMODE((dest / "sub" / "tool").stat().st_mode) == 0o755
    assert stat.S_IMODE((dest / "notes").stat().st_mode) == 0o644
    assert stat.S_IMODE((dest / "sub").stat().st_mode) == 0o700
    assert (dest / "copy").read_bytes() == b"#!/bin/sh\n" and not (dest / "copy").samefile(dest / "sub" / "tool")
    assert stat.S_IMODE((dest / "copy").stat().st_mode) == 0o755
    assert (dest / "sub" / "link").read_text() == "notes"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.tar.gz", "dest"]


# -- the whole restore, on the hand check's path ------------------------------------------------


@pytest.fixture
def by_hand(monkeypatch) -> list[list[str]]:
    """Restore as on a Python without tarfile's data filter: the check that decides says no,
    and every call of the hand check is recorded (the names it let through)."""
    calls: list[list[str]] = []
    checked = maintenance._data_filter_by_hand

    def spy(src: Path, members: list[tarfile.TarInfo]) -> list[tarfile.TarInfo]:
        kept = checked(src, members)
        calls.append([f"{m.name} {m.mode:o}" for m in kept])
        return kept

    monkeypatch.setattr(maintenance, "_has_data_filter", lambda: False)
    monkeypatch.setattr(maintenance, "_data_filter_by_hand", spy)
    return calls


@pytest.fixture
def backed_up(cli, tmp_path) -> tuple[Callable[..., tuple[int, str, str]], Path]:
    """A home with T-65273 waiting for approval, and its backup ``b.tar.gz``."""
    assert cli("clock", "set", FRIDAY)[0] == 0
    assert cli("run", "T-65273")[0] == 0
    archive = tmp_path / "b.tar.gz"
    assert cli("backup", str(archive))[0] == 0
    return cli, archive


def _plus(archive: Path, out: Path, *extra: tuple[tarfile.TarInfo, bytes]) -> Path:
    """``archive`` with the ``extra`` entries after its own."""
    with tarfile.open(archive) as tar:
        entries = [(m, tar.extractfile(m).read() if m.isfile() else b"") for m in tar.getmembers()]
    return _archive(out, [*entries, *extra])


@no_filter_warning
def test_a_good_backup_is_restored_by_the_hand_check(backed_up, by_hand, tmp_path):
    cli, archive = backed_up
    assert cli("reject", T65273_RUN, "--as", "team_lead", "--name", "Amira", "--reason", "no")[0] == 0
    setuid = _plus(archive, tmp_path / "setuid.tar.gz", _file("extra.txt", 0o4777, b"kept"))
    code, out, err = cli("restore", str(setuid), "--replace-newer")
    assert code == 0, err
    assert out.startswith("Restored") and "extra.txt" in out
    assert store_at(cli.home / "runs.sqlite").load(T65273_RUN).status == "waiting_approval"
    assert len(by_hand) == 1
    assert "extra.txt 755" in by_hand[-1]  # extracted without the setuid bit nor the write bits for others
    assert (cli.home / "extra.txt").read_bytes() == b"kept"
    assert stat.S_IMODE((cli.home / "extra.txt").stat().st_mode) == 0o600


HOSTILE_RESTORES = {
    "a ../ escape": _file("../escape"),
    "an absolute path": _file("/tmp/resolver-restore-escape"),
    "a symlink out": _entry("escape", tarfile.SYMTYPE, "../escape"),
    "a symlink to an absolute path": _entry("escape", tarfile.SYMTYPE, "/etc/passwd"),
    "a hard link out": _entry("escape", tarfile.LNKTYPE, "../escape"),
    "a device node": _entry("escape", tarfile.CHRTYPE),
    "a fifo": _entry("escape", tarfile.FIFOTYPE),
}


@no_filter_warning
@pytest.mark.parametrize("extra", HOSTILE_RESTORES.values(), ids=HOSTILE_RESTORES.keys())
def test_a_hostile_backup_is_refused_on_the_hand_checks_path_and_nothing_is_replaced(backed_up, by_hand, tmp_path, extra):
    """Each is refused by the restore's own member check, before any extraction, on every
    Python; the hand check's own refusals of the same members are tested above."""
    cli, archive = backed_up
    assert cli("reject", T65273_RUN, "--as", "team_lead", "--name", "Amira", "--reason", "no")[0] == 0
    before = sorted(p.name for p in tmp_path.iterdir())
    hostile = _plus(archive, tmp_path / "hostile.tar.gz", extra)
    code, _, err = cli("restore", str(hostile), "--replace-newer")
    assert code == EXIT_ERROR and err.rstrip().endswith("nothing was replaced.") and "Traceback" not in err
    assert f"holds {extra[0].name!r}" in err
    assert store_at(cli.home / "runs.sqlite").load(T65273_RUN).status == "handed_to_person"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "hostile.tar.gz"])  # no temporary folder left
    assert not Path("/tmp/resolver-restore-escape").exists()


def test_a_backup_cut_short_is_refused_with_a_sentence(backed_up, tmp_path):
    """A backup cut short (a full disk, a copy stopped halfway) stopped restore on gzip's
    EOFError, "resolver stopped on an unexpected error"."""
    cli, archive = backed_up
    short = tmp_path / "short.tar.gz"
    short.write_bytes(archive.read_bytes()[: archive.stat().st_size // 2])
    code, _, err = cli("restore", str(short), "--replace-newer")
    assert code == EXIT_ERROR and f"Cannot read the backup {short}" in err and err.rstrip().endswith("Nothing was replaced.")
    assert "unexpected" not in err
    assert store_at(cli.home / "runs.sqlite").load(T65273_RUN).status == "waiting_approval"


@pytest.mark.parametrize("filtered", [True, False], ids=["data filter", "hand check"])
@no_filter_warning
def test_a_backup_that_cannot_be_extracted_is_refused_with_a_sentence(backed_up, monkeypatch, tmp_path, filtered):
    """A folder and then a file of the same name: writing the file fails (OSError), on either path."""
    cli, archive = backed_up
    monkeypatch.setattr(maintenance, "_has_data_filter", lambda: filtered and hasattr(tarfile, "data_filter"))
    both = _plus(archive, tmp_path / "both.tar.gz", _entry("extra", tarfile.DIRTYPE), _file("extra"))
    code, _, err = cli("restore", str(both), "--replace-newer")
    assert code == EXIT_ERROR and f"Cannot extract the backup {both}" in err and err.rstrip().endswith("Nothing was replaced.")
    assert not (cli.home / "extra").exists()


@needs_data_filter
def test_the_data_filters_own_refusal_is_a_sentence(tmp_path):
    """On the data filter's path a member it refuses (none gets past the restore's member
    check today) is said in a sentence, never tarfile's FilterError."""
    archive = _archive(tmp_path / "a.tar.gz", [_file("../escape")])
    (tmp_path / "dest").mkdir()
    with (
        tarfile.open(archive) as tar,
        pytest.raises(ResolverError, match=r"holds '\.\./escape', which cannot be restored safely"),
    ):
        maintenance._extract(tar, SRC, tar.getmembers(), tmp_path / "dest")
    assert not (tmp_path / "escape").exists()
