"""The crash tests' entry point (no test hook in the product).

``python tests/crash_entry.py ARGS`` is ``python -m core ARGS`` with one kill point armed: the
one ``RESOLVER_KILL_AT`` names (``save:N``, ``row:N``, ``call:N``, ``write:N``, ``step:N`` or ``answer:N``, see
:func:`core.contract.store.set_crash_hook`); at that point the process kills itself with SIGKILL, as
a power cut would. The package installs no such entry point and ``core`` reads no such
variable: an installed ``resolver`` with ``RESOLVER_KILL_AT`` set runs as if it were not.
:func:`helpers.run_process` starts this file when a test names ``RESOLVER_KILL_AT``.
"""

from __future__ import annotations

import os
import signal

KILL_ENV = "RESOLVER_KILL_AT"
"""The variable this entry point (never the product) reads."""


def arm(target: str) -> None:
    """Kill this process with SIGKILL at the crash point ``target`` names (``kind:N``: the N-th
    time that kind of point is reached in this process)."""
    from core.contract.store import set_crash_hook

    counts: dict[str, int] = {}

    def hook(kind: str) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        if target == f"{kind}:{counts[kind]}":
            os.kill(os.getpid(), signal.SIGKILL)

    set_crash_hook(hook)


if __name__ == "__main__":
    if os.environ.get(KILL_ENV):
        arm(os.environ[KILL_ENV])
    from core.cli import entry

    entry()
