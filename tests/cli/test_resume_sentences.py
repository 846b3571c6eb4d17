"""Every sentence that asks the person to resume names the run and the command: a newcomer's
trip was "Resume with `resolver resume RUN`" after Ctrl-C and "resume the run later" after a
failed model call, with no word of which run. (The live model's sentences are tested with the
model, tests/models/test_live_model.py; the lesson's ``Resume with:`` lines are the seed's.)"""

from __future__ import annotations

import pytest
from core.api.home import Home
from core.cli import main
from core.ground.errors import RunInterrupted
from core.ground.exitcodes import EXIT_INTERRUPTED

from helpers import T65273_RUN


def _ctrl_c_after_the_first_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C at the first step's save of ``resolver run`` (its ``crash_point("step")``)."""
    import core.contract.store

    def ctrl_c(point: str) -> None:
        if point == "step":
            raise KeyboardInterrupt

    monkeypatch.setattr(core.contract.store, "crash_point", ctrl_c)


def test_ctrl_c_during_a_run_names_the_run_to_resume(tmp_path, capsys, monkeypatch):
    home = tmp_path / "home"
    _ctrl_c_after_the_first_step(monkeypatch)
    assert main(["run", "T-65273", "--home", str(home)]) == EXIT_INTERRUPTED
    err = capsys.readouterr().err
    assert err.strip() == (
        f"Interrupted; the last checkpoint of run {T65273_RUN} is saved. Resume with `resolver resume {T65273_RUN}`."
    )
    monkeypatch.undo()
    monkeypatch.setenv("RESOLVER_CONFIG", str(tmp_path / "none.toml"))
    assert Home(home).store.load(T65273_RUN).step == 1
    assert main(["resume", T65273_RUN, "--home", str(home)]) == 0  # as the sentence says


def test_the_runner_raises_ctrl_c_as_run_interrupted_with_the_run(home):
    def ctrl_c(state):
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted) as caught:
        home.run("T-65273", on_step=ctrl_c)
    assert caught.value.run_id == T65273_RUN and isinstance(caught.value, KeyboardInterrupt)


def test_ctrl_c_with_no_run_going_never_asks_to_resume_an_unnamed_run(cli, monkeypatch):
    import core.cli.approver

    def ctrl_c(*_args, **_kwargs):
        raise KeyboardInterrupt

    cli("run", "T-65273")
    monkeypatch.setattr(core.cli.approver, "cmd_trace", ctrl_c)
    code, _out, err = cli("trace", T65273_RUN)
    assert code == EXIT_INTERRUPTED
    assert err.strip() == "Interrupted; every step before it was saved: `resolver runs` lists the saved runs."
    assert "RUN" not in err and "resume" not in err.lower()


def test_a_running_runs_detail_without_keys_names_the_command_that_resumes_it(home):
    from core.api.views import Approver

    def ctrl_c(state):
        raise KeyboardInterrupt

    with pytest.raises(RunInterrupted):
        home.run("T-65273", on_step=ctrl_c)
    detail = home.queue.describe(home.store.load(T65273_RUN), Approver("team_lead", "Tomás"))
    assert any(f"`resolver resume {T65273_RUN}` continues its loop" in line for line in detail.body)
