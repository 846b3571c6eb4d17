"""The role a proposal needs never falls, and both back-ends agree on it.

:func:`core.engine.policy.proposal_role` (every face, the approval, the executor) and the team store's
``resolver_needed_role`` (the database's own check inside ``resolver_decide``) are run on the one
table of cases in ``tests/role_cases.py``, whose expected roles are written out by hand from the
shipped policy. A trial's second line of -100.00 on a 119.00 refund summed to 19.00, which an
agent may approve; no line may lower the role.
"""

from __future__ import annotations

import json

import pytest
from core.engine.policy import proposal_role
from core.ground.state import ProposedAction
from pydantic import TypeAdapter

from pg import fresh_schema
from role_cases import CASES

ACTIONS = TypeAdapter(list[ProposedAction])


@pytest.mark.parametrize(("what", "actions", "role"), CASES, ids=[c[0] for c in CASES])
def test_the_python_rule_gives_the_role_of_every_case(what, actions, role):
    assert proposal_role(ACTIONS.validate_python(actions)) == role, what


def test_no_line_lowers_the_role_of_a_proposal():
    """Adding any line, whatever its sign, never makes a proposal need a lower role."""
    from core.ground.data import ROLES

    base = [row for _, row, _ in CASES if row]
    extra = [row[0] for row in base]
    for actions in base:
        before = ROLES.index(proposal_role(ACTIONS.validate_python(actions)))
        for line in extra:
            after = ROLES.index(proposal_role(ACTIONS.validate_python([*actions, line])))
            assert after >= before, (actions, line)


def test_the_team_store_gives_the_role_of_every_case(tmp_path):
    """``resolver_needed_role`` as the latest migration leaves it, on every case of the table."""
    import psycopg
    from core.api.home import Home

    with fresh_schema() as url:
        Home(tmp_path / "h", store=url)  # the store made and migrated to the latest
        with psycopg.connect(url, autocommit=True) as conn:
            for what, actions, role in CASES:
                row = conn.execute("SELECT resolver_needed_role(%s::jsonb)", (json.dumps(actions),)).fetchone()
                assert row is not None and row[0] == role, what
