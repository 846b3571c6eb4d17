"""The key bar at the foot of the screens: Textual's ``Footer`` without its leak."""

from __future__ import annotations

from textual.widgets import Footer as _TextualFooter


class Footer(_TextualFooter):
    """Textual's footer (8.0 to 8.2), whose keys it makes again whenever the keys offered change
    (each key that moves the cursor to a run of another status), minus a leak: each new key
    watches the footer's ``compact`` (``data_bind``), and Textual forgets the watch of a key
    removed only when ``compact`` changes, which it never does here. The removed keys, with their
    styles and caches, stayed reachable: about three per key press, 10 MB per thousand presses
    that a full collection never freed (a trial held ``j`` down). After each recompose the
    watches of keys that were removed are dropped, by Textual's own test (``_closing``)."""

    async def recompose(self) -> None:
        """Make the keys again, then forget the watches of the keys removed."""
        await super().recompose()
        for watchers in getattr(self, "__watchers", {}).values():
            watchers[:] = [(node, callback) for node, callback in watchers if not node._closing]
