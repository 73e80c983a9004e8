"""The models one Reasoner serves by name, from its environment and an optional models file.

A run chooses a model by name (``RunOptions.model``); the Reasoner maps the name to an
endpoint: its base URL, the environment variable holding its API key (a key is never written
in the file), the protocol it speaks (``chat`` completions or the ``responses`` API), how its
inline think tags are read, its timeout and request budget, and the models to try when it fails
(``fallback``). The file is JSON or TOML (by its ``.toml`` suffix), ``AGENTLOOP_MODELS_FILE``::

    default = "fast"                       # optional: the model of a run that names none

    [models.fast]
    model = "gpt-5-mini"                   # the endpoint's name for it (default: the entry's name)
    base_url = "https://api.openai.com/v1"
    api_key_env = "OPENAI_API_KEY"
    protocol = "responses"
    reasoning_summary = "auto"
    fallback = ["local"]

    [models.local]
    base_url = "http://127.0.0.1:11434/v1"
    model = "qwen3:8b"
    think_tags = "open"

The environment's model (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``AGENTLOOP_MODEL`` as its
name) is always served and is the default unless the file says otherwise; an entry without a
``base_url`` uses that endpoint and its key. Without a file the Reasoner keeps its old rule:
any name goes to that one endpoint as the model id. With a file only its names (and the
environment's model) are served: another name is refused, naming the field.

Every problem is one line naming the file, the model and what is wrong, raised at start.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentloop.kernel.setting_errors import SettingError

PROTOCOLS = ("chat", "responses")
THINK_MODES = ("off", "tags", "open")
MAX_FILE_BYTES = 1024 * 1024
MAX_MODELS = 64
MAX_RETRIES = 10
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$")
"""Model names as providers spell them: ``gpt-5-mini``, ``qwen3:8b``, ``openai/gpt-4o``."""
KEY_PLACEHOLDER = "unused"
"""The key sent to an endpoint named without one (local servers take any)."""


@dataclass(frozen=True)
class NamedModel:
    """One model the Reasoner serves: where it is, how it is spoken to, what to try when it fails."""

    name: str
    """The name a run chooses it by."""
    model: str
    """The endpoint's name for it (sent as the request's ``model``)."""
    base_url: str
    api_key: str = field(repr=False)
    api_key_env: str = ""
    """The variable the key came from ("" for the environment's model's own key, or none)."""
    protocol: str = "chat"
    think_tags: str = "off"
    timeout_s: float = 120.0
    max_retries: int = 2
    fallback: tuple[str, ...] = ()
    """Models tried in order when this one fails with a retryable error after its own budget."""
    reasoning_effort: str = ""
    reasoning_summary: str = ""
    encrypted_reasoning: bool = True
    """Responses API: nothing stored server-side, reasoning carried encrypted across requests."""


@dataclass(frozen=True)
class ModelTable:
    """Every model by name, the default, and whether unlisted names go to the default endpoint."""

    models: Mapping[str, NamedModel]
    default: str
    open: bool = False
    """No models file: any name is the default endpoint's model id, as it always was."""
    source: str = ""
    """The models file ("" when there is none)."""

    def get(self, name: str) -> NamedModel | None:
        """The model `name` ("" = the default) stands for; None for a name this table does not serve."""
        name = name or self.default
        found = self.models.get(name)
        if found is None and self.open:
            return replace(self.models[self.default], name=name, model=name, fallback=())
        return found

    @property
    def names(self) -> list[str]:
        return sorted(self.models)


class _Entry(BaseModel):
    """One entry of the models file, as written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None = Field(default=None, min_length=1, max_length=256)
    base_url: str | None = Field(default=None, pattern=r"^https?://", max_length=2048)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
    protocol: Literal["chat", "responses"] = "chat"
    think_tags: Literal["off", "tags", "open"] | None = None
    timeout_s: float | None = Field(default=None, gt=0, le=3600)
    max_retries: int | None = Field(default=None, ge=0, le=MAX_RETRIES)
    fallback: tuple[str, ...] = Field(default=(), max_length=8)
    reasoning_effort: str = Field(default="", max_length=32)
    reasoning_summary: str = Field(default="", max_length=32)
    encrypted_reasoning: bool = True


def load_models(base: NamedModel, models_file: str, environ: Mapping[str, str]) -> ModelTable:
    """The environment's model `base`, and the models of `models_file` ("" = none) beside it.

    `environ` holds the variables the file's `api_key_env` entries name.
    """
    if not models_file:
        return ModelTable({base.name: base}, base.name, open=True)
    path = models_file
    raw = _read(path)
    try:
        data: Any = tomllib.loads(raw) if path.endswith(".toml") else json.loads(raw)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, RecursionError) as exc:
        kind = "TOML" if path.endswith(".toml") else "JSON"
        raise SettingError(f"AGENTLOOP_MODELS_FILE {path}: not valid {kind}: {exc}") from None
    return parse_models(data, path, base, environ)


def parse_models(data: Any, source: str, base: NamedModel, environ: Mapping[str, str]) -> ModelTable:
    """Validate a decoded models file; `source` names it in errors, `base` is the environment's model."""
    where = f"AGENTLOOP_MODELS_FILE {source}"
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise SettingError(f"{where}: expected an object with a 'models' object of models by name")
    unknown = sorted(key for key in data if key not in ("models", "default"))
    if unknown:
        raise SettingError(f"{where}: unknown top-level key {unknown[0]!r}; 'models' and 'default' are read")
    entries: dict[str, Any] = data["models"]
    if len(entries) > MAX_MODELS:
        raise SettingError(f"{where}: {len(entries)} models; at most {MAX_MODELS} are allowed")
    models = {base.name: base}
    for name, entry in entries.items():
        models[name] = _model(name, entry, f"{where}: model {name!r}", base, environ)
    for name, model in models.items():
        for other in model.fallback:
            if other not in models or other == name:
                problem = (
                    "is the model itself" if other == name else f"is not a model (known: {_known(models)})"
                )
                raise SettingError(f"{where}: model {name!r}: fallback {other!r} {problem}")
    default = data.get("default", base.name)
    if not isinstance(default, str) or default not in models:
        raise SettingError(f"{where}: default {default!r} is not a model (known: {_known(models)})")
    return ModelTable(models, default, source=source)


def _model(name: Any, entry: Any, where: str, base: NamedModel, environ: Mapping[str, str]) -> NamedModel:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise SettingError(f"{where}: names must match {NAME_PATTERN.pattern}")
    if isinstance(entry, dict) and "api_key" in entry:
        raise SettingError(
            f"{where}: api_key: a key is never written in the file; name the environment variable "
            "that holds it with api_key_env"
        )
    try:
        spec = _Entry.model_validate(entry)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        raise SettingError(f"{where}: {path + ': ' if path else ''}{message}") from None
    key = base.api_key if spec.base_url is None else KEY_PLACEHOLDER
    if spec.api_key_env is not None:
        key = environ.get(spec.api_key_env, "")
        if not key:
            raise SettingError(f"{where}: api_key_env {spec.api_key_env} is not set in the environment")
    return NamedModel(
        name=name,
        model=spec.model or name,
        base_url=spec.base_url or base.base_url,
        api_key=key,
        api_key_env=spec.api_key_env or "",
        protocol=spec.protocol,
        think_tags=spec.think_tags or base.think_tags,
        timeout_s=spec.timeout_s or base.timeout_s,
        max_retries=base.max_retries if spec.max_retries is None else spec.max_retries,
        fallback=spec.fallback,
        reasoning_effort=spec.reasoning_effort,
        reasoning_summary=spec.reasoning_summary,
        encrypted_reasoning=spec.encrypted_reasoning,
    )


def _known(models: Mapping[str, NamedModel]) -> str:
    return ", ".join(sorted(models))


def _read(path: str) -> str:
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SettingError(f"AGENTLOOP_MODELS_FILE {path}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise SettingError(f"AGENTLOOP_MODELS_FILE {path}: larger than {MAX_FILE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingError(
            f"AGENTLOOP_MODELS_FILE {path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
