"""The top bar (who is at the keyboard, the simulated clock) and the status filter bar."""

from __future__ import annotations

from datetime import datetime

from core.api.views import one_line, role_label
from rich.cells import cell_len
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


class LineBar(Static):
    """A bar of one line (the top bar, the filter bar) that says what it is given once."""

    _said: tuple = ()
    """The parts shown last (:meth:`say`)."""

    def say(self, parts: list) -> None:
        """Show ``parts`` (``Content.assemble``'s arguments): the same parts as shown are not
        shown again, and a bar whose height is a fixed number of lines (its CSS) repaints alone,
        without a layout pass of the screen (each page read set both bars, and
        ``Static.update`` laid out the whole screen, a key's frame delayed by a page appended
        under it)."""
        said = tuple(parts)
        if said == self._said:
            return
        self._said = said
        height = self.styles.height
        self.update(Content.assemble(*parts), layout=not (height is not None and height.is_cells))


class TopBar(LineBar):
    """``Larkfield approvals · practice · approver: Tomás (role team lead) · clock Mon
    2026-10-12 09:00 (simulated)``: ``kind`` is the home's kind, ``practice`` or ``shop``. The
    role is said to be one (the demo's person Grace and the role ``grace``), the name
    on one line (:func:`core.api.views.one_line`)."""

    NARROW = 110
    """Below this width (characters) the bar drops the app's name and says less."""

    def show(self, name: str, role: str, now: datetime | None, kind: str = "practice", team: str | None = None) -> None:
        """``team``: the team store's label (:meth:`core.api.home.Home.runs_live_at`), shown after
        the kind so an approver knows whose queue this is; None for the home folder's files."""
        narrow = 0 < self.size.width < self.NARROW
        sep = " · " if narrow else "  ·  "
        parts: list = [] if narrow else [("Larkfield approvals", "bold"), sep]
        parts += [(kind, "bold"), *([sep, one_line(team)] if team else []), sep]
        parts += ["approver: ", (one_line(name), "bold"), f" (role {role_label(role)})"]
        if now is not None:
            parts += [sep, "clock ", (now.strftime("%a %Y-%m-%d %H:%M"), "bold"), "" if narrow else " (simulated)"]
        self.say(parts)


SHORT = {
    "waiting_approval": ("waiting", "wait"),
    "executing": ("executing", "exec"),
    "running": ("running", "run"),
    "handed_to_person": ("handed", "hand"),
    "stopped": ("stopped", "stop"),
    "done": ("done", "done"),
    None: ("all", "all"),
    MINE: ("mine", "mine"),
}
"""Each filter's shorter names, for narrower terminals: ``(short, shortest)``."""


def filter_texts(active: int, counts: dict[str, int], level: int, aside: int = 0) -> list[str]:
    """The filters as the bar shows them at ``level`` (0: full names and counts; 1: short names;
    2: shortest names; 3: shortest names without counts: counts go before names). The active
    filter is in brackets, so a text capture shows it (``[1 waiting 8]``). ``aside``: the waiting
    runs set aside now, left out of the waiting count as the waiting filter leaves them out
    ("all" still counts them)."""
    total = sum(counts.values())  # "corrupt" included: "all" lists every run
    out = []
    for i, (status, label) in enumerate(FILTERS):
        name = label if level == 0 else SHORT[status][0 if level == 1 else 1]
        n = total if status is None else counts.get(status, 0)
        if status == "waiting_approval":
            n = max(n - aside, 0)
        counted = status != MINE and level < 3  # mine has no count: it would read every waiting run
        text = f"{i + 1} {name} {n}" if counted else f"{i + 1} {name}"
        out.append(f"[{text}]" if i == active else text)
    return out


class FilterBar(LineBar):
    """The status filters with live counts, the active one in brackets (and reverse video), a
    corrupt count when there is one, and the refresh time when it fits. Every filter always
    shows: a narrower terminal gets shorter names, then no counts."""

    def show(self, active: int, counts: dict[str, int], refreshed: str = "", aside: int = 0, live: str = "") -> None:
        """``active``: the index in :data:`FILTERS`; ``counts``: runs per status;
        ``refreshed``: the time of the last read (``09:00:02``), shown when it fits; ``aside``:
        the waiting runs set aside now (:func:`filter_texts`); ``live``: on a team store
        ``live`` or ``live updates lost``, said after the time (``refreshed 09:00:02,
        live``) or, where that does not fit (80 columns), alone (``live``, ``not live``) with
        shorter filter names if need be: whether changes arrive matters more than when the last
        read was."""
        width = self.size.width or 200
        corrupt = f"corrupt {counts['corrupt']}" if counts.get("corrupt") else ""  # never under a status

        def layout(level: int) -> tuple[list[str], int]:
            texts = filter_texts(active, counts, level, aside) + ([corrupt] if corrupt else [])
            return texts, sum(map(cell_len, texts)) + len(texts) - 1  # cells, not characters

        for level in range(4):
            texts, used = layout(level)
            if used <= width or level == 3:
                break
        stamp = f"  refreshed {refreshed}" if refreshed else ""
        if stamp and live:
            stamp += f", {live}"
        if stamp and used + cell_len(stamp) > width:
            stamp = ""
            short = "  " + ("not live" if live == "live updates lost" else live) if live else ""
            for shorter in range(level, 3) if short else ():
                texts, used = layout(shorter)
                if used + cell_len(short) <= width:
                    stamp = short
                    break
            if not stamp:
                texts, used = layout(level)
        parts: list = []
        for i, text in enumerate(texts):
            styled = i == active or (corrupt and i == len(texts) - 1)
            parts += [" " if i else "", (text, "reverse bold") if styled else text]
        if stamp:
            parts.append(stamp)
        self.say(parts)


def queue_title(focused: bool, search: str | None, following: bool, sort: str, keys: dict[str, str] | None = None) -> Content:
    """The runs table's title (on its top border): ``queue``, marked ``▶`` while it has the
    focus, then the filter by text and the sort, each in words (the sort's own place). ``keys``
    names the keys the title mentions (``back``, ``read``: from the action table)."""
    keys = keys or {}
    back, read = keys.get("back", "esc"), keys.get("read", "enter")
    parts: list = [("▶ queue" if focused else "  queue", "bold")]
    if search:
        hint = f"a number key or {back} leaves it" if following else f"{back} clears it"
        parts += [" · ", ("showing only " if following else "filter: "), (clean(search), "bold"), f" ({hint})"]
    if sort:
        parts += [" · sorted by ", (sort, "bold")]
    if focused:
        parts += [f" · {read}: read the run"]
    return Content.assemble(*parts)
