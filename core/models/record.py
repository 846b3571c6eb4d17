"""Recordings of one's own: a live run written in the data format.

``resolver record TICKET --model ROUTE`` runs a ticket on a live route, then writes the turns the
model answered, one per step as the journal of model calls saved them, as a recording of the data
format (``data/recordings/TASK.json``: ``{"task_id", "runs": [{"variant", "model", "repeat",
"turns"}]}``) into the home's ``recordings/TASK.json``. Its model is the route's priced model
(``price``, a model of ``data/models.json``, so a replay is priced as the live run was), its
repeat the next free one after the shipped and recorded ones. The recorded model reads the home's
recordings after ``data/recordings``, so ``resolver run TASK --model MODEL --repeat N`` replays it
with the same proposal and digest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.contract.store import CallStore
from core.ground.data import (
    FinalTurn,
    Recording,
    TicketRecordings,
    ToolCallTurn,
    TurnUsage,
    home_recordings,
    recorded_runs,
    write_private_json,
)
from core.ground.errors import ResolverError
from core.ground.state import TaskState
from core.models.model import is_failure

RECORDINGS = "recordings"
"""The home's folder of recordings (``HOME/recordings/TASK.json``)."""


@dataclass(frozen=True)
class Recorded:
    """A recording written: ``path`` (the home's file), ``recording`` (its run), ``state`` (the
    live run it was made from)."""

    path: Path
    recording: Recording
    state: TaskState


def turns_of(store: CallStore, state: TaskState) -> list[ToolCallTurn | FinalTurn]:
    """The turns a live run was answered, step by step, from its journal of model calls: each
    step's answer (its latest answered attempt that is not a failure), with that answer's own
    usage in tokens, without the call IDs (a recording has none).

    Raises:
        ResolverError: the run did not end with the model's final turn (it was stopped, handed
            to a person for its budget, or a step has no answer in the journal), or its journal
            holds a row its runner did not write (a recording must be what the model said).
    """
    # lazy: the live model's module is loaded only for a live route
    from core.models.live_model import turn_of

    if state.proposal is None or state.step == 0 or state.proposal.rule == "budget":
        raise ResolverError(f"Run {state.run_id} ended {state.status} without the model's outcome; nothing was recorded.")
    answers: dict[int, str] = {}
    for row in store.model_calls(state.run_id):
        if row.get("trusted") is not True:  # a row its runner did not write is no turn of this run
            raise ResolverError(
                f"Run {state.run_id}'s journal holds a row its runner did not write (step {row['step']}, attempt "
                f"{row['attempt']}: {row['why'] or 'it cannot be checked'}); nothing was recorded."
            )
        if row["answer"] is not None and not is_failure(row["answer"]):
            answers[row["step"]] = row["answer"]
    turns: list[ToolCallTurn | FinalTurn] = []
    for step in range(1, state.step + 1):
        if step not in answers:
            raise ResolverError(f"Run {state.run_id} has no answer saved for step {step}; nothing was recorded.")
        turn = turn_of(answers[step], "the journal")
        usage = TurnUsage(tokens_in=turn.usage.tokens_in, tokens_out=turn.usage.tokens_out)
        if isinstance(turn, ToolCallTurn):
            turn = ToolCallTurn(tool=turn.tool, args=turn.args, usage=usage)
        else:
            turn = turn.model_copy(update={"usage": usage})
        turns.append(turn)
    if not isinstance(turns[-1], FinalTurn):
        raise ResolverError(f"Run {state.run_id} did not end with the model's final turn; nothing was recorded.")
    return turns


def _turn_json(turn: ToolCallTurn | FinalTurn) -> dict[str, object]:
    """A turn as the data format writes it: no call ID, arguments text or call count."""
    skip = {"call_id", "arguments"} if isinstance(turn, ToolCallTurn) else set()
    body = turn.model_dump(mode="json", exclude=skip)
    body["usage"] = {"tokens_in": turn.usage.tokens_in, "tokens_out": turn.usage.tokens_out}
    return body


def write_recording(
    folder: Path, task_id: str, variant: str, model: str, turns: list[ToolCallTurn | FinalTurn]
) -> tuple[Path, Recording]:
    """Add a run of ``turns`` to ``folder/TASK.json`` (made 0700 and 0600), as the next free
    repeat of ``variant/model`` after the shipped and recorded ones; the file is replaced whole
    (written aside, then renamed), so a crash leaves the old one or the new one. Returns the
    file and the recording written.

    Raises:
        DataError: the home's file for the ticket does not read.
    """
    runs = home_recordings(task_id, folder)
    taken = [r.repeat for r in recorded_runs(task_id, folder) if (r.variant, r.model) == (variant, model)]
    recording = Recording(variant=variant, model=model, repeat=max(taken, default=0) + 1, turns=turns)
    body = {
        "task_id": task_id,
        "runs": [
            {"variant": r.variant, "model": r.model, "repeat": r.repeat, "turns": [_turn_json(t) for t in r.turns]}
            for r in (*runs, recording)
        ],
    }
    TicketRecordings.model_validate(body)  # what is written reads back
    return write_private_json(folder, f"{task_id}.json", body), recording
