"""The ``resolver`` command tree on click: the sections of ``resolver --help``, a command's
arguments with their help, its example, and the usage errors as the command line always
printed them.

A command is declared beside its handler with :func:`command` (or :func:`group` and
:func:`leaf` for a command with actions, such as ``clock set``). Parsing a command line gives
the handler's :class:`argparse.Namespace`: the values of every option and argument by their
destination, ``command`` (the command's name), ``func`` (its handler) and, for a command with
actions, the action's name under the group's ``dest`` (``clock_cmd``, ``approvers_cmd`` ...).
The handlers are read from their modules when the command runs, never kept by the tree, so a
handler replaced in its module (a test's stand-in) is the one called.

Nothing here imports pydantic or SQLite: ``resolver --help`` and completion stay fast.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import click

from core import __version__

if TYPE_CHECKING:
    import argparse

APPROVERS = "For approvers"
OWNER = "For the team's owner"
TRAINERS = "For trainers"
OPERATORS = "For operators"
SECTIONS = (APPROVERS, OWNER, TRAINERS, OPERATORS)
"""The headings of ``resolver --help``, in their order; every command is under one."""

ORDER = (
    *("runs", "show", "approve", "reject", "refresh", "resume", "claim", "handover", "snooze", "watch"),
    *("trace", "diff", "audit", "tui", "init", "approvers", "ticket", "class", "exercise", "clock", "run", "record"),
    *("changes", "manual-refund", "reset", "doctor", "store", "backup", "restore", "prune", "completion"),
)
"""The order of the commands under their headings: the everyday ones first."""

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


class Declared:
    """A top-level command as declared: its name, section and one line of help at once, the
    click command itself built the first time it is needed (:meth:`command`). ``resolver --help``
    lists the commands from their declarations and a command line builds only the command it
    names: building every option of every command would cost each start a few milliseconds."""

    def __init__(self, name: str, section: str, help: str, make: Callable[[], click.Command]) -> None:
        self.name, self.section, self.help, self.hidden = name, section, help, False
        self._make = make
        self._made: click.Command | None = None

    def command(self) -> click.Command:
        if self._made is None:
            self._made = self._make()
        return self._made


COMMANDS: list[Declared] = []
"""Every top-level command, as its module declares it (:func:`build` orders them by :data:`ORDER`)."""


class Commands(dict[str, Any]):
    """The root's commands by name: each built when it is looked up (:class:`Declared`)."""

    def declared(self, name: str) -> Declared | click.Command:
        """The command ``name`` as declared, unbuilt (its section and one line of help)."""
        declared: Declared | click.Command = dict.__getitem__(self, name)
        return declared

    def __getitem__(self, name: str) -> click.Command:
        value = dict.__getitem__(self, name)
        made: click.Command = value.command() if isinstance(value, Declared) else value
        return made

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def items(self) -> list[tuple[str, click.Command]]:  # type: ignore[override]
        return [(name, self[name]) for name in self]

    def values(self) -> list[click.Command]:  # type: ignore[override]
        return [self[name] for name in self]


class Arg(click.Argument):
    """A positional argument with its help text (click's own arguments take none); the help of
    the command lists them under "Arguments"."""

    def __init__(self, param_decls: Sequence[str], help: str = "", **attrs: Any) -> None:
        super().__init__(param_decls, **attrs)
        self.help = help

    def make_metavar(self, ctx: click.Context | None = None) -> str:
        """``RUN``, ``[RUN]`` when it may be left out, ``ARGS...`` for any number (as argparse spelled them)."""
        var = self.metavar or (self.name or "").upper()
        if not self.required and self.nargs == 1:
            var = f"[{var}]"
        return f"{var}..." if self.nargs != 1 else var


def _write_usage(cmd: click.Command, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    """``usage: resolver approve [OPTIONS] RUN``: spelled as the command line always spelled it."""
    formatter.write_usage(ctx.command_path, " ".join(cmd.collect_usage_pieces(ctx)), prefix="usage: ")


def _write_arguments(cmd: click.Command, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    rows = [(p.human_readable_name, p.help) for p in cmd.get_params(ctx) if isinstance(p, Arg) and p.help]
    if rows:
        with formatter.section("Arguments"):
            formatter.write_dl(rows)


def example_line(cmd: click.Command, ctx: click.Context) -> str | None:
    """``Example: resolver approve RUN ...`` of a command (``""``: the command alone), or None."""
    example = getattr(cmd, "example", None)
    return None if example is None else f"Example: {ctx.command_path} {example}".rstrip()


def _write_example(cmd: click.Command, ctx: click.Context, formatter: click.HelpFormatter) -> None:
    line = example_line(cmd, ctx)
    if line:  # on one line, never folded: it is copied as it is
        formatter.write_paragraph()
        formatter.write(f"{'':>{formatter.current_indent}}{line}\n")


def _whole_names(cmd: click.Command, ctx: click.Context, args: list[str], group: bool) -> list[str]:
    """``args`` with each long option typed by a unique beginning spelled whole (``--stat`` is
    ``--status``), as the command line has always taken them; an ambiguous or unknown beginning
    is left for click to refuse (exit 2). A group's own options end at its first other word."""
    takes_value: dict[str, bool] = {}
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                takes_value[name] = not param.is_flag and not param.count
    out: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if word == "--" or (group and not word.startswith("-")):
            return [*out, word, *args[i:]]
        if not word.startswith("--"):
            out.append(word)
            continue
        name, eq, value = word.partition("=")
        found = [n for n in takes_value if n.startswith(name)] if name not in takes_value else [name]
        name = found[0] if len(found) == 1 else name
        out.append(name + eq + value)
        if takes_value.get(name) and not eq and i < len(args):  # its value, never taken for an option
            out.append(args[i])
            i += 1
    return out


_WRITES_ARGUMENTS = hasattr(click.Command, "format_arguments")
"""Whether click's help calls :meth:`Command.format_arguments` itself (click 8.5 and later)."""


class Command(click.Command):
    """A command with its section (the heading it is listed under), its example and its handler
    (``module``, ``name``: read when it runs)."""

    def __init__(
        self, *args: Any, section: str = "", example: str | None = None, handler: tuple[str, str] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.section, self.example, self.handler = section, example, handler

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _whole_names(self, ctx, args, group=False))

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _write_usage(self, ctx, formatter)

    def format_arguments(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _write_arguments(self, ctx, formatter)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not _WRITES_ARGUMENTS:  # click before 8.5 has no section of arguments: written here
            _write_arguments(self, ctx, formatter)
        super().format_options(ctx, formatter)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _write_example(self, ctx, formatter)


class Group(click.Group):
    """A command with actions (``clock set``, ``approvers add`` ...), or the whole command line:
    its commands listed under their sections' headings, each with its one-line help."""

    def __init__(
        self,
        *args: Any,
        section: str = "",
        example: str | None = None,
        handler: tuple[str, str] | None = None,
        dest: str = "",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("no_args_is_help", False)  # a missing command is a usage error (exit 2), as it always was
        super().__init__(*args, **kwargs)
        self.section, self.example, self.handler, self.dest = section, example, handler, dest

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _whole_names(self, ctx, args, group=True))

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _write_usage(self, ctx, formatter)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        _write_example(self, ctx, formatter)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = self.commands.declared if isinstance(self.commands, Commands) else self.commands.__getitem__
        commands = [(name, listed(name)) for name in self.commands if not listed(name).hidden]
        headings = [s for s in SECTIONS if any(getattr(c, "section", "") == s for _n, c in commands)]
        if not headings:  # the actions of one command: one list
            headings = [""]
        for heading in headings:
            rows = [
                (name, cmd.help if isinstance(cmd, Declared) else cmd.get_short_help_str(200))
                for name, cmd in commands
                if heading == "" or getattr(cmd, "section", "") == heading
            ]
            with formatter.section(heading or "Actions"):
                formatter.write_dl(rows)


def arg(name: str, metavar: str, help: str, **attrs: Any) -> Arg:
    """A positional argument: its destination, its name in the help and usage, its help."""
    return Arg([name], metavar=metavar, help=help, **attrs)


def opt(*decls: str, help: str, **attrs: Any) -> click.Option:
    """An option (``opt("--as", "role", help=...)``: ``--as`` read into ``role``)."""
    return click.Option(list(decls), help=help, **attrs)


def choice(values: Iterable[str]) -> click.Choice:
    return click.Choice(list(values))


def home_options() -> list[click.Option]:
    """``--home`` and ``--store``: taken by every command, before or after its name."""
    return [
        opt(
            "--home",
            metavar="DIR",
            default=None,
            help="home folder (default: $RESOLVER_HOME, `home` in the config file, else ./work in the project folder or "
            "where it holds a home, else your data folder; `resolver doctor` says which)",
        ),
        opt(
            "--store",
            metavar="URL",
            default=None,
            help="where runs, audit and world live: sqlite:///FOLDER (the home folder, the default) or "
            "postgresql://HOST/DATABASE, the team store (default: $RESOLVER_STORE, `store` in the config file)",
        ),
    ]


def common_options() -> list[click.Option]:
    """``--home``, ``--store`` and ``--json``: every command but ``tui`` prints its result as JSON with ``--json``."""
    return [
        *home_options(),
        opt("--json", is_flag=True, default=False, help="print the result as JSON (stable keys: docs/command-line.md)"),
    ]


def _parsed(**_params: Any) -> click.Context:
    """The callback of every command: the command line is only read here, and its context
    handed back; the handler runs in :func:`core.cli.main` (so its errors are said as every
    command's are)."""
    return click.get_current_context()


def command(
    name: str,
    section: str,
    help: str,
    example: str,
    params: Callable[[], Sequence[click.Parameter]] = list,
    common: bool = True,
    context: dict[str, Any] | None = None,
) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Declare the top-level command ``name`` whose handler is the decorated function (returned
    unchanged): listed under ``section`` with ``help`` as its one line, ``example`` (the words
    after ``resolver NAME``) shown by its ``--help``; ``params`` makes its arguments and options
    (called when the command is built)."""

    def declare(handler: Callable[..., int]) -> Callable[..., int]:
        def make() -> click.Command:
            return Command(
                name,
                params=[*params(), *(common_options() if common else home_options())],
                help=help,
                short_help=help,
                callback=_parsed,
                section=section,
                example=example,
                handler=(handler.__module__, handler.__name__),
                context_settings={**CONTEXT, **(context or {})},
            )

        COMMANDS.append(Declared(name, section, help, make))
        return handler

    return declare


def leaf(name: str, help: str, example: str, params: Sequence[click.Parameter] = ()) -> Command:
    """One action of a :func:`group` (``clock set WHEN``)."""
    return Command(
        name,
        params=[*params, *common_options()],
        help=help,
        short_help=help,
        callback=_parsed,
        example=example,
        context_settings=CONTEXT,
    )


def group(
    name: str,
    section: str,
    help: str,
    example: str,
    dest: str,
    actions: Callable[[], Sequence[click.Command]],
    metavar: str = "ACTION",
) -> Callable[[Callable[..., int] | None], Any]:
    """Declare the command ``name`` with ``actions`` (each a :func:`leaf`, made when the command
    is built); the action's name is read into ``dest``. The decorated function is the handler of
    every action."""

    def declare(handler: Callable[..., int] | None) -> Any:
        COMMANDS.append(
            Declared(name, section, help, lambda: _group(name, section, help, example, dest, actions, metavar, handler))
        )
        return handler

    return declare


def _group(
    name: str,
    section: str,
    help: str,
    example: str,
    dest: str,
    actions: Callable[[], Sequence[click.Command]],
    metavar: str,
    handler: Callable[..., int] | None,
) -> Group:
    made = Group(
        name,
        params=common_options(),
        help=help,
        short_help=help,
        section=section,
        example=example,
        handler=(handler.__module__, handler.__name__) if handler else None,
        dest=dest,
        subcommand_metavar=f"{metavar} [ARGS]...",
        context_settings=CONTEXT,
    )
    for action in actions():
        made.add_command(action)
    return made


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"{ctx.info_name} {__version__}")
        ctx.exit(0)


def build() -> Group:
    """The whole command line: every command of the command modules, under its section."""
    # the command modules declared their commands when core.cli (the package, imported before any
    # of its modules) imported them
    root = Group(
        "resolver",
        params=[
            *home_options(),
            click.Option(
                ["--version"],
                is_flag=True,
                expose_value=False,
                is_eager=True,
                callback=_version,
                help="print the version and exit",
            ),
        ],
        help="Checkpoint, approve and execute the Larkfield support agent's work exactly once.",
        subcommand_metavar="COMMAND [ARGS]...",
        context_settings=CONTEXT,
    )
    ordered = sorted(COMMANDS, key=lambda c: ORDER.index(c.name) if c.name in ORDER else len(ORDER))
    root.commands = Commands({declared.name: declared for declared in ordered})
    return root


def namespace(leaf_ctx: click.Context) -> argparse.Namespace:
    """The handler's namespace of a parsed command line (see the module's docstring): the
    innermost ``--home`` and ``--store`` given win, ``--json`` holds when given at any level."""
    chain: list[click.Context] = []
    ctx: click.Context | None = leaf_ctx
    while ctx is not None:
        chain.append(ctx)
        ctx = ctx.parent
    chain.reverse()  # the root, the command, its action
    import argparse  # lazy: --help never builds a namespace

    args = argparse.Namespace(command=chain[1].info_name if len(chain) > 1 else None)
    handler = getattr(chain[1].command, "handler", None) if len(chain) > 1 else None
    args.func = getattr(sys.modules[handler[0]], handler[1]) if handler else None
    args.json = False
    for depth, ctx in enumerate(chain):
        dest = getattr(ctx.command, "dest", "")
        if dest and depth + 1 < len(chain):
            setattr(args, dest, chain[depth + 1].info_name)
        for key, value in ctx.params.items():
            if key in ("home", "store"):
                if value is not None:
                    setattr(args, key, value)
            elif key == "json":
                args.json = args.json or bool(value)
            else:
                setattr(args, key, list(value) if isinstance(value, tuple) else value)
    return args
