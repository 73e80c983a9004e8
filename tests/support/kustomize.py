"""Render a kustomization the way `kubectl kustomize` does, for the subset deploy/kubernetes uses.

No kustomize binary is installable from the package registries this project
uses, so the manifest tests render the overlays here. The subset is small on
purpose, and anything outside it is refused rather than approximated, so a
manifest that renders here renders the same with kustomize:

- `resources`: YAML files (several documents each) and directories holding a
  kustomization (built recursively, as kustomize builds a base);
- `patches` whose content is a JSON 6902 operation list (applied with the
  `jsonpatch` package), selected by `target` kind/name (exact names, every
  target must match at least one object);
- `images`: `newName`/`newTag` for containers and init containers whose image
  name (the reference without tag or digest) equals `name`;
- `namespace`: set on every namespaced object.

Kustomize applies patches before the namespace and image transformers; so
does `render`. Strategic-merge patches, generators, labels and name prefixes
are not supported.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
import yaml

Manifest = dict[str, Any]

SUPPORTED_FIELDS = frozenset({"apiVersion", "kind", "resources", "patches", "images", "namespace"})
SUPPORTED_TARGET_FIELDS = frozenset({"kind", "name"})
# Kinds without a namespace among those a deployment of agentloop could contain.
CLUSTER_SCOPED = frozenset(
    {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass", "StorageClass"}
)
POD_TEMPLATE_PATHS = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "Pod": ("spec",),
}


class UnsupportedKustomization(ValueError):
    """The kustomization uses a feature `render` does not reproduce."""


def render(directory: Path) -> list[Manifest]:
    """Every object the kustomization in `directory` produces, transformed as kustomize would."""
    path = directory / "kustomization.yaml"
    spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    unknown = set(spec) - SUPPORTED_FIELDS
    if unknown:
        raise UnsupportedKustomization(f"{path}: unsupported fields {sorted(unknown)}")
    objects: list[Manifest] = []
    for entry in spec.get("resources", []):
        resource = directory / entry
        if resource.is_dir():
            objects.extend(render(resource))
        else:
            objects.extend(doc for doc in yaml.safe_load_all(resource.read_text(encoding="utf-8")) if doc)
    for patch in spec.get("patches", []):
        objects = _apply_patch(directory, patch, objects)
    for image in spec.get("images", []):
        for obj in objects:
            _set_image(obj, image)
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = spec["namespace"]
    return objects


def _apply_patch(directory: Path, patch: dict[str, Any], objects: list[Manifest]) -> list[Manifest]:
    target = patch.get("target") or {}
    if not target or set(target) - SUPPORTED_TARGET_FIELDS:
        raise UnsupportedKustomization(f"patch {patch}: target must name kind and/or name only")
    text = (directory / patch["path"]).read_text(encoding="utf-8") if "path" in patch else patch["patch"]
    operations = yaml.safe_load(text)
    if not isinstance(operations, list) or not all(isinstance(op, dict) and "op" in op for op in operations):
        raise UnsupportedKustomization(f"patch {patch}: only JSON 6902 operation lists are supported")
    json_patch = jsonpatch.JsonPatch(operations)
    matched = 0
    result = []
    for obj in objects:
        if _matches(obj, target):
            matched += 1
            obj = json_patch.apply(copy.deepcopy(obj))
        result.append(obj)
    if not matched:
        raise UnsupportedKustomization(f"patch {patch}: its target matches no object")
    return result


def _matches(obj: Manifest, target: dict[str, str]) -> bool:
    """Whether an object is a patch's target (exact kind and name, as far as the target gives them)."""
    return (
        target.get("kind", obj["kind"]) == obj["kind"]
        and target.get("name", obj["metadata"]["name"]) == obj["metadata"]["name"]
    )


def pod_spec(obj: Manifest) -> dict[str, Any] | None:
    """The pod spec of a workload object (None for other kinds)."""
    keys = POD_TEMPLATE_PATHS.get(obj["kind"])
    if keys is None:
        return None
    node: Any = obj
    for key in keys:
        node = node[key]
    assert isinstance(node, dict)
    return node  # the object's own dict, so transformers edit it in place


def containers(obj: Manifest) -> list[dict[str, Any]]:
    """Init containers and containers of a workload object."""
    spec = pod_spec(obj)
    if spec is None:
        return []
    return [*spec.get("initContainers", []), *spec.get("containers", [])]


def image_name(reference: str) -> str:
    """An image reference without its digest or tag (a registry port is not a tag)."""
    name = reference.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    return name


def _set_image(obj: Manifest, image: dict[str, str]) -> None:
    for container in containers(obj):
        if image_name(container["image"]) != image["name"]:
            continue
        name = image.get("newName", image["name"])
        tag = image.get("newTag")
        if tag is None:
            current = container["image"].split("@", 1)[0]
            last = current.rsplit("/", 1)[-1]
            tag = last.split(":", 1)[1] if ":" in last else None
        container["image"] = f"{name}:{tag}" if tag else name
