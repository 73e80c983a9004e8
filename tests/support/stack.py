"""The in-process stack of the tests: agentloop.testing, which users test their tools with."""

from agentloop.testing import (
    Stack,
    assert_numbered,
    final_of,
    kinds,
    running_stack,
    start_stack,
    tokens_joined,
)

__all__ = ["Stack", "assert_numbered", "final_of", "kinds", "running_stack", "start_stack", "tokens_joined"]
