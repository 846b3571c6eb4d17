"""The top bar (who is at the keyboard, the simulated clock) and the status filter bar."""

from __future__ import annotations

from datetime import datetime

from core.views import role_label, status_short
from textual.content import Content
from textual.widgets import Static

from resolver_tui.widgets.safe import clean

MINE = "mine"
"""The filter of the waiting runs I may approve (not a status: the app reads it as one)."""

FILTERS: list[tuple[str | None, str]] = [
    ("waiting_approval", "waiting approval"),
    ("executing", "executing"),
    ("running", "running"),
    ("handed_to_person", "handed to person"),
    ("stopped", "stopped"),
    ("done", "done"),
    (None, "all"),
    (MINE, "mine"),
]
"""The status filters, in the order of the number keys 1-8 (None: every status; ``mine``: the
waiting runs whose role needed is within mine, the ``m`` key too)."""

ALL = [status for status, _ in FILTERS].index(None)
"""The index of the filter of every status."""


class TopBar(Static):
    """``Larkfield approvals · practice · at the keyboard: Tomás (team lead) · clock Mon
    2026-10-12 09:00 (simulated)``: ``kind`` is the home's kind, ``practice`` or ``shop``."""

    NARROW = 110
    """Below this width (characters) the bar drops the app's name and says less."""

    def show(self, name: str, role: str, now: datetime | None, kind: str = "practice") -> None:
        narrow = 0 < self.size.width < self.NARROW
        sep = " · " if narrow else "  ·  "
        parts: list = [] if narrow else [("Larkfield approvals", "bold"), sep]
        parts += [(kind, "bold"), sep, "at the keyboard: ", (clean(name), "bold"), f" ({role_label(role)})"]
        if now is not None:
            parts += [sep, "clock ", (now.strftime("%a %Y-%m-%d %H:%M"), "bold"), "" if narrow else " (simulated)"]
        self.update(Content.assemble(*parts))


class FilterBar(Static):
    """The status filters with live counts, the active one highlighted, and the refresh time."""

    def show(
        self, active: int, counts: dict[str, int], search: str | None, refreshed: str, following: bool = False, sort: str = ""
    ) -> None:
        """``sort``: the sort's name when it is not the default (shown after the counts)."""
        parts: list = []
        if search:  # first, so a narrow terminal never hides it
            hint = "a number key or Esc leaves it" if following else "Esc clears it"
            parts += [("showing only " if following else "filter: ", "bold"), (clean(search), "bold reverse"), f" ({hint})  "]
        if sort:  # before the counts too: a narrow terminal never hides it
            parts += [("sorted by ", "bold"), (sort, "bold reverse"), " "]
        total = sum(counts.values())  # "corrupt" included: "all" lists every run
        narrow = 0 < self.size.width < 110
        for i, (status, label) in enumerate(FILTERS):
            n: int | str = total if status is None else counts.get(status, 0)
            if status == MINE:  # no count: counting it would read every waiting run
                text = f" {i + 1} {label}{'' if narrow else ' '}"
            else:
                text = f" {i + 1} {status_short(status) if status else label} {n}" if narrow else f" {i + 1} {label} {n} "
            parts.append((text, "reverse bold") if i == active else text)
            parts.append("" if narrow else " ")
        if counts.get("corrupt"):  # not under any status: a corrupt run is not waiting (issue 12)
            parts.append((f" corrupt {counts['corrupt']} ", "bold reverse"))
        if refreshed and not narrow:
            parts += [f"  refreshed {refreshed}"]
        self.update(Content.assemble(*parts))
