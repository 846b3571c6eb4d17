"""One approver process of :func:`pg_rounds.decide_round`: its own :class:`core.api.home.Home` on the
team store, waiting for the round's start time, then rejecting its runs one after another until
the round's seconds are over. Prints one JSON object: per outcome the count, each decision's
seconds, and every conflict the store raised (retried ones included, counted where the store
raises them, since :meth:`core.api.home.Home._signed` retries them unseen).

Usage: ``python tests/decide_entry.py HOME URL NAME START_AT SECONDS RUN_ID...`` (``START_AT``:
an epoch time in seconds)."""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> None:
    from core.api.home import Home
    from core.ground.errors import ApprovalRefused, ResolverError, StoreBusy, StoreConflict

    root, url, name, start_at, seconds, *runs = argv
    home = Home(root, store=url)
    conflicts: list[str] = []
    save = home.store.save

    def counted(*args, **kwargs):  # every conflict the store raises, before the home retries it
        try:
            return save(*args, **kwargs)
        except StoreConflict as exc:
            conflicts.append(str(exc))
            raise

    home.store.save = counted  # type: ignore[method-assign]
    outcomes: dict[str, int] = {}
    seconds_each: list[float] = []
    said: list[str] = []
    time.sleep(max(0.0, float(start_at) - time.time()))
    began = time.monotonic()
    end = began + float(seconds)
    for run_id in runs:
        if time.monotonic() >= end:
            break
        t = time.perf_counter()
        try:
            home.reject(run_id, "grace", "a duplicate of another ticket", name)
            kind = "decided"
        except ApprovalRefused as exc:
            text = str(exc)
            kind = "told" if ("rejected by " in text or "approved by " in text) else "refused"
            if kind == "refused":
                said.append(text)
        except StoreConflict as exc:
            kind = "conflict"
            said.append(str(exc))
        except StoreBusy as exc:
            kind = "deadlock" if "deadlock" in str(exc) else "busy"
            said.append(str(exc))
        except ResolverError as exc:
            kind = "error"
            said.append(str(exc))
        seconds_each.append(time.perf_counter() - t)
        outcomes[kind] = outcomes.get(kind, 0) + 1
    elapsed = time.monotonic() - began
    print(
        json.dumps({"outcomes": outcomes, "seconds": seconds_each, "elapsed": elapsed, "conflicts": conflicts, "said": said[:5]})
    )


if __name__ == "__main__":
    main(sys.argv[1:])
