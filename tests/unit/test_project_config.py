"""docker-compose.yml, the README's configuration table and the code must name the same settings."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentloop.cli.main import _parser
from agentloop.kernel import settings
from agentloop.scripted_model.cli import build_parser as model_parser

ROOT = Path(__file__).resolve().parents[2]
SETTING = re.compile(r'"((?:AGENTLOOP|OPENAI)_[A-Z_]+|DATABASE_URL)"')
PACKAGES = ("agentloop", "reasoner_svc", "tool_svc", "gateway")


def code_settings() -> set[str]:
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if "v1" not in path.parts:
                names |= set(SETTING.findall(path.read_text()))
    return names


def readme_settings() -> set[str]:
    text = (ROOT / "README.md").read_text()
    return set(re.findall(r"^\| `((?:AGENTLOOP|OPENAI)_[A-Z_]+|DATABASE_URL)` \|", text, flags=re.M))


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert isinstance(data, dict)
    return data


def test_readme_table_lists_exactly_the_settings_the_code_reads() -> None:
    assert code_settings(), "no settings found in code"
    assert readme_settings() == code_settings()


def test_compose_has_postgres_the_model_and_the_three_services(compose: dict[str, Any]) -> None:
    assert {"postgres", "model", "reasoner", "tools", "gateway"} <= set(compose["services"])


def test_compose_environment_uses_only_real_settings(compose: dict[str, Any]) -> None:
    known = code_settings()
    for name, service in compose["services"].items():
        if name == "postgres":
            continue
        env = service.get("environment") or {}
        unknown = set(env) - known
        assert not unknown, f"{name} sets unknown variables {unknown}"


def test_compose_commands_parse_with_the_real_cli(compose: dict[str, Any]) -> None:
    parser = _parser()
    for name in ("model", "reasoner", "tools", "gateway"):
        command = compose["services"][name]["command"]
        if name == "model":
            assert command[0] == "model-server"
            assert model_parser().parse_args(command[1:]).port == settings.DEFAULT_MODEL_PORT
        else:
            args = parser.parse_args(command)
            assert (args.command, args.service) == ("serve", name)


def _port_of(command: list[str]) -> int:
    return int(command[command.index("--port") + 1])


def test_compose_ports_and_addresses_agree_with_defaults(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert _port_of(services["reasoner"]["command"]) == settings.DEFAULT_REASONER_PORT
    assert _port_of(services["tools"]["command"]) == settings.DEFAULT_TOOLS_PORT
    assert _port_of(services["gateway"]["command"]) == settings.DEFAULT_GATEWAY_PORT
    assert _port_of(services["model"]["command"]) == settings.DEFAULT_MODEL_PORT
    gw_env = services["gateway"]["environment"]
    assert gw_env["AGENTLOOP_REASONER_ADDR"] == f"reasoner:{settings.DEFAULT_REASONER_PORT}"
    assert gw_env["AGENTLOOP_TOOLS_ADDR"] == f"tools:{settings.DEFAULT_TOOLS_PORT}"
    assert (
        services["reasoner"]["environment"]["OPENAI_BASE_URL"]
        == f"http://model:{settings.DEFAULT_MODEL_PORT}/v1"
    )
    assert f"{settings.DEFAULT_GATEWAY_PORT}:{settings.DEFAULT_GATEWAY_PORT}" in services["gateway"]["ports"]
    database = gw_env["DATABASE_URL"]
    pg = services["postgres"]["environment"]
    assert database == (
        f"postgresql+asyncpg://{pg['POSTGRES_USER']}:{pg['POSTGRES_PASSWORD']}@postgres:5432/{pg['POSTGRES_DB']}"
    )


def test_compose_healthchecks_use_the_cli_health_command(compose: dict[str, Any]) -> None:
    parser = _parser()
    for name in ("reasoner", "tools", "gateway"):
        test = compose["services"][name]["healthcheck"]["test"]
        assert test[:2] == ["CMD", "agentloop"]
        args = parser.parse_args(test[2:])
        assert args.command == "health"
        assert args.addr.endswith(str(_port_of(compose["services"][name]["command"])))


def test_compose_depends_on_existing_services(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dep in service.get("depends_on") or []:
            assert dep in services, f"{name} depends on unknown {dep}"


def test_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run" in readme
    assert "make test" in readme
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert ["make", "test"] in [shlex.split(line) for line in commands]
