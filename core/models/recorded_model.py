"""The recorded model: a test double for a model, replaying ``data/recordings``.

A real model would read the working context and answer; this double answers with the recorded
turn for the run's (variant, model, repeat) at the position the context has reached, counted as
the assistant messages already in it. So a run resumed from its checkpoint asks for the next
turn, never one it already paid for (seed 000, "A crash in the middle of the loop").
"""

from __future__ import annotations

from pathlib import Path

from core.ground.data import DataError, FinalTurn, Recording, ToolCallTurn, recorded_runs
from core.ground.errors import ResolverError
from core.ground.state import Message
from core.models.toolschema import turn_problem

MODEL_ROUTE_PREFIX = "recorded"


class NoRecording(ResolverError):
    """The ticket has no recording for that variant, model and repeat."""


class RecordedModel:
    """Replays one recording of ``data/recordings/<task>.json``.

    Args:
        task_id: the ticket.
        variant, model, repeat: which recording (``agent``/``chat-small``/1 ...).
        recordings: a home's folder of recordings made by ``resolver record``, read after
            ``data/recordings`` (:func:`core.ground.data.home_recordings`).

    Raises:
        NoRecording: no such recording (the message lists the ones there are).
        DataError: a turn of it holds what a run cannot keep as its evidence or outcome
            (:func:`core.models.toolschema.turn_problem`: a NUL character, a lone surrogate, NaN,
            nesting deeper than 32, a tool name no tool can have): refused before the run is
            saved, since every replay would meet it at the same step. A read-only tool's
            arguments of the wrong kind (a list for an ID) are replayed: the world answers them
            with a sentence, as a live model's next step would read it.
    """

    def __init__(self, task_id: str, variant: str, model: str, repeat: int, recordings: Path | None = None) -> None:
        runs = recorded_runs(task_id, recordings)
        match = [r for r in runs if (r.variant, r.model, r.repeat) == (variant, model, repeat)]
        if not match:
            have = ", ".join(f"{r.variant}/{r.model}#{r.repeat}" for r in runs) or "none"
            raise NoRecording(f"No recorded run of {task_id} for {variant}/{model} repeat {repeat}; there are {have}.")
        self.recording: Recording = match[0]
        self.route = f"{MODEL_ROUTE_PREFIX}:{variant}/{model}#{repeat}"
        for n, turn in enumerate(self.recording.turns, 1):
            said = turn_problem(turn)
            if said is not None:
                raise DataError(f"The recording {variant}/{model}#{repeat} of {task_id} cannot be replayed: in turn {n}, {said}.")

    def complete(self, messages: list[Message]) -> ToolCallTurn | FinalTurn:
        """The model's next turn for this working context.

        Raises:
            NoRecording: the context is longer than the recording (nothing more was recorded).
        """
        position = sum(1 for m in messages if m.role == "assistant")
        if position >= len(self.recording.turns):
            raise NoRecording(
                f"The recording {self.route} has {len(self.recording.turns)} turns; turn {position + 1} was asked for."
            )
        return self.recording.turns[position]


def repeats_of(task_id: str, variant: str, model: str, recordings: Path | None = None) -> list[int]:
    """The recorded repeats for one ticket, variant and model, sorted (with a home's
    ``recordings`` folder: its repeats too)."""
    runs = recorded_runs(task_id, recordings)
    return sorted(r.repeat for r in runs if (r.variant, r.model) == (variant, model))
