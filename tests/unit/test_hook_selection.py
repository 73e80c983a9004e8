"""Which hooks a run uses: the operator's always, plus only the ones clients may add."""

from __future__ import annotations

import pytest

from agentloop.kernel.errors import InvalidArgument
from agentloop.kernel.settings import GatewaySettings
from agentloop.v1 import agent_pb2
from gateway.policies.hooks import HookRegistry
from gateway.runs.options import resolved_options, run_config

MODULES = ("tests.support.counting_hooks", "tests.support.more_hooks")


def names(registry: HookRegistry, requested: list[str]) -> list[str]:
    return [hook.name for hook in registry.select(requested, "options.hooks")]


def test_the_operators_hooks_run_whatever_the_client_names() -> None:
    registry = HookRegistry(MODULES, defaults=("redact_secrets",), client_hooks=("count_model_messages",))
    assert names(registry, []) == ["redact_secrets"]
    assert names(registry, ["count_model_messages"]) == ["redact_secrets", "count_model_messages"]
    # Naming an operator hook again changes nothing and does not run it twice.
    assert names(registry, ["count_model_messages", "redact_secrets"]) == [
        "redact_secrets",
        "count_model_messages",
    ]


@pytest.mark.parametrize(
    "requested", [["shout"], ["nope"], ["count_model_messages", "redact_secrets", "shout"]]
)
def test_a_hook_clients_may_not_add_is_refused_naming_its_index(requested: list[str]) -> None:
    registry = HookRegistry(MODULES, defaults=("redact_secrets",), client_hooks=("count_model_messages",))
    with pytest.raises(InvalidArgument) as info:
        registry.select(requested, "options.hooks")
    index = len(requested) - 1
    assert str(info.value).startswith(
        f"options.hooks[{index}]: {requested[index]!r} is not a hook clients may add"
    )
    assert "shout" not in str(info.value).split("allowed:")[1]  # the operator's other hooks stay private


def test_by_default_clients_may_add_redact_secrets_only() -> None:
    registry = HookRegistry(MODULES)
    assert names(registry, ["redact_secrets"]) == ["redact_secrets"]
    with pytest.raises(InvalidArgument, match=r"allowed: redact_secrets\)"):
        registry.select(["count_model_messages"], "options.hooks")
    assert GatewaySettings.from_env({}).client_hooks == ("redact_secrets",)
    assert GatewaySettings.from_env({"AGENTLOOP_CLIENT_HOOKS": ""}).client_hooks == ()
    assert GatewaySettings.from_env({"AGENTLOOP_CLIENT_HOOKS": "a, b"}).client_hooks == ("a", "b")


def test_an_unknown_client_hook_setting_stops_the_gateway() -> None:
    with pytest.raises(ValueError, match="AGENTLOOP_CLIENT_HOOKS names unknown hooks"):
        HookRegistry((), client_hooks=("nope",))


def test_a_stored_run_selects_the_same_hooks_again() -> None:
    registry = HookRegistry(MODULES, defaults=("redact_secrets",), client_hooks=("count_model_messages",))
    settings = GatewaySettings()
    options = agent_pb2.RunOptions(hooks=["count_model_messages"])
    config = run_config(options, settings, registry)
    stored = resolved_options(options, config)
    assert list(stored.hooks) == ["redact_secrets", "count_model_messages"]
    assert run_config(stored, settings, registry).hooks == config.hooks
