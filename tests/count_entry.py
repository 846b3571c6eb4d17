"""The model-call counting entry point of the PostgreSQL race tests.

``python tests/count_entry.py ARGS`` is ``python -m core ARGS`` with the recorded model's
:meth:`~core.models.recorded_model.RecordedModel.complete` counted: each call appends one line (this
process's ID and the turn asked for) to the file ``RESOLVER_COUNT_CALLS`` names, opened in append
mode so several processes share it. Two resumes of one crashed loop that both asked the model
for the same step show here as two lines, even when one of them lost the compare-and-set and its
answer was never saved (the checkpoint's own count cannot show such a call). With
``RESOLVER_COUNT_POINTS`` it also writes, as the process exits, how many times each kind of
crash point (:func:`core.contract.store.crash_point`) was reached, one ``KIND N`` line each: the points a
SIGKILL sweep goes through. The package installs no such entry point and ``core`` reads neither
variable.
"""

from __future__ import annotations

import os

COUNT_ENV = "RESOLVER_COUNT_CALLS"
"""The variable this entry point (never the product) reads: the file to count calls in."""
POINTS_ENV = "RESOLVER_COUNT_POINTS"
"""The file to write the crash points reached in, as the process exits."""


def count_calls(path: str) -> None:
    """Append ``"PID TURN"`` to ``path`` at every recorded model call of this process."""
    from core.models import recorded_model

    complete = recorded_model.RecordedModel.complete

    def counted(self, messages):  # type: ignore[no-untyped-def]
        turn = sum(1 for m in messages if m.role == "assistant") + 1
        with open(path, "a", encoding="utf-8") as out:
            out.write(f"{os.getpid()} {turn}\n")
        return complete(self, messages)

    recorded_model.RecordedModel.complete = counted  # type: ignore[method-assign]


def count_points(path: str) -> None:
    """Count every crash point this process reaches; write ``KIND N`` lines to ``path`` at exit."""
    import atexit

    from core.contract.store import set_crash_hook

    seen: dict[str, int] = {}
    set_crash_hook(lambda kind: seen.__setitem__(kind, seen.get(kind, 0) + 1))

    def write() -> None:
        with open(path, "w", encoding="utf-8") as out:
            out.writelines(f"{kind} {n}\n" for kind, n in sorted(seen.items()))

    atexit.register(write)


if __name__ == "__main__":
    if os.environ.get(COUNT_ENV):
        count_calls(os.environ[COUNT_ENV])
    if os.environ.get(POINTS_ENV):
        count_points(os.environ[POINTS_ENV])
    from core.cli import entry

    entry()
