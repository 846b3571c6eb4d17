"""Recordings of one's own: ``resolver record`` runs a ticket live and keeps its turns as a
recording of the data format in the home; a replay gives the same proposal and digest."""

from __future__ import annotations

import json
import stat

import pytest
from core.engine.runner import LoopCrash, crash_after_step, outcome_line
from core.ground.data import TicketRecordings, data_dir
from core.ground.errors import ShopRefused

from helpers import stub_config, stub_route

SEED_OUTCOME = "resolve (rule W7) | 3 model call(s), 2 tool call(s) | 7155 tokens in, 192 out | US$0.00081"


def test_record_then_a_recorded_replay_give_the_same_proposal_and_digest(home, stub):
    done = home.record("T-65273", stub_route(stub))
    assert stub.calls == 3 and done.state.run_id == "T-65273-agent-stub-1"
    r = done.recording
    assert (r.variant, r.model, r.repeat, len(r.turns)) == ("agent", "chat-small", 4, 3)  # after the shipped 1-3
    assert done.path == home.root / "recordings" / "T-65273.json"
    assert stat.S_IMODE(done.path.stat().st_mode) == 0o600
    written = json.loads(done.path.read_text())
    TicketRecordings.model_validate(written)  # the data format
    raw = json.loads((data_dir() / "recordings" / "T-65273.json").read_text())
    shipped = next(x for x in raw["runs"] if (x["variant"], x["model"], x["repeat"]) == ("agent", "chat-small", 1))
    assert written["runs"][0]["turns"] == shipped["turns"]  # the stub replays #1, written as the data writes it
    replay = home.run("T-65273", model="chat-small", repeat=4)
    assert stub.calls == 3  # a replay asks no server
    assert replay.run_id == "T-65273-agent-chat-small-1"
    assert replay.proposal == done.state.proposal and replay.proposal.digest == done.state.proposal.digest
    assert outcome_line(replay) == outcome_line(done.state) == SEED_OUTCOME
    again = home.record("T-65273", stub_route(stub))
    assert again.recording.repeat == 5 and len(json.loads(again.path.read_text())["runs"]) == 2


def test_a_recorded_repeat_survives_a_resume_and_reset_all_keeps_the_recordings(home, stub):
    home.record("T-65273", stub_route(stub))
    with pytest.raises(LoopCrash):
        home.run("T-65273", model="chat-small", repeat=4, on_step=crash_after_step(1))
    assert outcome_line(home.resume("T-65273-agent-chat-small-1").state) == SEED_OUTCOME
    home.reset(everything=True)
    assert (home.root / "recordings" / "T-65273.json").is_file()
    assert home.run("T-65273", model="chat-small", repeat=4).proposal is not None


def test_the_cli_records_and_says_how_to_replay(cli, stub, tmp_path, monkeypatch):
    monkeypatch.setenv("RESOLVER_CONFIG", str(stub_config(tmp_path / "config.toml", stub.url)))
    code, out, err = cli("record", "T-65273", "--model", "stub")
    assert code == 0, err
    assert f"Run T-65273-agent-stub-1: {SEED_OUTCOME}" in out
    assert "Recorded as T-65273 agent/chat-small#4 (3 turns) in " in out
    assert "Replay it with: resolver run T-65273 --variant agent --model chat-small --repeat 4" in out
    code, out, err = cli("run", "T-65273", "--model", "chat-small", "--repeat", "4")
    assert code == 0 and SEED_OUTCOME in out, err
    code, _, err = cli("record", "T-65273", "--model", "chat-small")
    assert code == 2 and "resolver record runs a live model, and chat-small is not one" in err


def test_a_run_without_the_models_outcome_is_not_recorded(home, stub):
    from core.ground.errors import ResolverError

    with pytest.raises(ResolverError, match="ended stopped without the model's outcome; nothing was recorded"):
        _record_capped(home, stub)
    assert not (home.root / "recordings" / "T-65273.json").exists()


def _record_capped(home, stub):
    from core.models.record import turns_of

    state = home.run("T-65273", live=stub_route(stub), max_steps=2)
    return turns_of(home.store, state)


def test_a_shop_home_refuses_record(tmp_path, stub, clock):
    from core.api.home import Home
    from core.api.homekind import init_home

    init_home(tmp_path / "shop", shop=True)
    with pytest.raises(ShopRefused):
        Home(tmp_path / "shop", clock=clock).record("T-65273", stub_route(stub))
    assert stub.calls == 0
