"""The models file: what it serves, its defaults, and one line naming the file, the model and the problem."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from agentloop.kernel.named_models import KEY_PLACEHOLDER
from agentloop.kernel.setting_errors import SettingError
from agentloop.kernel.settings import ReasonerSettings

ENV = {"OPENAI_BASE_URL": "http://default.test/v1", "OPENAI_API_KEY": "k-default", "AGENTLOOP_MODEL": "base"}

TOML = """
default = "fast"

[models.fast]
model = "gpt-5-mini"
base_url = "https://api.example.test/v1"
api_key_env = "FAST_KEY"
protocol = "responses"
reasoning_summary = "auto"
fallback = ["local", "base"]
timeout_s = 30
max_retries = 1

[models.local]
base_url = "http://127.0.0.1:11434/v1"
think_tags = "open"

[models.same-endpoint]
model = "other-model"
"""


def _settings(path: Path | None, **env: str) -> ReasonerSettings:
    values = {**ENV, **env}
    if path is not None:
        values["AGENTLOOP_MODELS_FILE"] = str(path)
    return ReasonerSettings.from_env(values)


def test_a_toml_file_serves_its_models_beside_the_environments(tmp_path: Path) -> None:
    path = tmp_path / "models.toml"
    path.write_text(TOML)
    settings = _settings(path, FAST_KEY="k-fast")
    table = settings.model_table({**ENV, "FAST_KEY": "k-fast"})
    assert table.names == ["base", "fast", "local", "same-endpoint"]
    assert (table.default, table.open, table.source) == ("fast", False, str(path))
    fast = table.models["fast"]
    assert (fast.model, fast.base_url, fast.api_key, fast.protocol) == (
        "gpt-5-mini",
        "https://api.example.test/v1",
        "k-fast",
        "responses",
    )
    assert (fast.fallback, fast.timeout_s, fast.max_retries, fast.reasoning_summary) == (
        ("local", "base"),
        30,
        1,
        "auto",
    )
    local = table.models["local"]
    assert (local.model, local.api_key, local.think_tags, local.timeout_s) == (
        "local",
        KEY_PLACEHOLDER,
        "open",
        120,
    )
    same = table.models["same-endpoint"]  # no base_url: the environment's endpoint and key
    assert (same.base_url, same.api_key, same.model) == ("http://default.test/v1", "k-default", "other-model")
    base = table.models["base"]
    assert (base.base_url, base.api_key, base.protocol) == ("http://default.test/v1", "k-default", "chat")
    assert table.get("") == fast
    assert table.get("unknown") is None


def test_a_json_file_reads_the_same(tmp_path: Path) -> None:
    path = tmp_path / "models.json"
    path.write_text(json.dumps({"models": {"r": {"protocol": "responses", "fallback": ["base"]}}}))
    table = _settings(path).model_table(ENV)
    assert table.default == "base"
    assert table.models["r"].protocol == "responses"


def test_without_a_file_any_name_goes_to_the_one_endpoint() -> None:
    settings = dataclasses.replace(_settings(None), protocol="responses")
    table = settings.model_table(ENV)
    assert table.open
    assert table.names == ["base"]
    other = table.get("gpt-4o")
    assert other is not None
    assert (other.name, other.model, other.base_url, other.protocol) == (
        "gpt-4o",
        "gpt-4o",
        "http://default.test/v1",
        "responses",
    )


@pytest.mark.parametrize(
    ("text", "env", "problem"),
    [
        ("[models.x\nbad", {}, "not valid TOML"),
        ('[models.x]\napi_key_env = "MISSING_KEY"', {}, "model 'x': api_key_env MISSING_KEY is not set"),
        ('[models.x]\nprotocol = "grpc"', {}, "model 'x': protocol: Input should be 'chat' or 'responses'"),
        ('[models.x]\napi_key = "sk-123"', {}, "model 'x': api_key: a key is never written in the file"),
        ('[models.x]\nfallback = ["nope"]', {}, "model 'x': fallback 'nope' is not a model (known: base, x)"),
        ('[models.x]\nfallback = ["x"]', {}, "model 'x': fallback 'x' is the model itself"),
        ('[models.x]\ncolour = "red"', {}, "model 'x': colour: Extra inputs are not permitted"),
        ('[models.x]\nthink_tags = "maybe"', {}, "model 'x': think_tags:"),
        ('[models.x]\nbase_url = "ftp://x"', {}, "model 'x': base_url:"),
        ('default = "y"\n[models.x]', {}, "default 'y' is not a model (known: base, x)"),
        ('[models."bad name"]', {}, "model 'bad name': names must match"),
        ("[other]", {}, "expected an object with a 'models' object"),
    ],
)
def test_a_bad_file_stops_the_reasoner_with_one_line_naming_it(
    tmp_path: Path, text: str, env: dict[str, str], problem: str
) -> None:
    path = tmp_path / "models.toml"
    path.write_text(text)
    with pytest.raises(SettingError) as info:
        _settings(path, **env)
    message = str(info.value)
    assert message.startswith(f"AGENTLOOP_MODELS_FILE {path}: ")
    assert problem in message
    assert "\n" not in message
    assert "sk-123" not in message


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingError, match=r"models\.json: cannot read it"):
        _settings(tmp_path / "models.json")


def test_an_unknown_environment_protocol_is_refused() -> None:
    with pytest.raises(SettingError, match="AGENTLOOP_MODEL_PROTOCOL='soap' is not one of chat, responses"):
        _settings(None, AGENTLOOP_MODEL_PROTOCOL="soap")
