"""The CLI shows before it pays: in a shop home ``approve`` and ``reject`` print the actions,
amounts, role needed, what changed and the digest, then ask ``Approve? [y/N]`` on a terminal;
``--yes`` and ``--digest`` skip the question; without a terminal and without either they refuse.
The cheap refusals come before the passphrase. Names as people type them: NFC, case-folded, the
nearest registered names suggested."""

from __future__ import annotations

import io
import unicodedata

import pytest
from core.api.home import Home
from core.engine import signing

from helpers import T65273_RUN, shop_cli

TOMAS, GRACE = "tomas-passphrase", "grace-passphrase"


class Terminal(io.StringIO):
    """A stdin that is a terminal, answering ``answer``."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def shop(tmp_path, capsys, monkeypatch):
    """A shop home with the owner Grace and the team lead Tomás; T-65273 waits."""
    run = shop_cli(tmp_path / "shop", capsys, monkeypatch)
    assert run("init", "--shop")[0] == 0
    assert run("approvers", "init", "--name", "Grace", passphrase=GRACE)[0] == 0
    assert run("approvers", "add", "Tomás", "--role", "team_lead", passphrase=TOMAS, owner=GRACE)[0] == 0
    assert run("run", "T-65273")[0] == 0
    return run


def _status(shop) -> str:
    return Home(shop.root).queue.load(T65273_RUN).status


def _asked(monkeypatch) -> list[str]:
    """Record every passphrase prompt (none must come before a cheap refusal)."""
    prompts: list[str] = []
    real = signing.read_passphrase

    def read(prompt, **kw):
        prompts.append(prompt)
        return real(prompt, **kw)

    monkeypatch.setattr(signing, "read_passphrase", read)
    return prompts


def test_approve_on_a_terminal_shows_the_request_and_asks(shop, monkeypatch):
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, err = shop("approve", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 0, err
    shown = out.split("Approve? [y/N]")[0]
    digest = Home(shop.root).queue.load(T65273_RUN).proposal.digest
    for needle in (
        "Actions (nothing has happened yet):",
        "request_refund       LK-507862  119.00 CAD",
        "Who may approve: team lead or above",
        "What changed since the agent looked:",
        f"Digest: {digest[:12]} (sha256 {digest})",
        "Approving as: Tomás (role team lead)",
    ):
        assert needle in shown, needle
    assert "Approve? [y/N]" in out and _status(shop) == "done"


def test_no_at_the_question_pays_nothing(shop, monkeypatch):
    monkeypatch.setattr("sys.stdin", Terminal("\n"))
    prompts = _asked(monkeypatch)
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 4 and "Not approved: you answered No. Nothing changed." in err
    assert _status(shop) == "waiting_approval" and prompts == []


def test_without_a_terminal_and_without_yes_or_digest_it_refuses_with_a_sentence(shop):
    code, _out, err = shop("approve", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 4 and "there is no terminal to ask on" in err and "--digest" in err and "--yes" in err
    assert "Traceback" not in err and _status(shop) == "waiting_approval"
    code, _, err = shop("reject", T65273_RUN, "--name", "Tomás", "--reason", "no", passphrase=TOMAS)
    assert code == 4 and "Nothing was rejected: there is no terminal to ask on" in err


def test_yes_skips_the_question(shop):
    code, out, err = shop("approve", T65273_RUN, "--name", "Tomás", "--yes", passphrase=TOMAS)
    assert code == 0, err
    assert "Digest: " in out and "Approve? [y/N]" not in out and _status(shop) == "done"


def test_digest_binds_what_was_read_and_skips_the_question(shop, monkeypatch):
    digest = Home(shop.root).queue.load(T65273_RUN).proposal.digest
    prompts = _asked(monkeypatch)
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--digest", "0123456789ab", passphrase=TOMAS)
    assert code == 4 and "is not the current proposal's" in err and prompts == []  # before the passphrase
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--digest", digest[:12], passphrase=TOMAS)
    assert code == 0, err
    assert Home(shop.root).queue.load(T65273_RUN).approval.digest == digest


def test_reject_shows_the_reply_on_its_own_line_and_asks(shop, monkeypatch):
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, err = shop("reject", T65273_RUN, "--name", "Tomás", "--reason", "wrong order", passphrase=TOMAS)
    assert code == 0, err
    assert "Reply to the customer: the reply will not be sent." in out and "Reject? [y/N]" in out
    assert "  │ wrong order" in out and _status(shop) == "handed_to_person"


def test_cheap_refusals_come_before_the_passphrase(shop, monkeypatch):
    prompts = _asked(monkeypatch)
    assert shop("approve", T65273_RUN, "--name", "Tomás", "--yes", passphrase=TOMAS)[0] == 0
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--yes", passphrase=TOMAS)
    assert code == 4 and "was already approved by Tomás (role team lead)" in err
    assert len(prompts) == 1  # the first approval's only
    assert shop("run", "T-65273")[0] == 0  # a second run of the ticket: one effect per ticket
    second = "T-65273-agent-chat-small-2"
    code, _, err = shop("approve", second, "--name", "Tomás", "--yes", passphrase=TOMAS)
    assert code == 4 and len(prompts) == 1, err


@pytest.mark.parametrize("reason", ["", "   "])
def test_a_rejection_without_a_reason_is_refused_before_the_passphrase(shop, monkeypatch, reason):
    """A new user's finding: a blank reason asked Tomás's passphrase first, then refused."""
    prompts = _asked(monkeypatch)
    code, _, err = shop("reject", T65273_RUN, "--name", "Tomás", "--yes", "--reason", reason, passphrase=TOMAS)
    assert code == 4 and "A rejection needs a reason" in err and prompts == [], err
    assert _status(shop) == "waiting_approval"


@pytest.mark.parametrize("run", ["T-00000-nope-1", "settled"])
def test_refresh_of_an_unknown_or_settled_run_is_refused_before_the_passphrase(shop, monkeypatch, run):
    """A new user's finding: ``refresh`` of a run that does not exist asked the passphrase first."""
    if run == "settled":
        assert shop("reject", T65273_RUN, "--name", "Tomás", "--yes", "--reason", "wrong order", passphrase=TOMAS)[0] == 0
        run = T65273_RUN
    prompts = _asked(monkeypatch)
    code, _, err = shop("refresh", run, "--name", "Tomás", passphrase=TOMAS)
    assert code in (1, 4) and prompts == [] and ("No run T-00000-nope-1" in err or "rejected" in err), err


def test_a_role_too_low_is_refused_before_the_passphrase(shop, monkeypatch):
    assert shop("approvers", "add", "Bot", "--role", "agent", passphrase="bot-passphrase", owner=GRACE)[0] == 0
    prompts = _asked(monkeypatch)
    code, _, err = shop("approve", T65273_RUN, "--name", "Bot", "--yes", passphrase="bot-passphrase")
    assert code == 4 and "needs team lead or above" in err and prompts == []


def test_expired_evidence_is_refused_before_the_passphrase(shop, monkeypatch):
    from core.api import queue

    real = queue.load_policy  # a policy under which any evidence is too old
    monkeypatch.setattr(queue, "load_policy", lambda: real().model_copy(update={"evidence_max_age_s": -1}))
    prompts = _asked(monkeypatch)
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--yes", passphrase=TOMAS)
    assert code == 4 and "Refresh it first" in err and prompts == [], err


def test_an_unknown_name_gets_the_nearest_registered_one(shop):
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomas", "--yes", passphrase=TOMAS)
    assert code == 4 and "Tomas is not an approver of this shop home (did you mean Tomás?)" in err


def test_a_decomposed_name_is_the_registered_one(shop):
    decomposed = unicodedata.normalize("NFD", "Tomás")
    code, _out, err = shop("approve", T65273_RUN, "--name", decomposed, "--yes", passphrase=TOMAS)
    assert code == 0, err
    code, _, err = shop(
        "approvers", "add", unicodedata.normalize("NFD", "Zoë"), "--role", "agent", passphrase="zoe-passphrase", owner=GRACE
    )
    assert code == 0, err
    code, _, err = shop(
        "approvers", "add", unicodedata.normalize("NFD", "TOMÁS"), "--role", "agent", passphrase="x-passphrase-long", owner=GRACE
    )
    assert code != 0 and "already in the registry" in err


@pytest.mark.parametrize("key", ["ctrl-d", "ctrl-c"])
def test_ending_the_input_at_the_question_or_the_passphrase_is_a_sentence(shop, monkeypatch, key):
    """A new user's finding: Ctrl-D at the passphrase ended in "resolver stopped on an
    unexpected error (EOFError)", and Ctrl-C at ``Approve? [y/N]`` advised `resolver resume RUN`
    although nothing had started. Both are a refusal now, exit 4, nothing changed."""
    monkeypatch.delenv(signing.PASSPHRASE_ENV, raising=False)
    error = EOFError if key == "ctrl-d" else KeyboardInterrupt

    def ended(*_args, **_kwargs):
        raise error

    monkeypatch.setattr("sys.stdin", Terminal(""))
    monkeypatch.setattr("builtins.input", ended)
    code, out, err = shop("approve", T65273_RUN, "--name", "Tomás")
    assert code == 4 and "unexpected error" not in err and "resume" not in err, (out, err)
    monkeypatch.setattr("builtins.input", lambda _q: "y")
    monkeypatch.setattr(signing, "getpass", ended)
    code, out, err = shop("approve", T65273_RUN, "--name", "Tomás")
    assert code in (1, 4) and "unexpected error" not in err and "nothing changed" in err, (out, err)
    assert _status(shop) == "waiting_approval"


def test_under_json_the_question_goes_to_stderr_and_stdout_is_only_the_json(shop, monkeypatch):
    """A new user's trial: under --json on a terminal, ``Approve? [y/N]`` was written to stdout
    before the result, so the output was not JSON."""
    import json

    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, err = shop("approve", T65273_RUN, "--name", "Tomás", "--json", passphrase=TOMAS)
    assert code == 0, err
    assert "Approve? [y/N]" in err and "Approve? [y/N]" not in out
    assert json.loads(out)["status"] and _status(shop) == "done"


def test_a_claim_of_a_done_run_in_a_shop_home_is_refused_before_the_passphrase(shop, monkeypatch):
    """A trial finding: ``claim`` of a done run asked for the passphrase, then said there was
    nothing to claim."""
    code, _, err = shop("approve", T65273_RUN, "--name", "Tomás", "--yes", passphrase=TOMAS)
    assert code == 0, err
    prompts = _asked(monkeypatch)
    code, _, err = shop("claim", T65273_RUN, "--name", "Tomás", passphrase=TOMAS)
    assert code == 4 and "there is nothing to claim" in err, err
    assert prompts == []
