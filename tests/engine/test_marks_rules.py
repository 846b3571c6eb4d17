"""Marks follow the decision rules: a claim, a set-aside (snooze) and a hand-over need the role the
run's proposal needs (the rulebook decides: :func:`core.engine.rulebook.may_mark`), a hand-over to
someone who may not decide the run is refused with a sentence naming them and the role needed
(:func:`core.engine.rulebook.may_receive`), and a mark never takes a run out of the queue of those who
may decide it without saying so there (``runs`` says how many, the watchers of all who may decide
a handed-over run hear of it).

T-65273's proposal needs a team lead: Bob (agent) may neither decide it nor mark it; Ana (team
lead) may. On the CLI a refused mark is exit 4, as a refused decision, with one sentence on
stderr; in a shop home it is refused before the passphrase is asked. Each shop test runs on the
home folder's SQLite store and on a PostgreSQL team store of its own (skipped without a server).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from core.engine.marks import read_marks
from core.engine.rulebook import MARK_ACTIONS, may_mark, may_receive
from core.engine.watch import Event, relevant
from core.ground.errors import ApprovalRefused
from core.stores import BACKENDS

from helpers import T65273_RUN, shop_cli
from pg import team_store

RUN = T65273_RUN
GRACE, ANA, BOB, CARL = "grace-passphrase", "ana-passphrase", "bob-passphrase", "carl-passphrase"
NEEDS = "needs team lead or above"


@pytest.fixture(params=BACKENDS)
def shop(request, tmp_path, capsys, monkeypatch):
    """A shop home (on ``sqlite``: its folder's files; on ``postgres``: a team store of its own)
    with Grace (owner), Ana and Carl (team leads) and Bob (agent), and T-65273 waiting."""
    with team_store(request.param) as url:
        run = shop_cli(tmp_path / "shop", capsys, monkeypatch)

        def on(*argv: str, **kw: str | None) -> tuple[int, str, str]:
            return run(*argv, *(["--store", url] if url else []), **kw)

        assert on("init", "--shop")[0] == 0
        assert on("approvers", "init", passphrase=GRACE)[0] == 0
        for name, role, pw in (("Ana", "team_lead", ANA), ("Bob", "agent", BOB), ("Carl", "team_lead", CARL)):
            code, _, err = on("approvers", "add", name, "--role", role, passphrase=pw, owner=GRACE)
            assert code == 0, err
        assert on("run", "T-65273")[0] == 0
        on.root, on.url = run.root, url  # type: ignore[attr-defined]
        yield on


def test_the_rulebook_asks_for_the_decisions_role_for_each_mark_and_of_the_recipient(tmp_path, clock):
    from core.api.home import Home

    home = Home(tmp_path / "home", clock)
    home.run("T-65273")
    state = home.queue.view(RUN)
    assert MARK_ACTIONS == ("claim", "handover", "snooze")
    assert may_mark(state, "agent", "claim") == (
        f"You are agent: run {RUN} needs team lead or above to claim it, as to approve or reject it. Nothing was claimed."
    )
    assert "to set it aside" in (may_mark(state, "agent", "snooze") or "")
    assert "to hand it over" in (may_mark(state, "agent", "handover") or "")
    assert [may_mark(state, role, a) for role in ("team_lead", "grace") for a in MARK_ACTIONS] == [None] * 6
    assert may_mark(state, "agent", "release") is None  # giving a run back needs no role
    assert may_receive(state, "Bob", "agent") == (
        f"Bob (role agent) may not decide run {RUN}: it needs team lead or above; hand it to someone who may. "
        "Nothing was handed over."
    )
    assert may_receive(state, "Ana", "team_lead") is None
    assert may_receive(state, "Bob", None) is None  # a practice home's names have no registered role


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_a_practice_home_an_agent_may_not_claim_snooze_or_hand_over_a_team_leads_run(backend, tmp_path, clock):
    from core.api.home import Home

    with team_store(backend) as url:
        home = Home(tmp_path / "home", clock, store=url)
        home.run("T-65273")
        until = clock.now() + timedelta(hours=2)
        for kind, args in (("claim", {}), ("snooze", {"until": until}), ("handover", {"to": "Ana", "note": "yours"})):
            with pytest.raises(ApprovalRefused, match=f"^You are agent: run {RUN} {NEEDS} to "):
                home.mark(kind, RUN, "agent", "Bob", **args)
        state = home.store.load(RUN)
        assert read_marks(home.store, state).version == 0  # nothing was written
        assert not [r for r in home.store.audit(RUN) if r["decision"] in ("claim", "handover", "snooze")]
        assert home.mark("claim", RUN, "team_lead", "Ana").claimed(clock.now())
        assert home.mark("release", RUN, "team_lead", "Ana").version == 2


def test_in_a_shop_home_an_agents_claim_and_snooze_are_refused_before_the_passphrase(shop):
    for argv in (("claim", RUN), ("snooze", RUN, "--until", "167h")):
        code, out, err = shop(*argv, "--name", "Bob")  # no passphrase given: the rule refuses first
        assert code == 4 and out == "", (code, out, err)
        assert err.startswith(f"You are agent: run {RUN} {NEEDS} to ") and err.count("\n") == 1, err
        assert "Traceback" not in err
    code, _, err = shop("claim", RUN, "--name", "Bob", passphrase=BOB)
    assert code == 4 and NEEDS in err
    code, out, err = shop("claim", RUN, "--name", "Ana", passphrase=ANA)  # Bob's refusal left nothing standing
    assert code == 0 and out.startswith(f"Claimed {RUN}."), err
    code, out, _ = shop("runs", "--mine", "--name", "Carl")
    assert out.startswith(RUN) and "(claimed by Ana)" in out


def test_a_hand_over_to_someone_who_may_not_decide_is_refused_naming_them_and_the_role(shop):
    code, out, err = shop("handover", RUN, "--name", "Ana", "--to", "bob", "--note", "yours")
    assert code == 4 and out == ""
    assert err == (
        f"Bob (role agent) may not decide run {RUN}: it needs team lead or above; hand it to someone who may. "
        "Nothing was handed over.\n"
    )
    code, out, err = shop("handover", RUN, "--name", "Ana", "--to", "Carl", "--note", "yours", passphrase=ANA)
    assert code == 0 and out.startswith(f"Handed {RUN} to Carl."), err
    assert shop("runs", "--mine", "--name", "Carl")[1].startswith(RUN)
    code, _, err = shop("handover", RUN, "--name", "Bob", "--to", "Ana", "--note", "back", passphrase=BOB)
    assert code == 4 and f"You are agent: run {RUN} {NEEDS} to hand it over" in err


def test_the_core_refuses_as_the_app_calls_it_with_an_unlocked_key(shop):
    """The app calls :meth:`core.api.home.Home.mark` with the unlocked key: the same sentences."""
    from core.api.home import Home

    home = Home(shop.root, store=shop.url)
    ana = home.unlock("Ana", ANA)
    with pytest.raises(ApprovalRefused, match=r"^Bob \(role agent\) may not decide run "):
        home.mark("handover", RUN, "team_lead", "Ana", signer=ana, to="Bob", note="yours")
    bob = home.unlock("Bob", BOB)
    with pytest.raises(ApprovalRefused, match=f"^You are agent: run {RUN} {NEEDS} to set it aside"):
        home.mark("snooze", RUN, "agent", "Bob", signer=bob, until=home.clock.now() + timedelta(hours=1))
    assert read_marks(home.store, home.store.load(RUN)).version == 0


def test_a_hand_over_reaches_the_watchers_of_all_who_may_decide_it():
    event = Event(1, "handover", RUN, "2026-10-09T17:00:00-04:00", name="Ana", to_name="Carl", required_role="team_lead")
    assert relevant(event, "team_lead", "Carl")  # its recipient
    assert relevant(event, "team_lead", "Dana")  # it leaves her "mine": she may decide it
    assert relevant(event, "grace", "Grace")
    assert not relevant(event, "agent", "Bob")  # he may not decide it
    assert not relevant(event, "team_lead", "Ana")  # her own hand-over


def test_runs_says_how_many_runs_you_may_decide_a_mark_keeps_out_of_the_listing(shop):
    hidden = "(not listed here; `resolver runs` lists every run with its marks)."
    assert shop("claim", RUN, "--name", "Ana", passphrase=ANA)[0] == 0
    code, out, _ = shop("runs", "--mine", "--name", "Carl")
    assert code == 0 and out.splitlines()[-1] == "Of the waiting runs you may decide: 1 claimed by someone else."
    assert "Of the waiting runs" not in shop("runs", "--mine", "--name", "Ana")[1]  # her own claim
    assert shop("handover", RUN, "--name", "Ana", "--to", "Carl", "--note", "yours", passphrase=ANA)[0] == 0
    code, out, _ = shop("runs", "--mine", "--name", "Ana")
    assert out.splitlines() == [
        "None of the 1 saved run(s) is waiting for a decision you may make.",
        f"Of the waiting runs you may decide: 1 handed to someone else {hidden}",
    ]
    assert shop("snooze", RUN, "--name", "Carl", "--until", "2h", passphrase=CARL)[0] == 0
    code, out, _ = shop("runs", "--mine", "--name", "Carl")
    assert out.splitlines()[-1] == f"Of the waiting runs you may decide: 1 set aside until later {hidden}"
    code, out, _ = shop("runs", "--mine", "--name", "Bob")  # he may not decide it: nothing is kept from him
    assert code == 0 and "Of the waiting runs" not in out
    code, out, _ = shop("runs", "--status", "waiting_approval")
    assert out.splitlines()[-1] == f"Of the waiting runs: 1 set aside until later {hidden}"
    code, out, _ = shop("runs")  # every run, listed with its marks: nothing to add
    assert out.rstrip().endswith("(to Carl, snoozed)") and "Of the waiting runs" not in out


def test_a_claim_left_by_someone_who_may_not_decide_does_not_keep_those_who_may_from_claiming(tmp_path, clock):
    """A claim made before marks needed the decision's role (Bob's, as an agent, written as the
    store kept it then) no longer blocks Ana's: hers replaces it. One by a colleague who may
    decide still refuses."""
    from core.api.home import Home

    home = Home(tmp_path / "home", clock)
    home.run("T-65273")
    state = home.store.load(RUN)
    now = clock.now()
    row = {
        "run_id": RUN,
        "run_uid": state.run_uid,
        "claimed_by": "Bob",
        "claimed_role": "agent",
        "claimed_at": now.isoformat(),
        "claim_until": (now + timedelta(minutes=30)).isoformat(),
    }
    audit = {"run_id": RUN, "decision": "claim", "role": "agent", "name": "Bob", "digest": "", "at": now.isoformat()}
    home.store.put_marks(row, {**audit, "detail": "", "run_uid": state.run_uid}, version=0)
    assert read_marks(home.store, state).claimed(now)
    assert home.mark("claim", RUN, "team_lead", "Ana").claimed_by == "Ana"
    with pytest.raises(ApprovalRefused, match=r"^Ana is on it \(claimed "):
        home.mark("claim", RUN, "grace", "Grace")
