"""Environment parsing: defaults, overrides and clear errors."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import GatewaySettings, ReasonerSettings, ToolSettings, gateway_addr


def test_defaults_point_the_services_at_each_other() -> None:
    gw = GatewaySettings.from_env({})
    rs = ReasonerSettings.from_env({})
    ts = ToolSettings.from_env({})
    assert gw.reasoner_addr.endswith(f":{rs.port}")
    assert gw.tools_addr.endswith(f":{ts.port}")
    assert gateway_addr({}).endswith(f":{gw.port}")


def test_environment_overrides() -> None:
    env = {
        "OPENAI_BASE_URL": "http://x/v1",
        "OPENAI_API_KEY": "k",
        "AGENTLOOP_MODEL": "m",
        "AGENTLOOP_TOOL_MODULES": "a.b, c.d ,",
        "AGENTLOOP_MAX_STEPS": "9",
    }
    assert ReasonerSettings.from_env(env).base_url == "http://x/v1"
    assert ReasonerSettings.from_env(env).model == "m"
    assert ToolSettings.from_env(env).modules == ("a.b", "c.d")
    assert GatewaySettings.from_env(env).max_steps == 9


@pytest.mark.parametrize(
    ("env", "name"),
    [
        ({"AGENTLOOP_MAX_STEPS": "many"}, "AGENTLOOP_MAX_STEPS"),
        ({"AGENTLOOP_MAX_STEPS": "0"}, "AGENTLOOP_MAX_STEPS"),
        ({"AGENTLOOP_RPC_BACKOFF_S": "-1"}, "AGENTLOOP_RPC_BACKOFF_S"),
        ({"AGENTLOOP_CONTEXT_BUDGET_TOKENS": "10"}, "AGENTLOOP_CONTEXT_BUDGET_TOKENS=10 is too small"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], name: str) -> None:
    with pytest.raises(SettingError, match=name):
        GatewaySettings.from_env(env)


def test_a_context_budget_is_zero_or_leaves_room_for_a_summary() -> None:
    assert GatewaySettings.from_env({"AGENTLOOP_CONTEXT_BUDGET_TOKENS": "0"}).context_budget_tokens == 0
    assert GatewaySettings.from_env({"AGENTLOOP_CONTEXT_BUDGET_TOKENS": "256"}).context_budget_tokens == 256


ENVIRONMENT_READERS = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def _reads_the_environment(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ENVIRONMENT_READERS
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            return True
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "os"
            and any(alias.name in ENVIRONMENT_READERS for alias in node.names)
        ):
            return True
    return False


def test_only_the_settings_module_reads_the_environment() -> None:
    """Every variable agentloop reads is read in agentloop/kernel/settings.py, and nowhere else."""
    root = Path(__file__).resolve().parents[2]
    readers = sorted(
        str(path.relative_to(root))
        for package in ("agentloop", "reasoner_svc", "tool_svc", "gateway")
        for path in (root / package).rglob("*.py")
        if "v1" not in path.parts and _reads_the_environment(ast.parse(path.read_text()))
    )
    assert readers == ["agentloop/kernel/settings.py"]


def test_a_service_reads_its_security_with_its_settings() -> None:
    env = {
        "AGENTLOOP_TLS_CA": "/ca.pem",
        "AGENTLOOP_SERVICE_TOKEN": " s3cret ",
        "AGENTLOOP_AUTH_TOKENS": "t=ana",
    }
    gateway = GatewaySettings.from_env(env)
    assert gateway.security.tls.ca_file == "/ca.pem"
    assert gateway.security.service_token == "s3cret"
    assert gateway.security.auth.tokens == "t=ana"
    assert ToolSettings.from_env(env).security == gateway.security
    assert ReasonerSettings.from_env(env).security == gateway.security
