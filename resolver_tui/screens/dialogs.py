"""Modal dialogs: confirm (defaults to No) and reject (a reason is required), the passphrase
and the run picker, all :class:`Fenced`: they answer only keys typed after they were drawn.

They show untrusted text (actions, names) as literal content only.
"""

from __future__ import annotations

import time
from typing import Any, Literal, TypeVar

from core.api.views import not_one_line
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from resolver_tui.keys import bindings
from resolver_tui.widgets.safe import FoldedLines, plain

T = TypeVar("T")


class Fenced(ModalScreen[T]):
    """A modal screen that answers only keys that arrived after it was drawn.

    Keys of one terminal read (``a`` then ``y`` typed ahead, over SSH or on a busy machine) are
    stamped when they arrive, before the dialog exists; the app drops every key stamped before
    :attr:`drawn_at` while this screen is on top (:meth:`takes`), so a key typed before the
    person could read the dialog never answers it. Textual stamps events with
    :func:`time.monotonic` on POSIX (``textual._time``), the only systems resolver runs on.
    """

    drawn_at: float | None = None
    """When the screen was first drawn (``time.monotonic``), None before."""

    def _on_mount(self, event: events.Mount) -> None:
        self.call_after_refresh(self._drawn)

    def _drawn(self) -> None:
        self.drawn_at = time.monotonic()

    def takes(self, event: events.Key) -> bool:
        """True when ``event`` arrived after the screen was drawn."""
        return self.drawn_at is not None and event.time >= self.drawn_at


def dialog_head(title: str, body: list[str]) -> tuple[Static, FoldedLines]:
    """A dialog's title (bold) and body, both shown literally (never parsed as markup)."""
    return Static(plain(title, "bold"), id="dialog-title"), FoldedLines(body, id="dialog-body")


def button_row(
    yes: str, yes_id: str, variant: Literal["warning", "error"], no: str, no_id: str, *, compact: bool = True
) -> Horizontal:
    """A dialog's row of two buttons: ``yes`` (its id ``yes_id``, its ``variant``: warning or
    error) and ``no`` (``no_id``, primary), the labels shown literally."""
    return Horizontal(
        Button(plain(yes), id=yes_id, variant=variant, compact=compact),
        Button(plain(no), id=no_id, variant="primary", compact=compact),
        classes="buttons",
    )


class ConfirmScreen(Fenced[bool]):
    """Ask yes or no about a destructive step; Enter, Esc and ``n`` all mean No.

    ``title`` and ``body`` are shown literally (never parsed as markup).
    """

    BINDINGS = bindings("confirm")

    def __init__(self, title: str, body: list[str], yes: str = "Yes", seal: str | None = None) -> None:
        """``seal``: a line kept on screen beside the buttons, never scrolled away
        (:func:`core.api.views.decision_seal`: the digest and who decides)."""
        super().__init__()
        self.title_text = title
        self.body = body
        self.yes = yes
        self.seal = seal

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield from dialog_head(self.title_text, self.body)
            with Vertical(classes="dialog-foot"):  # docked: on screen while the body scrolls
                if self.seal:
                    yield Static(plain(self.seal, "bold"), id="dialog-seal")
                yield button_row(self.yes, "yes", "warning", "No", "no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus(scroll_visible=False)
        self.query_one("#dialog").scroll_home(animate=False, immediate=True)  # the title and actions first

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class ReasonInput(Input):
    """The reject dialog's reason (one line, as core takes it). A paste holding line breaks is
    refused whole with core's sentence (:func:`core.api.views.not_one_line`, the command line's),
    never cut to its first line silently as Textual's ``Input`` does. It never
    selects its text on focus: keys typed before its focus event would replace each other (a
    trial's ``/`` box)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("select_on_focus", False)
        super().__init__(*args, **kwargs)

    class Refused(Message):
        """A paste was refused: ``sentence`` says why; the reason is left as it was."""

        def __init__(self, sentence: str) -> None:
            super().__init__()
            self.sentence = sentence

    what = "reason"
    """What the line is, for the refusal's sentence (``reason``, ``note``)."""

    def _on_paste(self, event: events.Paste) -> None:
        said = not_one_line(event.text, self.what)
        if said:
            event.prevent_default()  # Input's own handler would keep the first line
            event.stop()
            self.post_message(self.Refused(said))


class RejectScreen(Fenced[str | None]):
    """Reject with a reason: returns the reason, or None when cancelled. Empty is refused."""

    BINDINGS = bindings("dialog")

    def __init__(self, title: str, body: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield from dialog_head(self.title_text, self.body)
            yield Label("Reason (required): what is wrong with the proposal?")
            yield ReasonInput(placeholder="reason", id="reason", compact=True)
            yield Static("", id="reason-error", markup=False)
            yield button_row("Reject", "reject", "error", "Cancel", "cancel")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def _submit(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        said = "A rejection needs a reason." if not reason else not_one_line(reason, "reason")
        if said:
            self.query_one("#reason-error", Static).update(said)
            self.query_one("#reason", Input).focus()
            return
        self.dismiss(reason)

    @on(ReasonInput.Refused)
    def refused(self, event: ReasonInput.Refused) -> None:
        self.query_one("#reason-error", Static).update(event.sentence)

    @on(Input.Submitted)
    def submitted(self) -> None:
        self._submit()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "reject":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NoteInput(ReasonInput):
    """The hand-over dialog's note: one line, a paste with line breaks refused whole."""

    what = "note"


class MarkScreen(Fenced[dict[str, str] | None]):
    """Hand over or snooze a waiting run: one line per field, returned as
    ``{field id: text}`` (stripped), or None when cancelled (Esc or Cancel).

    ``fields`` are ``(id, label, placeholder)``; the title, labels and body are shown literally.
    The dialog checks nothing itself: core's refusal (:meth:`core.api.home.Home.mark`) is its word.
    """

    BINDINGS = bindings("dialog")

    def __init__(self, title: str, body: list[str], fields: list[tuple[str, str, str]], yes: str) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.fields = fields
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield from dialog_head(self.title_text, self.body)
            for field_id, label, placeholder in self.fields:
                yield Label(plain(label))
                box = NoteInput if field_id == "note" else ReasonInput
                yield box(placeholder=placeholder, id=field_id, compact=True)
            yield Static("", id="mark-error", markup=False)
            yield button_row(self.yes, "yes", "warning", "Cancel", "cancel")

    def on_mount(self) -> None:
        self.query(Input).first().focus()

    def _submit(self) -> None:
        self.dismiss({field_id: self.query_one(f"#{field_id}", Input).value.strip() for field_id, _, _ in self.fields})

    @on(ReasonInput.Refused)
    def refused(self, event: ReasonInput.Refused) -> None:
        self.query_one("#mark-error", Static).update(event.sentence)

    @on(Input.Submitted)
    def submitted(self, event: Input.Submitted) -> None:
        inputs = list(self.query(Input))
        if event.input is inputs[-1]:
            self._submit()
        else:  # Enter in the first line moves on to the next
            inputs[inputs.index(event.input) + 1].focus()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "yes":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PickRunScreen(Fenced[str | None]):
    """Choose one of ``runs`` (run IDs, shown literally): returns the run ID, or None (Esc).

    The compare key opens it when a ticket has more than two runs, so any pair can be compared.
    """

    BINDINGS = bindings("dialog")

    def __init__(self, title: str, runs: list[str]) -> None:
        super().__init__()
        self.title_text = title
        self.runs = runs

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield Static(plain(self.title_text, "bold"), id="dialog-title")
            yield OptionList(*(Option(plain(run_id), id=run_id) for run_id in self.runs), id="pick")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class PassphraseApproveScreen(Fenced[str | None]):
    """Approve in a shop home: the approve dialog with a masked passphrase input.

    Returns the passphrase typed (kept by the caller only to unlock the key once), or None when
    cancelled. Esc cancels; an empty passphrase is refused in place. The title and body are shown
    literally, as in :class:`ConfirmScreen`.
    """

    BINDINGS = bindings("dialog")

    def __init__(self, title: str, body: list[str], who: str, seal: str | None = None, yes: str = "Approve") -> None:
        """``seal``: as for :class:`ConfirmScreen`, kept on screen above the passphrase box;
        ``yes``: the button's word (``Unlock`` when a mark asks the passphrase)."""
        super().__init__()
        self.title_text = title
        self.body = body
        self.who = who
        self.seal = seal
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog", classes="dialog"):
            yield from dialog_head(self.title_text, self.body)
            with Vertical(classes="dialog-foot"):  # docked: on screen while the body scrolls
                if self.seal:
                    yield Static(plain(self.seal, "bold"), id="dialog-seal")
                yield Label(plain(f"Passphrase for {self.who} (kept until key_idle_minutes pass without a decision):"))
                yield Input(placeholder="passphrase", password=True, id="passphrase", select_on_focus=False)
                yield Static("", id="passphrase-error", markup=False)
                yield button_row(self.yes, "yes", "warning", "Cancel", "no", compact=False)

    def on_mount(self) -> None:
        self.query_one("#passphrase", Input).focus(scroll_visible=False)
        self.query_one("#dialog").scroll_home(animate=False, immediate=True)  # the title and actions first

    def _submit(self) -> None:
        value = self.query_one("#passphrase", Input).value
        if not value:
            self.query_one("#passphrase-error", Static).update("Type your passphrase, or press Esc.")
            return
        self.dismiss(value)

    @on(Input.Submitted)
    def submitted(self) -> None:
        self._submit()

    @on(Button.Pressed)
    def pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "yes":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)
