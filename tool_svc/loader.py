"""Load user tool modules named on the command line or in AGENTLOOP_TOOL_MODULES.

A module is named either by a file path (``./my_tools.py``) or by a dotted
name (``pkg.tools``) found from the current directory or the installed
packages, as ``python -m`` would find it: no PYTHONPATH needed. It offers its
tools by decorating module-level functions with ``@tool`` or, when it needs to
decide at start-up (configuration, optional dependencies), by defining
``register(registry)``.

Whatever goes wrong becomes one ToolModuleError whose message is a single line
naming the file and line to look at and what to do about it, because the
person reading it is looking at their own code, not at ours.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from tool_svc.registry import Tool, ToolRegistry, tool_options


class ToolModuleError(ValueError):
    """A tool module could not be imported or registered; the message is one line for the operator."""


def load_modules(registry: ToolRegistry, module_names: Iterable[str]) -> None:
    """Import each module (dotted name or .py path) and register its tools into ``registry``, in order."""
    for name in module_names:
        module = import_tool_module(name)
        register = getattr(module, "register", None)
        if callable(register) and tool_options(register) is None:
            try:
                register(registry)
            except Exception as exc:
                raise ToolModuleError(
                    f"{_where(exc, module)}: register(registry) of tool module {name!r} raised "
                    f"{_describe(exc)}; fix the code at that line"
                ) from exc
        else:
            _register_decorated(registry, module, name)


def is_path(name: str) -> bool:
    """Whether a --tools value names a file rather than a module."""
    return name.endswith(".py") or "/" in name or os.sep in name


def import_tool_module(name: str) -> ModuleType:
    """The module ``name`` names (a .py path or a dotted module name), imported."""
    if is_path(name):
        return _import_file(name)
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        # What `python -m` does: modules of the current directory can be named without PYTHONPATH.
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise ToolModuleError(
                f"cannot find tool module {name!r} in {cwd} or the installed packages; check the name, "
                f"or give the file's path (--tools ./{name.replace('.', '/')}.py)"
            ) from exc
        raise _import_error(name, exc, None) from exc
    except Exception as exc:
        raise _import_error(name, exc, None) from exc


def _import_file(name: str) -> ModuleType:
    path = Path(name).resolve()
    if not path.is_file():
        raise ToolModuleError(f"{name}: no such file; give the path of a .py file of @tool functions")
    module_name = path.stem if path.stem.isidentifier() else "agentloop_tools"
    if module_name in sys.modules and getattr(sys.modules[module_name], "__file__", None) != str(path):
        module_name = f"agentloop_tools_{module_name}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ToolModuleError(f"{name}: cannot be loaded as a Python module; give the path of a .py file")
    module = importlib.util.module_from_spec(spec)
    # Its siblings can be imported by name, as when the file runs as a script.
    if str(path.parent) not in sys.path:
        sys.path.insert(0, str(path.parent))
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[module_name]
        raise _import_error(name, exc, str(path)) from exc
    return module


def _import_error(name: str, exc: Exception, path: str | None) -> ToolModuleError:
    """One line for an exception raised while importing a tool module."""
    if isinstance(exc, SyntaxError):
        where = f"{exc.filename or path or name}:{exc.lineno or 0}"
        return ToolModuleError(f"{where}: syntax error: {exc.msg}; fix the code at that line")
    where = _where(exc, None, path)
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        top = exc.name.split(".")[0]
        return ToolModuleError(
            f"{where}: tool module {name!r} imports {exc.name!r}, which is not installed in "
            f"{sys.prefix}; install it there (pip install {top}) or fix the import"
        )
    if isinstance(exc, ImportError):
        return ToolModuleError(
            f"{where}: tool module {name!r} failed to import: {_describe(exc)}; fix the import"
        )
    return ToolModuleError(
        f"{where}: tool module {name!r} raised {_describe(exc)} while importing; fix the code at that line"
    )


def _register_decorated(registry: ToolRegistry, module: ModuleType, name: str) -> None:
    """Register the module's own ``@tool`` functions in definition order (imported ones are skipped)."""
    found = [
        obj
        for obj in vars(module).values()
        if callable(obj)
        and tool_options(obj) is not None
        and getattr(inspect.unwrap(obj), "__module__", None) == module.__name__
    ]
    if not found:
        where = getattr(module, "__file__", None) or name
        raise ToolModuleError(
            f"{where}: tool module {name!r} defines no @tool functions and no register(registry) "
            "function; decorate your tool functions with @tool (from tool_svc import tool)"
        )
    for fn in found:
        location = _function_location(fn)
        label = getattr(fn, "__name__", repr(fn))
        try:
            built = Tool(fn)
        except (TypeError, ValueError) as exc:
            raise ToolModuleError(f"{location}: tool {label!r}: {exc}; fix its definition") from exc
        if not built.description.strip():
            raise ToolModuleError(
                f"{location}: tool {built.name!r} has no docstring; add one saying what it does and when "
                "to use it (the model reads it to choose tools), or pass @tool(description=...)"
            )
        try:
            registry.register(built)
        except ValueError as exc:
            raise ToolModuleError(f"{location}: {exc}; rename one of them with @tool(name=...)") from exc


def _function_location(fn: Callable[..., Any]) -> str:
    target = inspect.unwrap(fn)
    code = getattr(target, "__code__", None)
    if code is None:
        return str(getattr(target, "__module__", "?"))
    return f"{code.co_filename}:{code.co_firstlineno}"


def _where(exc: BaseException, module: ModuleType | None, path: str | None = None) -> str:
    """file:line of the deepest traceback frame in user code (the module's file when known)."""
    wanted = path or (getattr(module, "__file__", None) if module is not None else None)
    frames = traceback.extract_tb(_tb(exc))
    own = [frame for frame in frames if wanted is not None and frame.filename == wanted]
    user = [frame for frame in frames if not _is_library(frame.filename)]
    chosen = (own or user or frames)[-1:] if frames else []
    if not chosen:
        return wanted or "?"
    return f"{chosen[0].filename}:{chosen[0].lineno}"


def _tb(exc: BaseException) -> TracebackType | None:
    return exc.__traceback__


def _is_library(filename: str) -> bool:
    """Frames of Python's import machinery, of this package or of installed packages are not the user's."""
    here = str(Path(__file__).resolve().parent)
    return (
        filename.startswith("<frozen")
        or filename.startswith(here)
        or "site-packages" in filename
        or filename.startswith(sys.base_prefix)
    )


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
