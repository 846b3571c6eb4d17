"""Several processes rotate one log.

Eight real processes write the home's ``resolver.log`` as it passes 1 MB. Before the fix each
process rotated on its own (the standard library's ``RotatingFileHandler`` is safe within one
process only): the kept ``resolver.log.2`` was lost, records went missing and logging printed
its own traceback on the terminal. Now every record is kept exactly once, in order within its
process, nothing reaches the terminal, and every file of the log stays 0600.
"""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

from core.ground.log import BACKUPS, LOG_NAME, MAX_BYTES

WRITER = r"""
import sys
from core.ground.log import command_log

home, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
log = command_log(home)
pad = "x" * 400
for i in range(count):
    log.info("record %s-%05d %s", tag, i, pad)
"""

PROCESSES = 8
RECORDS = 600
"""8 x 600 records of about 480 bytes: 2.3 MB, two or three rotations, all of it kept in the log
and its 3 old files together with the 0.9 MB written before."""


def _log_files(home: Path) -> list[Path]:
    return [home / LOG_NAME, *(home / f"{LOG_NAME}.{n}" for n in range(1, BACKUPS + 1))]


def _records(home: Path) -> list[str]:
    lines: list[str] = []
    for path in reversed(_log_files(home)):  # oldest first
        if path.exists():
            lines += path.read_text(encoding="utf-8").splitlines()
    return [line.split(" record ", 1)[1].split(" ", 1)[0] for line in lines if " record " in line]


def test_eight_processes_rotating_one_log_keep_every_record_and_print_nothing(tmp_path):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    before = 1800  # about 0.9 MB already in the log: the first rotation comes while all eight write
    prefill = subprocess.run(
        [sys.executable, "-c", WRITER, str(home), "before", str(before)], capture_output=True, text=True, timeout=120
    )
    assert prefill.returncode == 0 and prefill.stdout == prefill.stderr == "", prefill.stderr
    assert (home / LOG_NAME).stat().st_size < MAX_BYTES

    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), f"p{n}", str(RECORDS)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(PROCESSES)
    ]
    for writer in writers:
        out, err = writer.communicate(timeout=300)
        assert writer.returncode == 0, err
        assert out == "" and err == "", f"logging printed on the terminal:\n{err[:2000]}"

    kept = _records(home)
    expected = [f"before-{i:05d}" for i in range(before)] + [f"p{n}-{i:05d}" for n in range(PROCESSES) for i in range(RECORDS)]
    assert len(kept) == len(set(kept)), "a record was written twice"
    missing = set(expected) - set(kept)
    assert not missing, f"{len(missing)} of {len(expected)} records lost, e.g. {sorted(missing)[:3]}"
    for tag in ("before", *(f"p{n}" for n in range(PROCESSES))):
        mine = [r for r in kept if r.startswith(f"{tag}-")]
        assert mine == sorted(mine), f"the records of {tag} are out of order across the rotated files"

    files = [p for p in _log_files(home) if p.exists()]
    assert len(files) >= 3, "the log did not rotate at least twice"
    for path in files[1:]:
        assert path.stat().st_size < 2 * MAX_BYTES, path
    leftovers = [p.name for p in home.iterdir() if p not in files and not p.name.startswith(".")]
    assert leftovers == [], leftovers
    for path in home.iterdir():  # the log, its old files and the lock file: 0600 like every file of the home
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, (path.name, oct(path.stat().st_mode))


def test_a_log_that_cannot_be_written_prints_nothing_on_the_terminal(tmp_path):
    """A log in the way (a folder named resolver.log) loses the record, never prints logging's
    "--- Logging error ---" traceback on the terminal; the command goes on."""
    home = tmp_path / "home"
    (home / LOG_NAME).mkdir(parents=True)
    script = (
        "from core.ground.log import command_log\n"
        "import sys\n"
        "log = command_log(sys.argv[1])\n"
        "log.error('an error to log')\n"
        "log.info('and more')\n"
        "print('went on')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(home)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "went on\n" and done.stderr == "", done.stderr


def test_a_home_whose_log_cannot_be_made_prints_nothing_on_the_terminal(tmp_path):
    """No handler at all (the home's folder cannot hold a log) must not fall back to logging's
    last-resort handler, which prints warnings and errors on stderr."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    script = (
        "from core.ground.log import command_log\n"
        "import sys\n"
        "log = command_log(sys.argv[1])\n"
        "log.error('an error to log')\n"
        "print('went on')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(blocker / "home")], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "went on\n" and done.stderr == "", done.stderr


def test_a_librarys_warning_goes_to_the_homes_log_never_to_the_terminal(tmp_path):
    """psycopg_pool warned ``discarding closed connection: <psycopg.Connection [BAD] ...>`` on the
    terminal of a watcher whose connection the server ended (logging's last resort prints a
    warning of a logger without a handler on stderr). In a fresh process, as a command is."""
    script = (
        "import logging, sys\n"
        "from core.ground.log import command_log\n"
        "command_log(sys.argv[1])\n"
        "logging.getLogger('psycopg.pool').warning('discarding closed connection: <psycopg.Connection [BAD] at 0x1>')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == "", done
    assert "psycopg.pool: discarding closed connection" in (tmp_path / LOG_NAME).read_text(encoding="utf-8")
