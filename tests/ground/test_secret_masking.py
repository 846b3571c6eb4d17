"""No password of a store URL is written anywhere: not in ``resolver.log``, not on stdout or
stderr, not in ``--json``, not in ``doctor``, not in an error sentence.

Observed before: ``--store postgresql://u:pw@host/db`` was masked on the screen but written in
clear to ``resolver.log`` (the command line is logged). The team store's server trusts local
connections, so a URL carrying a password still reaches it and every command runs for real.
"""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from core.ground.masking import mask_text, mask_url, passwords_of

from helpers import T65273_RUN, run_process
from pg import fresh_schema, with_password

PASSWORDS = {
    "plain": ("s3cret-Pw-71", ("s3cret-Pw-71",)),
    "special": ("Qx%40v:w%3Az9-Kp", ("Qx%40v:w%3Az9-Kp", "Qx@v:w:z9-Kp")),
}
"""Passwords in the user part: as written in the URL, and every spelling that must never be
written (an encoded ``@`` and ``:`` and a bare ``:``, decoded as libpq reads them)."""


@pytest.fixture
def url():
    with fresh_schema() as made:
        yield made


def _user(url: str) -> str:
    with psycopg.connect(url) as conn:
        return str(conn.execute("SELECT current_user").fetchone()[0])  # type: ignore[index]


def _with_password(url: str, password: str) -> str:
    """``url`` with ``password`` in its user part (the server trusts local users: it is not checked)."""
    return with_password(url, password, _user(url))


def _written(home: Path) -> str:
    """Everything the home folder holds (the log and its old files, every other file) as text."""
    return "\n".join(p.read_text(errors="replace") for p in sorted(home.rglob("*")) if p.is_file())


def _commands(home: Path, store: str, env: dict[str, str] | None = None) -> str:
    """Run real commands against ``store``; returns every stdout and stderr, each checked to succeed."""
    said = []
    for argv in (
        ["run", "T-65273", "--store", store],
        ["runs", "--store", store],
        ["runs", "--json", "--store", store],
        ["show", T65273_RUN, "--store", store],
        ["show", T65273_RUN, "--json", "--store", store],
        ["doctor", "--store", store],
        ["doctor", "--json", "--store", store],
        ["audit", "verify", "--store", store],
        ["show", "T-00000-no-such-run", "--store", store],  # an error sentence
    ):
        done = run_process(home, *argv, env=env)
        assert done.returncode == (1 if "T-00000-no-such-run" in argv else 0), (argv, done.stdout, done.stderr)
        said.append(done.stdout + done.stderr)
    return "\n".join(said)


@pytest.mark.parametrize("kind", sorted(PASSWORDS))
def test_a_password_in_the_user_part_is_written_nowhere(url, tmp_path, kind):
    password, never = PASSWORDS[kind]
    store = _with_password(url, password)
    home = tmp_path / "h"
    said = _commands(home, store)
    log = (home / "resolver.log").read_text()
    assert "--store" in log and ":***@" in log  # the command lines are logged, masked
    assert f"Store: {mask_url(store)} (from --store)" in said
    for secret in never:
        assert secret not in said and secret not in _written(home), secret


def test_a_password_parameter_and_the_environment_are_masked_too(url, tmp_path):
    store = f"{url}&password=Kw-pass-parameter-42"
    home = tmp_path / "h"
    said = _commands(home, store)
    done = run_process(home, "doctor", env={"RESOLVER_STORE": _with_password(url, "Env-s3cret-9")})
    assert done.returncode == 0, done.stdout + done.stderr
    said += done.stdout + done.stderr
    assert "password=***" in said and ":***@" in said
    for secret in ("Kw-pass-parameter-42", "Env-s3cret-9"):
        assert secret not in said and secret not in _written(home), secret


def test_a_url_libpq_cannot_read_is_refused_without_its_password(url, tmp_path):
    """libpq quotes what it could not read (``invalid percent-encoded token: "..."``, the whole
    URI for a broken host); a password with a bare ``@`` would be read up to it, the rest taken
    for the host and printed in its error."""
    home = tmp_path / "h"
    cases = {
        _with_password(url, "Bad%zzToken-77"): "Bad%zzToken-77",
        _with_password(url, "At@Sign-88"): "Sign-88",
        "postgresql://root:Ipv6-secret-5@[::1/test": "Ipv6-secret-5",
        "host=127.0.0.1 password=Kw-conninfo-66 dbname=test": "Kw-conninfo-66",
    }
    for store, secret in cases.items():
        for argv in (["runs"], ["doctor"], ["doctor", "--json"], ["run", "T-65273"]):
            done = run_process(home, *argv, "--store", store)
            assert done.returncode in (1, 2), (store, argv, done.stdout, done.stderr)
            assert done.stderr.strip() or "FAIL" in done.stdout, (store, argv)
            assert "Traceback" not in done.stderr
            assert secret not in done.stdout + done.stderr, (store, argv, done.stdout, done.stderr)
    assert not home.exists() or all(secret not in _written(home) for secret in cases.values())


def test_an_unexpected_error_logs_its_traceback_masked(url, tmp_path, capsys, monkeypatch):
    """A traceback quotes the exception's text; one carrying the store's URL is masked in the log."""
    import core.cli.approver as cli  # the handler is read from its module when it runs
    from core.cli import main

    store = _with_password(url, "Trace-s3cret-3")
    assert main(["run", "T-65273", "--home", str(tmp_path / "h"), "--store", store]) == 0

    def broken(home, args):
        raise RuntimeError(f"cannot use {store} (password=Trace-s3cret-3)")

    monkeypatch.setattr(cli, "cmd_runs", broken)
    assert main(["runs", "--home", str(tmp_path / "h"), "--store", store]) == 1
    out, err = capsys.readouterr()
    log = (tmp_path / "h" / "resolver.log").read_text()
    assert "RuntimeError" in log and "Traceback" in log and "RuntimeError" in err
    assert "Trace-s3cret-3" not in log + out + err


@pytest.mark.parametrize(
    ("text", "masked"),
    [
        ("postgresql://grace:s3cret@db/shop", "postgresql://grace:***@db/shop"),
        (
            "postgresql://grace:s3%40c:r%3At@db:5432/shop?options=-csearch_path%3Dx",
            "postgresql://grace:***@db:5432/shop?options=-csearch_path%3Dx",
        ),
        ("postgresql:///shop?sslmode=require&password=s3cret", "postgresql:///shop?sslmode=require&password=***"),
        ("postgresql://grace@db/shop?PassWord=s3cret&x=1", "postgresql://grace@db/shop?PassWord=***&x=1"),
        ("postgresql://grace:pw@[::1/shop", "postgresql://grace:***@[::1/shop"),
        ("host=db password='two words' dbname=shop", "host=db password=*** dbname=shop"),
        ("postgresql://grace@db/shop", "postgresql://grace@db/shop"),
        ("postgresql:///shop", "postgresql:///shop"),
    ],
)
def test_mask_url_masks_every_password_and_keeps_the_rest(text, masked):
    assert mask_url(text) == masked
    assert mask_text(f'error: "{text}".') == f'error: "{masked}".'


def test_mask_text_masks_the_passwords_of_a_url_wherever_a_message_quotes_them():
    url = "postgresql://grace:s3%zzcret@db/shop"
    assert passwords_of(url) >= {"s3%zzcret"}
    assert mask_text('invalid percent-encoded token: "s3%zzcret"', [url]) == 'invalid percent-encoded token: "***"'
    assert passwords_of("postgresql://grace:a%40b@db/shop") >= {"a%40b", "a@b"}
    assert mask_text("nothing secret here", [None, "postgresql://grace@db/shop"]) == "nothing secret here"
