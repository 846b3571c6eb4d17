"""The team's owner's commands: the home itself (``init``, ``init --shop``), the approvers
registry of a shop home (``approvers init|key|add|list|revoke|recover``) and the home's own
tickets (``ticket add|list``).

Each command is declared beside its handler. Modules are imported inside the handlers that need
them, so ``resolver --help`` loads neither pydantic nor SQLite.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from core.cli import shared
from core.cli.shared import (
    ROLES,
    _ask,
    _json,
    _print,
    _shell_word,
    owner_passphrase_fd,
    passphrase_fd,
)
from core.cli.tree import OWNER, arg, choice, command, group, leaf, opt
from core.ground.errors import ApprovalRefused, BadArgument, ResolverError
from core.ground.exitcodes import EXIT_ERROR
from core.ground.safetext import one_line, pad, safe_text

if TYPE_CHECKING:
    import argparse
    from datetime import datetime

    from core.api.home import Home
    from core.engine.approvers import Registry, Unlocked
    from core.ground.homepath import HomeLocation


@group(
    "ticket",
    OWNER,
    "the home's own tickets: add one from TOML or JSON, list them",
    example="add ticket.toml",
    dest="ticket_cmd",
    actions=lambda: [
        leaf(
            "add",
            "add a ticket from a .toml or .json file (checked whole)",
            example="ticket.toml",
            params=[arg("file", "FILE", "the ticket: the keys of data/tickets/T-nnnnn.json, in TOML or JSON")],
        ),
        leaf("list", "the home's own tickets", example="--json"),
    ],
)
def cmd_ticket(home: Home, args: argparse.Namespace) -> int:
    """``resolver ticket add FILE`` (:meth:`core.api.home.Home.add_ticket`) and ``ticket list``
    (:func:`core.ground.tickets.list_tickets`): the home's own tickets."""
    from pathlib import Path  # lazy: not for --help

    from core.ground.tickets import TICKETS, list_tickets, ticket_line  # lazy: not for --help

    if args.ticket_cmd == "add":
        added = home.add_ticket(Path(args.file))
        t = added.ticket
        if args.json:
            _json({"task_id": t.task_id, "file": str(added.path), "ticket": t.model_dump(mode="json")})
            return 0
        _print(
            [
                f"Added {ticket_line(t)} as {added.path}.",
                f'Run it with: {shared.PROG} run {t.task_id} --model ROUTE (a live route; see "Use a live model")',
            ]
        )
        return 0
    listed = list_tickets(home.root / TICKETS)
    if args.json:
        _json(
            [
                {"task_id": task_id, **(t.model_dump(mode="json") if t else {}), "problem": problem}
                for task_id, t, problem in listed
            ]
        )
        return 0
    if not listed:
        _print(f"No tickets of this home's own in {home.root / TICKETS}; add one with `{shared.PROG} ticket add FILE`.")
        return 0
    _print([ticket_line(t) if t else f"{task_id}  cannot be read: {one_line(problem)}" for task_id, t, problem in listed])
    return 0


@group(
    "approvers",
    OWNER,
    "shop home: the approvers registry (init, key, add, list, revoke, recover)",
    example="add Tomás --role team_lead --public-key HEX --fingerprint FP",
    dest="approvers_cmd",
    actions=lambda: [
        leaf(
            "init",
            "the owner makes the registry and their key",
            example="--name Grace",
            params=[opt("--name", default="Grace", help="the owner's name (default Grace)"), passphrase_fd()],
        ),
        leaf(
            "key",
            "a new approver makes their key on their own machine (prints the public key)",
            example="--name Tomás",
            params=[opt("--name", required=True, help="the new approver's name, as the owner will add it"), passphrase_fd()],
        ),
        leaf(
            "add",
            "add an approver (their passphrase, then the owner's)",
            example="Tomás --role team_lead --public-key HEX --fingerprint FP",
            params=[
                arg("name", "NAME", "the approver's name, as they will give it with --name"),
                opt("--role", required=True, type=choice(ROLES), help="the approver's role: what they may decide"),
                opt(
                    "--public-key",
                    metavar="HEX",
                    default=None,
                    help="the public key `approvers key` printed on the approver's machine (then no passphrase of theirs is asked)",
                ),
                opt(
                    "--fingerprint",
                    metavar="FP",
                    default=None,
                    help="the fingerprint `approvers key` printed beside the key: a key of another fingerprint is refused, "
                    "nothing written (without it a terminal asks to confirm the fingerprint)",
                ),
                owner_passphrase_fd(),
                passphrase_fd(),
            ],
        ),
        leaf("list", "every approver, their role, key fingerprint and state", example="--json"),
        leaf(
            "revoke",
            "revoke an approver (the owner's passphrase)",
            example="Tomás",
            params=[arg("name", "NAME", "the approver to revoke"), owner_passphrase_fd()],
        ),
        leaf(
            "recover",
            "a new owner passphrase with the recovery code",
            example="--code-fd 3",
            params=[
                opt("--code-fd", type=int, metavar="N", default=None, help="read the recovery code from file descriptor N"),
                passphrase_fd(),
            ],
        ),
    ],
)
def cmd_approvers(home: Home, args: argparse.Namespace) -> int:
    """``approvers init|key|add|list|revoke|recover``: the registry of a shop home;
    ``key`` makes a new approver's key on their own machine. One function per action."""
    from core.api.homekind import require_shop  # lazy: not for --help

    require_shop(home.root, "`approvers`", home.kind)
    actions = {
        "init": _approvers_init,
        "key": _approvers_key,
        "add": _approvers_add,
        "revoke": _approvers_revoke,
        "recover": _approvers_recover,
        "list": _approvers_list,
    }
    registry = home.registry()
    now = home.clock.now()  # a damaged clock is said before any action, whichever it is
    return actions[args.approvers_cmd](home, registry, args, now)


def _recorder(home: Home) -> Callable[[str, str, str], Callable[[Unlocked, dict[str, Any]], None]]:
    """The registry's changes as owner-signed audit rows, with the head."""
    from core.engine.signing import record_registry_change  # lazy: not for --help

    def record(change: str, name: str, role: str) -> Callable[[Unlocked, dict[str, Any]], None]:
        return lambda owner, seal: record_registry_change(home.parts, home.store, owner, change, name, role, seal)

    return record


def _approvers_init(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers init``: the owner makes the registry and their key."""
    from core.engine.signing import read_passphrase  # lazy: not for --help

    record = _recorder(home)
    passphrase = read_passphrase(f"Passphrase for the owner {args.name}: ", fd=args.passphrase_fd, confirm=True)
    made = registry.init(args.name, passphrase, now, record=record("init", args.name.strip(), "grace"))
    if args.json:
        _json({"owner": made.owner, "fingerprint": made.fingerprint, "recovery_code": made.recovery_code})
        return 0
    _print(
        [
            f"Made the approvers registry of {registry.shown}; owner {safe_text(made.owner)} (role grace).",
            f"Owner key fingerprint: {made.fingerprint}",
            "  Write it down: `resolver doctor` shows it, compare the two.",
            f"Recovery code (shown once): {made.recovery_code}",
            "  Keep it on paper, away from this machine: `resolver approvers recover` gives the owner a new passphrase with it.",
        ]
    )
    return 0


def _approvers_key(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers key --name N``: a new approver's key, made on their own machine."""
    from core.engine.approvers import fingerprint  # lazy: not for --help
    from core.engine.signing import read_passphrase  # lazy: not for --help

    passphrase = read_passphrase(f"New passphrase for {args.name}: ", fd=args.passphrase_fd, confirm=True)
    key, path = registry.make_key(args.name, passphrase)
    if args.json:
        _json({"name": key.name, "public_key": key.public_key, "fingerprint": fingerprint(key.public_key), "file": str(path)})
        return 0
    _print(
        [
            f"Made a key for {safe_text(key.name)} on this machine: {path} (mode 0600, encrypted with the passphrase).",
            f"Public key: {key.public_key}",
            f"Fingerprint: {fingerprint(key.public_key)}",
            "  Give the public key and its fingerprint to the owner, who adds it with "
            f"`{shared.PROG} approvers add {_shell_word(key.name)} --role ROLE --public-key {key.public_key} "
            f"--fingerprint {_shell_word(fingerprint(key.public_key))}` (a key of another fingerprint is refused).",
        ]
    )
    return 0


def _approvers_add(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers add NAME --role R``: the owner adds an approver (their key made here, or given)."""
    from core.engine.approvers import fingerprint  # lazy: not for --help
    from core.engine.rulebook import role_label  # lazy: not for --help
    from core.engine.signing import OWNER_PASSPHRASE_ENV, read_passphrase  # lazy: not for --help

    record = _recorder(home)
    if args.public_key is not None:  # before anything is read or asked: exit 2, nothing written
        from core.engine.approvers import (  # lazy: not for --help
            RegistryError,
            check_fingerprint,
            check_public_key,
        )

        try:
            args.public_key = check_public_key(args.public_key)
            if args.fingerprint is not None:  # a typo in the key is caught before anything is written
                check_fingerprint(args.fingerprint, args.public_key)
        except RegistryError as exc:
            raise BadArgument(str(exc)) from None
    elif args.fingerprint is not None:
        raise BadArgument("--fingerprint checks the key given with --public-key; give both, or neither.")
    registry.valid_entry(registry.seal()["owner"])  # a damaged registry is said before any passphrase is asked
    if args.public_key is not None and args.fingerprint is None:
        _confirm_fingerprint(args.name, args.public_key)
    passphrase = ""
    if args.public_key is None:
        passphrase = read_passphrase(f"New passphrase for {args.name}: ", fd=args.passphrase_fd, confirm=True)
    owner_passphrase = read_passphrase(
        "The owner's passphrase, to sign the entry: ", fd=args.owner_passphrase_fd, env=OWNER_PASSPHRASE_ENV
    )
    entry = registry.add(
        args.name,
        args.role,
        passphrase,
        owner_passphrase,
        now,
        record=record("add", args.name.strip(), args.role),
        public_key=args.public_key,
    )
    kept = registry.keys.path(entry.name) if registry.team and args.public_key is None else None
    if args.public_key is not None and args.fingerprint is None and not sys.stdin.isatty():
        _told_fingerprint(entry.name, args.public_key)
    if args.json:
        _json(
            {
                "name": entry.name,
                "role": entry.role,
                "fingerprint": fingerprint(entry.public_key),
                "key_file": str(kept) if kept else None,
            }
        )
        return 0
    _print(f"Added {one_line(entry.name)} as {role_label(entry.role)}, key {fingerprint(entry.public_key)}; signed by the owner.")
    if kept is not None:
        _print(
            f"  Their encrypted key is on this machine: {kept}. Copy that file into the keys folder of their home "
            "folder on their machine (mode 0600), or next time let them make it there with `resolver approvers key`."
        )
    return 0


def _approvers_revoke(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers revoke NAME``: none of their decisions executes from now on."""
    from core.engine.signing import OWNER_PASSPHRASE_ENV, read_passphrase  # lazy: not for --help

    record = _recorder(home)
    owner_passphrase = read_passphrase(
        "The owner's passphrase, to sign the revocation: ", fd=args.owner_passphrase_fd, env=OWNER_PASSPHRASE_ENV
    )
    revoked = next((e for e in registry.entries() if e.name.casefold() == args.name.strip().casefold()), None)
    who, role = (revoked.name, revoked.role) if revoked else (args.name.strip(), "")
    entry = registry.revoke(args.name, owner_passphrase, now, record=record("revoke", who, role))
    if args.json:
        _json({"name": entry.name, "revoked_at": entry.revoked_at})
        return 0
    _print(f"Revoked {safe_text(entry.name)} at {entry.revoked_at}: none of their decisions executes from now on.")
    return 0


def _approvers_recover(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers recover``: a new owner passphrase with the recovery code."""
    from core.engine.signing import read_passphrase  # lazy: not for --help

    record = _recorder(home)
    code = read_passphrase("Recovery code: ", fd=args.code_fd, env="RESOLVER_RECOVERY_CODE")
    passphrase = read_passphrase("New passphrase for the owner: ", fd=args.passphrase_fd, confirm=True)
    owner_name = str(registry.seal()["owner"])
    new_code = registry.recover(code, passphrase, now, record=record("recover", owner_name, "grace"))
    if args.json:
        _json({"recovery_code": new_code})
        return 0
    _print(
        [
            "The owner's passphrase is changed; the old recovery code no longer works.",
            f"New recovery code (shown once): {new_code}",
        ]
    )
    return 0


def _approvers_list(home: Home, registry: Registry, args: argparse.Namespace, now: datetime) -> int:
    """``approvers list``: every approver, their role, key fingerprint and state; exit 1 when the registry does not verify."""
    from core.engine.approvers import fingerprint  # lazy: not for --help

    problems = registry.problems()
    if args.json:
        _json(
            {
                "owner_fingerprint": registry.fingerprint(),
                "approvers": [
                    {
                        "name": e.name,
                        "role": e.role,
                        "fingerprint": fingerprint(e.public_key),
                        "added_at": e.added_at,
                        "revoked_at": e.revoked_at if e.revoked else None,
                    }
                    for e in registry.entries()
                ],
                "problems": problems,
            }
        )
        return EXIT_ERROR if problems else 0
    _print(f"Owner key: {registry.fingerprint()}")
    for e in registry.entries():
        state = f"revoked {e.revoked_at}" if e.revoked else "active"
        _print(f"  {pad(one_line(e.name), 20)} {e.role:<10} {fingerprint(e.public_key)}  added {e.added_at}  {state}")
    if problems:
        raise ResolverError(f"The approvers registry does not verify: {'; '.join(problems)}.")
    return 0


def _confirm_fingerprint(name: str, public_key: str) -> None:
    """``approvers add NAME --public-key HEX`` without ``--fingerprint`` (a new user's trial: a
    typo in the key took the name for good): on a terminal, show the key's fingerprint and ask
    whether it is the one ``approvers key`` printed (anything but y refuses, exit 4, nothing
    written); without a terminal (a script) go on: :func:`_told_fingerprint` says the
    fingerprint once the key is added.

    Raises:
        ApprovalRefused: the owner did not confirm.
    """
    from core.engine.approvers import fingerprint  # lazy: not for --help

    said = fingerprint(public_key)
    if not sys.stdin.isatty():  # said once the key is added (:func:`_told_fingerprint`)
        return
    question = (
        f"The public key's fingerprint is {said}.\nIs it the one `approvers key` printed on {one_line(name)}'s machine? [y/N] "
    )
    print(safe_text(question), end="", file=sys.stderr, flush=True)  # stderr: stdout stays the result's (--json)
    if not _ask(""):
        raise ApprovalRefused(
            f"Not added: the fingerprint was not confirmed. Nothing was written; check the key, or pass --fingerprint {said!r}."
        )


def _told_fingerprint(name: str, public_key: str) -> None:
    """After ``approvers add NAME --public-key HEX`` without ``--fingerprint`` and without a
    terminal: the added key's fingerprint on stderr (for the script's log), to compare with the
    one ``approvers key`` printed."""
    from core.engine.approvers import fingerprint  # lazy: not for --help

    print(
        safe_text(
            f"The key added for {one_line(name)} has the fingerprint {fingerprint(public_key)}; compare it with the one "
            "`resolver approvers key` printed on their machine (--fingerprint checks it before anything is written)."
        ),
        file=sys.stderr,
    )


@command(
    "init",
    OWNER,
    "make the home folder (--shop: a shop home, for good)",
    example="--shop --home /srv/larkfield",
    params=lambda: [
        opt("--shop", is_flag=True, default=False, help="a shop home: real time only, the lesson's commands refused")
    ],
)
def cmd_init(where: HomeLocation, args: argparse.Namespace) -> int:
    """``resolver init [--shop]``: make the home folder of ``where`` and its databases (a shop
    home is one for good, :func:`core.api.homekind.init_home`)."""
    from core.api.home import Home  # lazy: not for --help
    from core.api.homekind import init_home  # lazy: not for --help

    root, store = where.path, where.store.url
    made = init_home(root, shop=args.shop, store=store)
    Home(root, store=store)  # builds the databases (the kind is already written)
    if args.json:
        _json({"home": str(root), "kind": "shop" if args.shop else "practice", "lines": made})
        return 0
    _print(made)
    return 0
