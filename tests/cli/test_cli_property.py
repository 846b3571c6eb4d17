"""Property-based: the ``resolver`` command fed arbitrary text, bytes, amounts and IDs never prints
a traceback and never writes a raw control byte to stdout or stderr.

Bounded so it runs in seconds: few examples per property, no deadline (the first call builds a
home). One home is shared by the examples of a property; each example may only be refused or
change that practice home the way the command says.
"""

from __future__ import annotations

import os

import pytest
from core.cli import EXIT_CODES, main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import T65273_RUN

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CONTROL = {*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)}

# Text as a terminal could send it: any Unicode, lone surrogates for bytes that are not UTF-8
# (Python's surrogateescape), and the escape sequences a hostile ticket or a paste would hold.
ESCAPES = st.sampled_from(["\x1b]52;c;cm0gLXJm\x07", "\x1b[2J", "\x1b[31m", "\x9b1m", "\r", "\x00", "\x08", "\udce9", "\udcff"])
TEXT = st.lists(st.one_of(st.text(max_size=8), ESCAPES), max_size=4).map("".join)
BYTES_AS_ARG = st.binary(max_size=12).map(lambda b: os.fsdecode(b.replace(b"\x00", b"")))


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("prop") / "home"
    assert main(["clock", "set", "2026-10-09T17:00:00-04:00", "--home", str(root)]) == 0
    assert main(["run", "T-65273", "--home", str(root)]) == 0
    return root


def _check(capsys, home, argv: list[str]) -> None:
    capsys.readouterr()
    try:
        code = main([*argv, "--home", str(home)])
    except SystemExit as exit_:  # argparse's own usage error: exit 2 with its usage text
        code = exit_.code
    out, err = capsys.readouterr()
    assert code in EXIT_CODES, (argv, code)
    assert "Traceback" not in out + err, argv
    bad = [hex(ord(c)) for c in out + err if ord(c) in CONTROL]
    assert not bad, (argv, bad)


@SETTINGS
@given(reason=TEXT, name=TEXT)
def test_reject_with_any_text(home, capsys, reason, name):
    _check(capsys, home, ["reject", T65273_RUN, "--as", "agent", "--name", name, "--reason", reason, "--digest", "x" + reason])


@SETTINGS
@given(search=st.one_of(TEXT, BYTES_AS_ARG), limit=st.integers(-5, 5))
def test_runs_with_any_search(home, capsys, search, limit):
    _check(capsys, home, ["runs", "--search", search, "--limit", str(limit)])


@SETTINGS
@given(amount=st.one_of(TEXT, st.decimals(allow_nan=True).map(str), st.floats().map(str), st.integers().map(str)), operation=TEXT)
def test_manual_refund_with_any_amount_and_id(home, capsys, amount, operation):
    _check(capsys, home, ["manual-refund", operation or "m", "LK-000000", amount, "RFD-DOUBLE", "PAY-000000-9"])


@SETTINGS
@given(run_id=st.one_of(TEXT, BYTES_AS_ARG), command=st.sampled_from(["show", "trace", "resume", "audit"]))
def test_any_run_id(home, capsys, run_id, command):
    _check(capsys, home, [command, run_id])


@SETTINGS
@given(when=TEXT, duration=TEXT)
def test_the_clock_with_any_text(home, capsys, when, duration):
    _check(capsys, home, ["clock", "set", when])
    _check(capsys, home, ["clock", "advance", duration])
    _check(capsys, home, ["clock", "set", "2026-10-09T17:00:00-04:00"])


@pytest.mark.parametrize(
    "argv", [["show", "-\x1b]52;c;eA==\x07"], ["runs", "--bogus\x1b[2J"], ["\x1b[31mnope"], ["approve", "X", "--as", "\x1b[31m"]]
)
def test_argparse_never_echoes_a_control_character(home, capsys, argv):
    _check(capsys, home, argv)
