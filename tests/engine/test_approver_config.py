"""Who is at the keyboard: the approver config file, asked for once, never a silent default role,
and --as/--name overriding it in practice homes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from core.engine import approver_config
from core.engine.approver_config import ApproverConfig
from core.ground.errors import ResolverError
from resolver_tui.__main__ import parse_args, who


def test_tests_never_touch_the_real_config_directory(approver_config_dir: Path):
    assert approver_config.config_path() == approver_config_dir / "config.toml"
    assert os.environ["RESOLVER_CONFIG"] == str(approver_config_dir / "config.toml")


def test_the_first_start_asks_once_and_saves_a_toml_file():
    answers = iter(["", "Tomás", "boss", "team_lead"])
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return next(answers)

    assert who(parse_args([]), "practice", ask) == ("team_lead", "Tomás")
    assert len(asked) == 4  # the empty name and the unknown role are asked again
    path = approver_config.config_path()
    assert path.read_text(encoding="utf-8") == 'name = "Tomás"\nrole = "team_lead"\n'
    assert path.stat().st_mode & 0o777 == 0o600

    def never(prompt: str) -> str:
        raise AssertionError("asked twice")

    assert who(parse_args([]), "practice", never) == ("team_lead", "Tomás")


def test_the_role_is_offered_by_its_labels_and_a_refused_answer_says_why_before_asking_again():
    """A newcomer's trip: the question offered ``agent, team_lead, grace`` (the config file's
    names, not the labels the app shows) and asked again in silence after ``team lead`` or ``2``."""
    answers = iter(["Ana", "boss", "", "7", "Team Lead"])
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    assert who(parse_args([]), "practice", ask) == ("team_lead", "Ana")
    offer = "Your role in practice homes: 1 agent, 2 team lead, 3 grace (the owner). Type its number or name: "
    assert prompts[1:] == [
        offer,
        f"'boss' is not one of the roles. {offer}",
        f"No role was given. {offer}",
        f"7 is not one of the numbers 1 to 3. {offer}",
    ]
    assert approver_config.load() == ApproverConfig("Ana", "team_lead")


@pytest.mark.parametrize(
    ("answer", "role"),
    [
        ("1", "agent"),
        ("2", "team_lead"),
        (" 3 ", "grace"),
        ("team lead", "team_lead"),
        ("TEAM-LEAD", "team_lead"),
        ("team_lead", "team_lead"),
        ("Grace", "grace"),
    ],
)
def test_a_role_is_taken_by_its_number_label_or_name(answer, role):
    assert approver_config.role_of_answer(answer) == (role, "")


def test_a_refused_role_answer_is_quoted_safely():
    role, why = approver_config.role_of_answer("\x1b]0;owned\x07boss" + "x" * 80)
    assert role is None and "\x1b" not in why and "\x07" not in why and len(why) < 80


def test_as_and_name_override_the_file_in_a_practice_home_not_in_a_shop():
    approver_config.save(ApproverConfig("Tomás", "team_lead"))
    assert who(parse_args(["--as", "grace", "--name", "Grace"]), "practice") == ("grace", "Grace")
    assert who(parse_args(["--as", "agent"]), "practice") == ("agent", "Tomás")
    with pytest.raises(ResolverError, match="shop home"):
        who(parse_args(["--as", "grace"]), "shop")
    assert who(parse_args([]), "shop") == ("team_lead", "Tomás")


def test_no_silent_default_role():
    approver_config.save(ApproverConfig("Ana", None))
    with pytest.raises(ResolverError, match="No role"):
        who(parse_args([]), "practice")
    assert parse_args([]).role is None


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("name = ", "Cannot read"),
        ('name = ""\n', "no name"),
        ("name = 3\n", "no name"),
        ('name = "A"\nrole = "boss"\n', "use one of"),
    ],
)
def test_a_bad_file_is_one_sentence(text: str, said: str):
    approver_config.config_path().write_text(text, encoding="utf-8")
    with pytest.raises(ResolverError, match=said):
        approver_config.load()


def test_a_closed_terminal_saves_nothing():
    def closed(prompt: str) -> str:
        raise EOFError

    with pytest.raises(ResolverError, match="Nobody said"):
        who(parse_args([]), "practice", closed)
    assert not approver_config.config_path().exists()


KEPT = """# Grace's resolver settings
home = "/srv/queue"   # the shop's home, on the shared drive
"odd key" = 3
refresh = 5
name = "Old"

[app]  # a table the app does not know
theme = "nord"
count = 10
"""


def test_saving_keeps_comments_tables_types_and_quoted_keys_byte_for_byte():
    """The hand-written writer dropped the comment, the integer, the quoted key and the [app]
    table. Only the name line changes; the role line is added before the table."""
    path = approver_config.config_path()
    path.write_text(KEPT, encoding="utf-8")
    approver_config.save(ApproverConfig("Tomás", "team_lead"))
    assert path.read_text(encoding="utf-8") == KEPT.replace('name = "Old"\n', 'name = "Tomás"\nrole = "team_lead"\n')
    assert approver_config.load() == ApproverConfig("Tomás", "team_lead")
    approver_config.save(ApproverConfig("Tomás", None))  # no role: the role line goes, the rest stays
    assert path.read_text(encoding="utf-8") == KEPT.replace('name = "Old"\n', 'name = "Tomás"\n')


def test_the_first_start_question_keeps_an_existing_file_with_a_home_and_a_table():
    path = approver_config.config_path()
    text = '# where I work\nhome = "shop"\n\n[app]\ncount = 10\n'
    path.write_text(text, encoding="utf-8")
    answers = iter(["Ana", "agent"])
    assert who(parse_args([]), "practice", lambda _p: next(answers)) == ("agent", "Ana")
    assert (
        path.read_text(encoding="utf-8") == '# where I work\nhome = "shop"\nname = "Ana"\nrole = "agent"\n\n[app]\ncount = 10\n'
    )


def test_a_name_with_an_escape_character_is_asked_again_and_the_file_stays_readable():
    answers = iter(["Tom\x1b]0;owned\x07", "Line\nbreak", "Tomás", "team_lead"])
    assert who(parse_args([]), "practice", lambda _p: next(answers)) == ("team_lead", "Tomás")
    # and a name given to save() as it is still makes a file TOML reads back
    approver_config.save(ApproverConfig('Q"\\\x1b[31m', "agent"))
    assert approver_config.load() == ApproverConfig('Q"\\\x1b[31m', "agent")


def test_saving_over_a_file_that_is_not_toml_refuses_and_keeps_it():
    path = approver_config.config_path()
    path.write_text("name = \n# my notes\n", encoding="utf-8")
    with pytest.raises(ResolverError, match="nothing was saved"):
        approver_config.save(ApproverConfig("Ana", "agent"))
    assert path.read_text(encoding="utf-8") == "name = \n# my notes\n"


def test_a_name_of_bytes_that_are_not_utf8_is_asked_again_and_saving_them_is_one_sentence():
    """A new user's finding: bytes a terminal sent that are not UTF-8 (surrogate escapes) ended in
    a UnicodeEncodeError traceback from save()."""
    prompts: list[str] = []
    answers = iter(["Ab\udcff\udcfeC", "Ana", "agent"])

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return next(answers)

    assert who(parse_args([]), "practice", ask) == ("agent", "Ana")
    assert "plain text" in prompts[1]
    with pytest.raises(ResolverError, match="not UTF-8"):
        approver_config.save(ApproverConfig("Ab\udcffC", "agent"))
    assert approver_config.load() == ApproverConfig("Ana", "agent")


def test_a_config_folder_that_cannot_be_made_is_one_sentence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A new user's finding: RESOLVER_CONFIG=/proc/nope/cfg.toml ended in a FileNotFoundError traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    monkeypatch.setenv("RESOLVER_CONFIG", str(blocker / "cfg.toml"))
    with pytest.raises(ResolverError, match="Cannot make the folder"):
        approver_config.save(ApproverConfig("Ana", "agent"))


def test_key_idle_minutes_defaults_to_5_and_refuses_a_value_out_of_range(tmp_path):
    """How long the app keeps a key unlocked without a decision."""
    import pytest
    from core.engine.approver_config import key_idle_seconds
    from core.ground.errors import ResolverError

    path = tmp_path / "config.toml"
    assert key_idle_seconds(path) == 300.0
    path.write_text('name = "Ana"\nkey_idle_minutes = 2\n', encoding="utf-8")
    assert key_idle_seconds(path) == 120.0
    for bad in ('"soon"', "0", "true", "100000"):
        path.write_text(f'name = "Ana"\nkey_idle_minutes = {bad}\n', encoding="utf-8")
        with pytest.raises(ResolverError, match="key_idle_minutes"):
            key_idle_seconds(path)


def test_a_key_holder_forgets_the_key_after_its_idle_time():
    from core.engine.signing import KeyHolder

    now = [0.0]
    holder = KeyHolder(300.0, clock=lambda: now[0])
    holder.put("key")  # type: ignore[arg-type]
    now[0] = 299.0
    assert holder.get() == "key"  # a use: the idle time starts again
    now[0] = 598.0
    assert holder.get() == "key"
    now[0] = 899.0
    assert holder.get() is None and holder.get() is None
