"""deploy/kubernetes: every rendered object is valid against the Kubernetes schemas, and the pieces fit.

The schemas ship inside the `kubernetes-validate` package (no cluster or
network needed); the overlays are rendered by tests/support/kustomize.py,
which reproduces exactly the kustomize features the manifests use. Beyond the
schema, the checks here are the ones a cluster would only reveal at run time:
a probe on the wrong port, a Service selecting no pod, an address the gateway
cannot resolve, a Secret nobody created, a variable the code never reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from agentloop.kernel.settings import grpc_target
from tests.support.kustomize import (
    Manifest,
    UnsupportedKustomization,
    containers,
    image_name,
    pod_spec,
    render,
)
from tests.unit.test_project_config import code_settings

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
TARGETS = {"base": KUBERNETES / "base", "production": KUBERNETES / "overlays" / "production"}
# The oldest Kubernetes the manifests support (gRPC probes are GA since 1.27) and the newest schema shipped.
VERSIONS = ("1.30", kubernetes_validate.latest_version())
# Created outside the manifests (by cert-manager or by hand); docs/deploy.md says how.
EXTERNAL_SECRETS = frozenset({"agentloop-tls"})
# Variables the manifests set that are not agentloop settings.
OTHER_VARIABLES = frozenset({"HOME"})
SERVICES = {"reasoner": 50051, "tools": 50052, "gateway": 50050}


@pytest.fixture(scope="module", params=sorted(TARGETS))
def rendered(request: pytest.FixtureRequest) -> tuple[str, list[Manifest]]:
    return request.param, render(TARGETS[request.param])


def objects(manifests: list[Manifest], kind: str) -> dict[str, Manifest]:
    return {m["metadata"]["name"]: m for m in manifests if m["kind"] == kind}


def deployment(manifests: list[Manifest], service: str) -> Manifest:
    return objects(manifests, "Deployment")[f"agentloop-{service}"]


def config(manifests: list[Manifest]) -> dict[str, str]:
    data: dict[str, str] = objects(manifests, "ConfigMap")["agentloop-config"]["data"]
    return data


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def workloads(manifests: list[Manifest]) -> Iterator[Manifest]:
    return (m for m in manifests if pod_spec(m) is not None)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_object_is_valid_against_the_kubernetes_schema(
    rendered: tuple[str, list[Manifest]], version: str
) -> None:
    _, manifests = rendered
    assert len(manifests) >= 15
    for manifest in manifests:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            where = ".".join(str(p) for p in exc.path)
            pytest.fail(f"{manifest['kind']}/{manifest['metadata']['name']}: {where}: {exc.message}")


def test_the_schema_check_catches_mistakes() -> None:
    manifests = render(TARGETS["base"])
    broken = deployment(manifests, "gateway")
    broken["spec"]["replicas"] = "2"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[0], strict=True)
    typo = deployment(manifests, "reasoner")
    typo["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(typo, VERSIONS[0], strict=True)


def test_each_service_has_a_deployment_a_pdb_and_a_service_selecting_its_pods(
    rendered: tuple[str, list[Manifest]],
) -> None:
    _, manifests = rendered
    services = objects(manifests, "Service")
    budgets = objects(manifests, "PodDisruptionBudget")
    for name, port in SERVICES.items():
        pods = deployment(manifests, name)
        labels = pods["spec"]["template"]["metadata"]["labels"]
        assert selects(pods["spec"]["selector"]["matchLabels"], labels)
        (container,) = pod_spec(pods)["containers"]  # type: ignore[index]
        assert container["args"] == ["serve", name, "--port", str(port)]
        assert {"name": "grpc", "containerPort": port} in container["ports"]
        service = services[f"agentloop-{name}" if name != "gateway" else "agentloop-gateway-headless"]
        assert service["spec"]["clusterIP"] == "None"  # headless: DNS lists every pod
        assert selects(service["spec"]["selector"], labels)
        assert service["spec"]["ports"][0]["port"] == port
        budget = budgets[f"agentloop-{name}"]
        assert selects(budget["spec"]["selector"]["matchLabels"], labels)
        # A node drain can always proceed: fewer pods are required than run.
        assert budget["spec"]["minAvailable"] < pods["spec"]["replicas"]


def test_reasoner_and_tools_are_probed_through_grpc_health_on_their_port() -> None:
    manifests = render(TARGETS["base"])
    for name in ("reasoner", "tools"):
        (container,) = pod_spec(deployment(manifests, name))["containers"]  # type: ignore[index]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert container[probe]["grpc"] == {"port": SERVICES[name]}, (name, probe)


def test_gateway_readiness_follows_health_and_liveness_does_not() -> None:
    manifests = render(TARGETS["base"])
    (container,) = pod_spec(deployment(manifests, "gateway"))["containers"]  # type: ignore[index]
    assert container["readinessProbe"]["grpc"] == {"port": 50050}
    assert container["livenessProbe"]["tcpSocket"] == {"port": "grpc"}


def test_with_tls_every_service_is_probed_by_the_health_command_over_tls() -> None:
    manifests = render(TARGETS["production"])
    assert config(manifests)["AGENTLOOP_TLS_CA"] == "/etc/agentloop/tls/ca.crt"
    for name, port in SERVICES.items():
        (container,) = pod_spec(deployment(manifests, name))["containers"]  # type: ignore[index]
        assert container["readinessProbe"]["exec"]["command"] == ["agentloop", "health", f"localhost:{port}"]
        assert "grpc" not in container["readinessProbe"]
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts["/etc/agentloop/tls"] == "tls"
    gateway = pod_spec(deployment(manifests, "gateway"))["containers"][0]  # type: ignore[index]
    assert {"name": "AGENTLOOP_TLS_CLIENT_CA", "value": ""} in gateway["env"]


def test_the_gateway_reaches_every_replica_through_the_headless_services(
    rendered: tuple[str, list[Manifest]],
) -> None:
    target, manifests = rendered
    namespace = "agentloop" if target == "production" else None
    settings = config(manifests)
    for name, variable in (("reasoner", "AGENTLOOP_REASONER_ADDR"), ("tools", "AGENTLOOP_TOOLS_ADDR")):
        address = grpc_target(settings[variable], variable)
        assert address.startswith("dns:///"), address  # re-resolved: replicas come and go
        host, _, port = address.removeprefix("dns:///").rpartition(":")
        assert int(port) == SERVICES[name]
        expected = f"agentloop-{name}" + (f".{namespace}.svc.cluster.local" if namespace else "")
        assert host == expected
        assert objects(manifests, "Service")[f"agentloop-{name}"]["spec"]["clusterIP"] == "None"


def test_migrations_run_in_a_job_and_gateways_wait_for_them(rendered: tuple[str, list[Manifest]]) -> None:
    _, manifests = rendered
    job = objects(manifests, "Job")["agentloop-db-upgrade"]
    (migrate,) = job["spec"]["template"]["spec"]["containers"]
    assert migrate["args"] == ["db", "upgrade"]
    assert config(manifests)["AGENTLOOP_DB_MIGRATE"] == "0"
    (wait,) = pod_spec(deployment(manifests, "gateway"))["initContainers"]  # type: ignore[index]
    assert wait["args"][:2] == ["db", "wait"]
    database = {"secretRef": {"name": "agentloop-database"}}
    assert database in migrate["envFrom"]
    assert database in wait["envFrom"]


def test_the_gateways_autoscale_on_cpu_they_request(rendered: tuple[str, list[Manifest]]) -> None:
    _, manifests = rendered
    hpa = objects(manifests, "HorizontalPodAutoscaler")["agentloop-gateway"]
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "agentloop-gateway",
    }
    assert hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu"
    assert hpa["spec"]["minReplicas"] >= 2
    assert hpa["spec"]["maxReplicas"] > hpa["spec"]["minReplicas"]


def test_every_container_requests_resources_and_runs_unprivileged(
    rendered: tuple[str, list[Manifest]],
) -> None:
    _, manifests = rendered
    for workload in workloads(manifests):
        spec = pod_spec(workload)
        assert spec is not None
        assert spec["securityContext"]["runAsNonRoot"] is True
        for container in containers(workload):
            resources = container["resources"]
            assert {"cpu", "memory"} <= set(resources["requests"]), container["name"]
            assert "memory" in resources["limits"], container["name"]
            assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_every_referenced_config_and_secret_exists(rendered: tuple[str, list[Manifest]]) -> None:
    _, manifests = rendered
    secrets = set(objects(manifests, "Secret")) | EXTERNAL_SECRETS
    config_maps = set(objects(manifests, "ConfigMap"))
    for workload in workloads(manifests):
        spec = pod_spec(workload)
        assert spec is not None
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                assert volume["secret"]["secretName"] in secrets
        for container in containers(workload):
            for source in container.get("envFrom", []):
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in config_maps


def test_manifests_set_only_variables_the_code_reads(rendered: tuple[str, list[Manifest]]) -> None:
    _, manifests = rendered
    known = code_settings() | OTHER_VARIABLES
    names: set[str] = set()
    for kind, field in (("ConfigMap", "data"), ("Secret", "stringData")):
        for obj in objects(manifests, kind).values():
            names |= set(obj.get(field, {}))
    for workload in workloads(manifests):
        for container in containers(workload):
            names |= {variable["name"] for variable in container.get("env", [])}
    assert names - known == set()


def test_production_pins_the_image_and_a_namespace() -> None:
    manifests = render(TARGETS["production"])
    images = {c["image"] for w in workloads(manifests) for c in containers(w)}
    assert images == {"registry.example.com/agentloop:0.1.0"}
    for manifest in manifests:
        if manifest["kind"] != "Namespace":
            assert manifest["metadata"]["namespace"] == "agentloop", manifest["metadata"]["name"]
    assert deployment(manifests, "reasoner")["spec"]["replicas"] == 3


def test_the_renderer_refuses_what_it_does_not_reproduce(tmp_path: Path) -> None:
    (tmp_path / "kustomization.yaml").write_text("resources: []\ncommonLabels: {a: b}\n")
    with pytest.raises(UnsupportedKustomization, match="commonLabels"):
        render(tmp_path)
    (tmp_path / "kustomization.yaml").write_text(
        "resources: []\npatches:\n  - patch: '{\"spec\": {}}'\n    target: {kind: Deployment}\n"
    )
    with pytest.raises(UnsupportedKustomization, match="JSON 6902"):
        render(tmp_path)


@pytest.mark.parametrize(
    ("reference", "name"),
    [
        ("agentloop", "agentloop"),
        ("agentloop:latest", "agentloop"),
        ("registry.example.com:5000/team/agentloop:1.0", "registry.example.com:5000/team/agentloop"),
        ("agentloop@sha256:abc", "agentloop"),
    ],
)
def test_image_names_drop_tag_and_digest(reference: str, name: str) -> None:
    assert image_name(reference) == name
