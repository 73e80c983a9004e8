"""The recorded answers of real servers in tests/fixtures/providers, as the tests read them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentloop.scripted_model import Recording
from agentloop.v1 import common_pb2

DIRECTORY = Path(__file__).resolve().parent.parent / "fixtures" / "providers"


@dataclass(frozen=True)
class Fixture:
    """One manifest entry and its transcript."""

    name: str
    entry: dict[str, Any]
    recording: Recording

    @property
    def streamed(self) -> bool:
        return bool(self.entry["streamed"])

    @property
    def protocol(self) -> str:
        """The protocol the answer was given in: "chat" (completions) or "responses"."""
        return str(self.entry.get("protocol", "chat"))

    @property
    def think_tags(self) -> str:
        return str(self.entry.get("think_tags", "off"))

    @property
    def expect(self) -> dict[str, Any]:
        return dict(self.entry["expect"])

    @property
    def expect_error(self) -> dict[str, Any] | None:
        found = self.entry.get("expect_error")
        return dict(found) if found is not None else None

    def events(self) -> list[Any]:
        """The JSON of each SSE ``data:`` line before ``[DONE]`` (comments and event names skipped).

        A Responses API stream's events each carry their type in the data too, so this reads both.
        """
        chunks = []
        for event in self.recording.events():
            for line in event.decode().splitlines():
                if line.startswith("data:"):
                    data = line[5:].strip()
                    if data == "[DONE]":
                        return chunks
                    chunks.append(json.loads(data))
        return chunks

    def completed_output(self) -> dict[str, Any]:
        """A Responses stream's output items as its response.completed event holds them, by id."""
        completed = next(e for e in self.events() if e.get("type") == "response.completed")
        return {item["id"]: item for item in completed["response"]["output"]}


def fixtures() -> list[Fixture]:
    """Every recording of the manifest, in its order."""
    manifest = json.loads((DIRECTORY / "manifest.json").read_text(encoding="utf-8"))
    return [
        Fixture(entry["name"], entry, Recording.from_file(DIRECTORY / f"{entry['name']}.http"))
        for entry in manifest["fixtures"]
    ]


def answers(protocol: str = "chat") -> list[Fixture]:
    """The recordings of successful answers in `protocol`."""
    return [f for f in fixtures() if f.expect_error is None and f.protocol == protocol]


def failures(protocol: str = "chat") -> list[Fixture]:
    """The recordings of errors (an HTTP error status, or an error inside a stream) in `protocol`."""
    return [f for f in fixtures() if f.expect_error is not None and f.protocol == protocol]


def calls_of(message: common_pb2.Message) -> list[dict[str, Any]]:
    """A message's tool calls in the manifest's ``expect`` form (provider fields parsed)."""
    out = []
    for call in message.tool_calls:
        item: dict[str, Any] = {"id": call.id, "name": call.name, "arguments_json": call.arguments_json}
        if call.provider_fields_json:
            item["provider_fields"] = json.loads(call.provider_fields_json)
        out.append(item)
    return out
