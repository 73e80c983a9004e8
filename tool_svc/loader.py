"""Load user tool modules named on the command line or in AGENTLOOP_TOOL_MODULES.

A module offers its tools either by decorating module-level functions with
``@tool`` or, when it needs to decide at start-up (configuration, optional
dependencies), by defining ``register(registry)``. Failures name the module,
because the operator reading them only knows what they typed.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from types import ModuleType

from tool_svc.registry import ToolRegistry, tool_options


class ToolModuleError(ValueError):
    """A tool module could not be imported or registered."""


def load_modules(registry: ToolRegistry, module_names: Iterable[str]) -> None:
    """Import each module and register its tools into ``registry``, in order."""
    for name in module_names:
        module = _import(name)
        try:
            register = getattr(module, "register", None)
            if callable(register) and tool_options(register) is None:
                register(registry)
            else:
                _register_decorated(registry, module)
        except ToolModuleError:
            raise
        except Exception as exc:
            raise ToolModuleError(f"tool module {name!r}: {type(exc).__name__}: {exc}") from exc


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ToolModuleError(f"cannot import tool module {name!r}: {exc}") from exc
    except Exception as exc:
        raise ToolModuleError(
            f"tool module {name!r} failed while importing: {type(exc).__name__}: {exc}"
        ) from exc


def _register_decorated(registry: ToolRegistry, module: ModuleType) -> None:
    """Register the module's own ``@tool`` functions in definition order (imported ones are skipped)."""
    found = [
        obj
        for obj in vars(module).values()
        if callable(obj)
        and tool_options(obj) is not None
        and getattr(inspect.unwrap(obj), "__module__", None) == module.__name__
    ]
    if not found:
        raise ToolModuleError(
            f"tool module {module.__name__!r} defines no @tool functions and no register(registry) function"
        )
    for fn in found:
        registry.register(fn)
