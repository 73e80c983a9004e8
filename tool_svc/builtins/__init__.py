"""The tools every ToolService offers unless given its own registry."""

from __future__ import annotations

from agentloop.kernel.settings import ToolSettings
from tool_svc.builtins.calculator import calculator
from tool_svc.builtins.clock import current_time
from tool_svc.builtins.sql import sql_tools
from tool_svc.registry import ToolRegistry


def default_registry(settings: ToolSettings) -> ToolRegistry:
    """A registry with the calculator, the clock and the SQL tools configured by ``settings``."""
    registry = ToolRegistry([calculator, current_time])
    sql = sql_tools(
        settings.sql_database or None, settings.sql_row_limit, max_concurrent=settings.sql_max_concurrent
    )
    for sql_tool in sql:
        registry.register(sql_tool)
    return registry


__all__ = ["default_registry"]
