"""Reasoning a model writes inline, between ``<think>`` and ``</think>``, split from its answer.

Servers that do not parse reasoning themselves (llama.cpp with ``--reasoning-format none``, vLLM
without a reasoning parser, many fine-tunes behind a plain proxy) leave it in ``content``. When the
model's settings ask for it (AGENTLOOP_MODEL_THINK_TAGS) the Reasoner splits it out as it streams:
a tag may be cut anywhere between two chunks, so text that could be the start of a tag is held
back until the next chunk says whether it is one.

Two modes: ``tags`` reads reasoning only between an opening and a closing tag; ``open`` is for
chat templates that open the tag in the prompt, so the answer starts inside the reasoning and
only ``</think>`` appears (Qwen3, DeepSeek-R1 distills): everything before it is reasoning.
"""

from __future__ import annotations

from enum import StrEnum

OPEN_TAG = "<think>"
CLOSE_TAG = "</think>"


class ThinkMode(StrEnum):
    """How inline think tags are read (AGENTLOOP_MODEL_THINK_TAGS)."""

    OFF = "off"
    """Content is the answer, tags and all."""
    TAGS = "tags"
    """Text between <think> and </think> is reasoning."""
    OPEN = "open"
    """The answer starts inside the reasoning: text before </think> is reasoning."""


def _held(text: str, tag: str) -> int:
    """Length of the longest end of `text` that is a proper start of `tag` (kept for the next chunk)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if tag.startswith(text[-size:]):
            return size
    return 0


class ThinkSplitter:
    """Splits streamed content into (reasoning, answer) pieces at think tags, across chunk borders.

    Whitespace at the start and right after a tag (the newlines models put there) is dropped, so
    the answer and the reasoning start with their first word.
    """

    def __init__(self, mode: ThinkMode) -> None:
        self._thinking = mode is ThinkMode.OPEN
        self._pending = ""
        self._trim = True  # models put newlines before their first tag too

    def feed(self, text: str) -> tuple[str, str]:
        """The reasoning and answer text that `text` completes; a possible partial tag is held back."""
        text = self._pending + text
        self._pending = ""
        reasoning: list[str] = []
        answer: list[str] = []
        while text:
            tag = CLOSE_TAG if self._thinking else OPEN_TAG
            if self._trim:
                text = text.lstrip()
                if not text:
                    break
                self._trim = False
            at = text.find(tag)
            if at < 0:
                keep = _held(text, tag)
                piece, self._pending = text[: len(text) - keep], text[len(text) - keep :]
                (reasoning if self._thinking else answer).append(piece)
                break
            (reasoning if self._thinking else answer).append(text[:at])
            text = text[at + len(tag) :]
            self._thinking = not self._thinking
            self._trim = True
        return "".join(reasoning), "".join(answer)

    def flush(self) -> tuple[str, str]:
        """What is still held back at the end of the answer: it was no tag after all."""
        pending, self._pending = self._pending, ""
        return (pending, "") if self._thinking else ("", pending)
