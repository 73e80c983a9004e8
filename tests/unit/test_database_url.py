"""DATABASE_URL: the accepted forms pass, anything else is refused with a message naming them."""

from __future__ import annotations

import pytest

from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import GatewaySettings


@pytest.mark.parametrize(
    "url",
    [
        "",
        "postgresql://u:p@db:5432/agent",
        "postgres://u@db/agent",
        "postgresql+asyncpg://u@db/agent",
        "sqlite:///relative.db",
        "sqlite+aiosqlite:////abs/agent.db",
    ],
)
def test_accepted_forms(url: str) -> None:
    assert GatewaySettings.from_env({"DATABASE_URL": url}).database_url == url


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("agentloop.db", "has no scheme"),
        ("/var/lib/agentloop.db", "has no scheme"),
        ("mysql://u@db/agent", "unsupported database 'mysql'"),
        ("postgresql://u:hunter2@db:port/agent", "is not a valid database URL"),
    ],
)
def test_other_values_are_refused_naming_the_forms_without_echoing_secrets(url: str, problem: str) -> None:
    with pytest.raises(SettingError) as info:
        GatewaySettings.from_env({"DATABASE_URL": url})
    message = str(info.value)
    assert message.startswith("DATABASE_URL")
    assert problem in message
    assert "postgresql://user:password@host:5432/dbname or sqlite:///path/to/file.db" in message
    assert "hunter2" not in message
