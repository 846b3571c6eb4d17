"""Command palette providers: every action of the queue (from the one action table,
:func:`resolver_tui.keys.palette`), ``Jump to run <id>``, and the trainer's moments when
:mod:`core.trainer.lesson` exists."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Protocol, cast

from core.trainer.lesson import MOMENTS, TITLES
from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.content import Content

from resolver_tui.keys import palette
from resolver_tui.screens.queue import QueueScreen


class _TrainerApp(Protocol):
    """What the trainer's palette needs of the app (:class:`resolver_tui.app.ResolverApp`), named
    here so that the palette does not import the app that lists it."""

    trainer: bool

    def run_moment(self, fn: Callable[..., list[str]], name: str) -> Any: ...


class ResolverCommands(Provider):
    """The queue's actions and ``Jump to run <id>`` for every run loaded in the table."""

    def _queue(self) -> QueueScreen | None:
        screen = self.screen
        return screen if isinstance(screen, QueueScreen) else None

    def _items(self) -> list[tuple[str, Callable[[], object], str]]:
        queue = self._queue()
        if queue is None:
            return []
        items: list[tuple[str, Callable[[], object], str]] = [
            (title, partial(queue.try_action, action), help_text)
            for title, action, help_text in palette(shop=queue.home.kind == "shop")  # the demo: practice homes only
        ]
        items += [
            (f"Jump to run {run_id}", partial(queue.jump_to, run_id), "show it in the queue")
            for run_id in list(queue.summaries)[:500]
        ]
        return items

    async def discover(self) -> Hits:
        for title, command, help_text in self._items():
            if not title.startswith("Jump"):
                yield DiscoveryHit(Content(title), command, text=title, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        queue = self._queue()
        for title, command, help_text in self._items():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), command, text=title, help=help_text)
        words = query.split()
        if queue is not None and words and words[0].upper().startswith("T-") and words[0] not in queue.summaries:
            run_id = words[0]
            yield Hit(
                0.5, Content(f"Jump to run {run_id}"), partial(queue.jump_to, run_id), text=run_id, help="search the store for it"
            )
        elif queue is not None and len(words) > 1 and words[0].casefold() == "decisions" and words[1] == "of":
            name = " ".join(words[2:])
            if name:
                yield Hit(
                    0.5,
                    Content(f"Decisions of {name}"),
                    partial(queue.action_approver_history, name),
                    text=f"Decisions of {name}",
                    help="that approver's decisions and refusals, with reasons",
                )


class LessonCommands(Provider):
    """The trainer's moments (:data:`core.trainer.lesson.MOMENTS`, titled "Simulate: ..."), listed only
    in trainer mode, so a trainer changes the world or crashes a run in place."""

    def _moments(self) -> list[tuple[str, Callable[[], object]]]:
        app = cast("_TrainerApp", self.app)
        if not getattr(app, "trainer", False):
            return []
        return [(TITLES[name], partial(app.run_moment, fn, name)) for name, fn in MOMENTS.items()]

    async def discover(self) -> Hits:
        for title, run in self._moments():
            yield DiscoveryHit(Content(title), run, text=title)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, run in self._moments():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), run, text=title)
