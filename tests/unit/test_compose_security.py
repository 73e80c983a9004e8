"""docker-compose.yml protects the reasoner and the tool service the way docs/security.md says."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_internal_services_share_one_service_token_and_publish_no_port() -> None:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    tokens = {
        name: services[name]["environment"]["AGENTLOOP_SERVICE_TOKEN"]
        for name in ("reasoner", "tools", "gateway")
    }
    assert len(set(tokens.values())) == 1, tokens
    assert all(tokens.values())
    assert "ports" not in services["reasoner"]
    assert "ports" not in services["tools"]
