"""The queue's events and the watcher on every back-end: each write that makes an event writes it
in its own transaction (a request, a claim, a hand-over, a refusal, a run handed to a person), a
lapse is written once however many readers find it, and ``resolver watch --once`` delivers what it
missed after a restart, without repeats, with the notify command reading JSON."""

from __future__ import annotations

import json
import sys
from datetime import timedelta

import pytest
from core.cli import main
from core.engine.watch import sweep_lapses
from core.ground.errors import ApprovalRefused

RUN = "T-65273-agent-chat-small-1"
OTHER = "T-90103-agent-chat-small-1"


def _kinds(store, after: int = 0) -> list[tuple[str, str]]:
    return [(e["kind"], e["run_id"]) for e in store.queue_events(after)]


def test_each_write_that_makes_an_event_writes_it(home, clock):
    home.run("T-65273")
    home.run("T-90103")
    home.mark("claim", RUN, "team_lead", "Tomás")
    home.mark("handover", RUN, "team_lead", "Tomás", to="Ana", note="the capture")
    home.mark("snooze", RUN, "team_lead", "Ana", until=clock.now() + timedelta(hours=1))  # no event: nothing to tell
    home.reject(OTHER, "team_lead", "not this one", "Ana")
    assert _kinds(home.store) == [
        ("request", RUN),
        ("request", OTHER),
        ("claim", RUN),
        ("handover", RUN),
        ("handed_to_person", OTHER),
    ]
    events = home.store.queue_events(0)
    assert [e["id"] for e in events] == sorted({e["id"] for e in events})
    assert (events[3]["name"], events[3]["to_name"], events[3]["detail"]) == ("Tomás", "Ana", "the capture")
    assert events[0]["required_role"] == "team_lead" and events[1]["required_role"] == "agent"


def test_a_refusal_and_a_lapse_are_events_and_the_lapse_is_written_once(home, clock, new_store):
    from core.ground.data import load_policy

    home.run("T-65273")
    clock.sleep(8 * 86400)  # the evidence is older than the policy allows: approve is refused
    with pytest.raises(ApprovalRefused, match="old; the policy allows"):
        home.approve(RUN, "grace", "Grace")
    assert _kinds(home.store)[-1] == ("refusal", RUN)
    other = new_store(home.store)
    policy = load_policy()
    assert sweep_lapses(home.store, clock.now(), policy) == 1
    assert sweep_lapses(other, clock.now(), policy) == 0  # the compare-and-set: once per request
    home.queue.page("waiting_approval")  # a read of the queue finds it too, and writes nothing more
    lapses = [e for e in home.store.queue_events(0) if e["kind"] == "lapse"]
    assert len(lapses) == 1 and lapses[0]["at"] == "2026-10-16T17:00:00-04:00"
    assert lapses[0]["detail"] == home.store.load(RUN).proposal.digest


def test_a_lapse_found_by_a_read_of_the_waiting_queue(home, clock):
    home.run("T-65273")
    clock.sleep(8 * 86400)
    home.queue.page("waiting_approval")
    assert _kinds(home.store)[-1] == ("lapse", RUN)


def test_a_read_of_the_waiting_queue_loads_no_run_whose_lapse_is_written_and_a_refreshed_one_lapses_again(
    home, clock, monkeypatch
):
    """Each read of the waiting queue loaded every lapsed run of its page whole (the "waiting" and
    "mine" filters' first pages, 170 to 290 ms at 1,000,000 runs) though its lapse was written
    already; now only a run whose present request has no lapse is loaded. A request refreshed after
    its lapse is a new request: it lapses again, once."""
    home.run("T-65273")
    clock.sleep(8 * 86400)
    home.queue.page("waiting_approval")
    loaded: list[str] = []
    real_load = type(home.store).load
    monkeypatch.setattr(type(home.store), "load", lambda self, run_id: (loaded.append(run_id), real_load(self, run_id))[1])
    home.queue.page("waiting_approval")
    home.queue.page("waiting_approval", max_role="team_lead")
    assert loaded == []
    monkeypatch.undo()
    first = [e["detail"] for e in home.store.queue_events(0) if e["kind"] == "lapse"]
    digest = home.refresh(RUN, "grace", "Grace").proposal.digest
    home.queue.page("waiting_approval")  # the refreshed evidence is new: nothing lapsed yet
    assert [e["detail"] for e in home.store.queue_events(0) if e["kind"] == "lapse"] == first
    clock.sleep(8 * 86400)
    home.queue.page("waiting_approval")
    home.queue.page("waiting_approval")
    assert [e["detail"] for e in home.store.queue_events(0) if e["kind"] == "lapse"] == [*first, digest]


@pytest.mark.usefixtures("not_memory_cli")
def test_watch_once_delivers_after_a_restart_without_repeats_and_notify_reads_json(
    home, clock, team_url, tmp_path, capsys, monkeypatch
):
    got = tmp_path / "got.jsonl"
    script = tmp_path / "notify.py"
    script.write_text(f"import sys\nopen({str(got)!r}, 'a').write(sys.stdin.read())\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text(f"notify = {json.dumps(f'{sys.executable} {script}')}\n", encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    where = ["--home", str(home.root), *(["--store", team_url] if team_url else [])]

    def watch(*argv: str) -> str:
        assert main(["watch", "--once", *argv, *where]) == 0
        return capsys.readouterr().out

    assert main(["clock", "set", "2026-10-09T17:00:00-04:00", *where]) == 0  # the CLI's home on the test's Friday
    assert watch("--as", "team_lead").endswith("Watching from event #0: what happens from now on.\n")
    home.run("T-65273")
    home.mark("claim", RUN, "grace", "Grace")
    out = watch("--as", "team_lead")  # the watcher was not running: it delivers what it missed
    assert [line.split(": ", 1)[1] for line in out.splitlines()] == ["new approval request (needs team lead)", "claimed by Grace"]
    assert watch("--as", "team_lead") == ""  # nothing twice
    home.mark("handover", RUN, "grace", "Grace", to="Ana", note="yours")
    assert watch("--as", "team_lead").endswith("handed to Ana by Grace: yours\n")
    sent = [json.loads(line) for line in got.read_text(encoding="utf-8").splitlines()]
    assert [e["kind"] for e in sent] == ["request", "claim", "handover"]
    assert len({e["id"] for e in sent}) == 3 and sent[2]["to_name"] == "Ana"


@pytest.mark.usefixtures("not_memory_cli")
def test_a_refreshed_request_is_one_new_request_event_and_watch_says_refreshed(home, team_url, capsys):
    """A refresh keeps the run waiting (no status change) but voids every approval of the old
    digest: its audit row writes one ``request`` event naming who refreshed and the new digest
    (SQLite format 6, PostgreSQL migration 13), and ``resolver watch --once`` prints it."""
    where = ["--home", str(home.root), *(["--store", team_url] if team_url else [])]
    assert main(["clock", "set", "2026-10-09T17:00:00-04:00", *where]) == 0
    assert main(["watch", "--once", "--as", "team_lead", *where]) == 0
    home.run("T-65273")
    before = home.store.load(RUN).proposal.digest
    after = home.refresh(RUN, "grace", "Grace").proposal.digest
    assert after != before
    events = home.store.queue_events(0)
    assert [(e["kind"], e["name"], e["detail"]) for e in events] == [("request", None, None), ("request", "Grace", after)]
    assert events[1]["required_role"] == "team_lead" and events[1]["role"] == "grace"
    capsys.readouterr()
    assert main(["watch", "--once", "--as", "team_lead", *where]) == 0
    said = [line.split(": ", 1)[1] for line in capsys.readouterr().out.splitlines()]
    assert said == [
        "new approval request (needs team lead)",
        f"approval request refreshed by Grace, new digest {after[:12]} (needs team lead)",
    ]


@pytest.mark.usefixtures("not_memory_cli")
def test_a_failing_notify_stops_the_watcher_and_the_event_comes_again(home, team_url, tmp_path, capsys, monkeypatch):
    config = tmp_path / "config.toml"
    fail = tmp_path / "fail.py"
    fail.write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    config.write_text(f"notify = {json.dumps(f'{sys.executable} {fail}')}\n", encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(config))
    where = ["--home", str(home.root), *(["--store", team_url] if team_url else [])]
    assert main(["clock", "set", "2026-10-09T17:00:00-04:00", *where]) == 0
    assert main(["watch", "--once", *where]) == 0
    home.run("T-65273")
    capsys.readouterr()
    assert main(["watch", "--once", *where]) == 1
    out, err = capsys.readouterr()
    assert "new approval request" in out and "exited 3 for event #1" in err and "delivers event #1 again" in err
    config.write_text("", encoding="utf-8")
    assert main(["watch", "--once", *where]) == 0
    assert "new approval request" in capsys.readouterr().out  # at least once
