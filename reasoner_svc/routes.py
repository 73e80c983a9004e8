"""The Reasoner's named models, each ready to call: its endpoint's client and its protocol.

One ``AsyncOpenAI`` client per endpoint (base URL, key and timeout), shared by the models that
use it, for the process's life: connection pooling and keep-alive are what make a call cheap.
A step names its model (``CompletionParams.model``, "" for the default); `Routes.chain` gives
that model and its fallbacks, in the order they are tried, or refuses an unknown name naming the
field, before any request is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from agentloop.kernel.errors import InvalidArgument, Reason
from agentloop.kernel.named_models import ModelTable, NamedModel
from agentloop.v1 import reasoner_pb2
from reasoner_svc.protocol import ChatCompletions, ModelProtocol, Responses
from reasoner_svc.think_tags import ThinkMode


@dataclass(frozen=True)
class Route:
    """One named model and how to reach it."""

    spec: NamedModel
    protocol: ModelProtocol

    @property
    def name(self) -> str:
        return self.spec.name


def make_client(base_url: str, api_key: str, timeout_s: float) -> openai.AsyncOpenAI:
    """An endpoint's openai client; its own retries are off (the Reasoner's budget owns them).

    Its HTTP transport is the SDK's aiohttp one (`DefaultAioHttpClient`, the
    `openai[aiohttp]` extra; aiohttp is a dependency anyway, for the scripted
    model server): the default httpx transport was a third of this service's
    CPU per model call, and aiohttp takes about a sixth of the service's CPU
    per step off. Same SDK behaviour either way: timeouts, streaming, error types.
    """
    return openai.AsyncOpenAI(
        base_url=base_url,
        api_key=api_key,
        timeout=timeout_s,
        max_retries=0,
        http_client=openai.DefaultAioHttpClient(timeout=timeout_s),
    )


def _protocol(spec: NamedModel, client: openai.AsyncOpenAI) -> ModelProtocol:
    think = ThinkMode(spec.think_tags)
    if spec.protocol == "responses":
        reasoning = {
            key: value
            for key, value in (("effort", spec.reasoning_effort), ("summary", spec.reasoning_summary))
            if value
        }
        return Responses(client, think, encrypted_reasoning=spec.encrypted_reasoning, reasoning=reasoning)
    return ChatCompletions(client, think, reasoning_effort=spec.reasoning_effort)


class Routes:
    """Every named model with its client; the clients it made are closed by `aclose`."""

    def __init__(self, table: ModelTable, client: openai.AsyncOpenAI | None = None) -> None:
        """`client`, when given, serves the models at the default endpoint (its caller closes it)."""
        self.table = table
        default = table.models[table.default]
        self._clients: dict[tuple[str, str, float], openai.AsyncOpenAI] = {}
        self._own: list[openai.AsyncOpenAI] = []
        if client is not None:
            self._clients[(default.base_url, default.api_key, default.timeout_s)] = client
        self._routes = {name: self._route(spec) for name, spec in table.models.items()}

    def _client(self, spec: NamedModel) -> openai.AsyncOpenAI:
        key = (spec.base_url, spec.api_key, spec.timeout_s)
        client = self._clients.get(key)
        if client is None:
            client = make_client(spec.base_url, spec.api_key, spec.timeout_s)
            self._clients[key] = client
            self._own.append(client)
        return client

    def _route(self, spec: NamedModel) -> Route:
        return Route(spec, _protocol(spec, self._client(spec)))

    def route(self, name: str, field: str = "params.model") -> Route:
        """The model `name` ("" = the default) stands for; INVALID_ARGUMENT naming `field` if none."""
        found = self._routes.get(name or self.table.default)
        if found is not None:
            return found
        spec = self.table.get(name)
        if spec is None:
            known = ", ".join(self.table.names)
            raise InvalidArgument(
                field, f"unknown model {name!r} (known: {known})", reason=Reason.UNKNOWN_MODEL
            )
        return self._route(spec)  # a name passed through to the default endpoint

    def chain(self, name: str) -> list[Route]:
        """The model `name` stands for, then its fallbacks in order."""
        first = self.route(name)
        return [first, *(self._routes[other] for other in first.spec.fallback)]

    def listing(self) -> reasoner_pb2.ListModelsResponse:
        """What ListModels answers."""
        table = self.table
        return reasoner_pb2.ListModelsResponse(
            models=[
                reasoner_pb2.ModelInfo(
                    name=spec.name,
                    protocol=spec.protocol,
                    fallback=list(spec.fallback),
                )
                for spec in (table.models[n] for n in table.names)
            ],
            default_model=table.default,
            any_name=table.open,
        )

    async def aclose(self) -> None:
        """Close the clients made here."""
        for client in self._own:
            await client.close()
