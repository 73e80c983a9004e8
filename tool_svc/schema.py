"""Derive a tool's JSON schema from its Python signature and docstring.

The type hints are the single source of truth: the model sees the schema built
here, the registry validates arguments against it, and the converters built
alongside turn validated JSON values back into the Python types the function
declared (enum members, dataclass instances, floats for ints). Anything this
module cannot express faithfully is refused with a TypeError at registration,
so a tool never advertises a schema it cannot honour.

Parameters typed ToolContext, and injected parameters (``Annotated`` with an
``Injected`` marker, see tool_svc.injected), are filled by the executor: they
are left out of the schema and reported separately.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from tool_svc.injected import INJECTED_TYPES, MARKER_NAMES, injected_markers

Converter = Callable[[Any], Any]

_SCALARS: Mapping[type, str] = types.MappingProxyType(
    {str: "string", bool: "boolean", int: "integer", float: "number"}
)
_JSON_TYPES: Mapping[type, str] = types.MappingProxyType(
    {str: "string", bool: "boolean", int: "integer", float: "number", type(None): "null"}
)
_PARAM_SECTIONS = frozenset({"args", "arguments", "parameters", "params", "attributes", "keyword args"})
_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Attributes|Keyword Args|Returns?|Yields?|Raises|"
    r"Examples?|Notes?|Warnings?|See Also|References|Todo)\s*:\s*$",
    re.IGNORECASE,
)
_GOOGLE_ITEM = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_REST_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$")


_EMPTY: Any = inspect.Parameter.empty


class _Unsupported(Exception):
    """Raised deep inside type translation; re-raised as TypeError with the parameter's name."""


@dataclass(frozen=True)
class Docstring:
    """What a docstring tells the model: the text before its sections, and per-name descriptions."""

    description: str
    params: Mapping[str, str]


@dataclass(frozen=True)
class FunctionSchema:
    """Everything the registry needs to validate, convert and call one function."""

    description: str
    parameters: dict[str, Any]
    converters: tuple[tuple[str, Converter], ...]
    implicit_none: tuple[str, ...]
    context_param: str | None
    injected: tuple[tuple[str, str], ...] = ()
    """(parameter name, injected kind) per injected parameter, in signature order."""


def parse_docstring(doc: str | None) -> Docstring:
    """Split a Google-style or reST docstring into its description and parameter descriptions.

    Only the text before the first section (``Args:``, ``Returns:``, ``:param``...)
    becomes the description, because sections like Returns/Raises describe the
    implementation rather than when the model should call the tool.
    """
    if not doc:
        return Docstring("", {})
    reader = _DocstringReader()
    for line in inspect.cleandoc(doc).splitlines():
        reader.read(line)
    description, params = reader.description, reader.params
    paragraphs = "\n".join(description).split("\n\n")
    return Docstring("\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip()), params)


class _DocstringReader:
    """Reads a docstring line by line, remembering the section and the parameter being described.

    A parameter's description may go on over indented lines, so each line's
    meaning depends on the ones before it.
    """

    def __init__(self) -> None:
        self.description: list[str] = []
        self.params: dict[str, str] = {}
        self._section: str | None = None
        self._current: str | None = None
        self._item_indent = -1

    def read(self, line: str) -> None:
        stripped = line.strip()
        indent = len(line) - len(stripped) if stripped else -1
        if _SECTION.match(line):
            self._section, self._current, self._item_indent = line.split(":")[0].strip().lower(), None, -1
        elif line.startswith(":"):
            self._rest_field(line)
        elif self._section is None:
            self.description.append(stripped)
        elif indent == 0:
            self._section, self._current = "ended", None
        elif self._section in _PARAM_SECTIONS and indent > 0:
            self._google_item(stripped, indent)
        elif self._section == "rest" and indent > 0:
            self._go_on(stripped)

    def _rest_field(self, line: str) -> None:
        """A reST field (``:param name: text``); other fields end the description of the last one."""
        self._section = "rest"
        match = _REST_PARAM.match(line)
        self._current = match.group(1) if match else None
        if match:
            self.params[match.group(1)] = match.group(2).strip()

    def _google_item(self, stripped: str, indent: int) -> None:
        """A line of an Args section: a new ``name: text`` item, or more of the current one's text.

        A line shaped like an item but indented deeper than the current item
        is part of its text (``see: the manual``), not a new parameter.
        """
        item = _GOOGLE_ITEM.match(stripped)
        if item and (self._current is None or indent <= self._item_indent):
            self._current, self._item_indent = item.group(1), indent
            self.params[self._current] = item.group(2).strip()
        else:
            self._go_on(stripped)

    def _go_on(self, text: str) -> None:
        if self._current is not None:
            self.params[self._current] = f"{self.params[self._current]} {text}".strip()


def function_schema(fn: Callable[..., Any], context_type: type) -> FunctionSchema:
    """Build the arguments schema of ``fn``; ``context_type`` and injected parameters are not advertised."""
    where = getattr(fn, "__qualname__", repr(fn))
    try:
        signature = inspect.signature(fn)
        hints = get_type_hints(fn)
        extras = get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature of tool function {where}: {exc}") from exc
    doc = parse_docstring(inspect.getdoc(fn))
    properties: dict[str, Any] = {}
    required: list[str] = []
    converters: list[tuple[str, Converter]] = []
    implicit_none: list[str] = []
    context_param: str | None = None
    injected: list[tuple[str, str]] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise TypeError(
                f"tool function {where}: parameter {name!r} is {param.kind.description}; "
                "tools take named parameters only"
            )
        if name not in hints:
            raise TypeError(f"tool function {where}: parameter {name!r} has no type annotation")
        annotation = hints[name]
        if context_type in (annotation, _strip_optional(annotation)):
            context_param = name
            continue
        kind = _injected_kind(extras[name], f"tool function {where}: parameter {name!r}")
        if kind is not None:
            injected.append((name, kind))
            continue
        try:
            schema, convert, nullable = _describe_param(annotation, param.default, frozenset())
        except _Unsupported as exc:
            raise TypeError(f"tool function {where}: parameter {name!r}: {exc}") from None
        properties[name] = _with_description(schema, doc.params.get(name))
        if param.default is param.empty:
            if nullable:
                implicit_none.append(name)
            else:
                required.append(name)
        if convert is not None:
            converters.append((name, convert))
    return FunctionSchema(
        doc.description,
        _closed_object(properties, required),
        tuple(converters),
        tuple(implicit_none),
        context_param,
        tuple(injected),
    )


def _injected_kind(annotation: Any, where: str) -> str | None:
    """The injected kind of a parameter annotated ``Marker`` or ``Marker | None``, else None.

    Raises TypeError when the marker sits on the wrong type (``Annotated[int,
    Injected("user_id")]``) or somewhere the executor cannot fill (inside
    ``list[...]`` and the like).
    """
    inner = _strip_optional(annotation)
    target = annotation if inner is None else inner
    if get_origin(target) is Annotated:
        markers = injected_markers(target.__metadata__)
        if len(markers) > 1:
            raise TypeError(f"{where} has {len(markers)} Injected markers; use one")
        if markers:
            kind = markers[0].kind
            base = target.__origin__
            expected = INJECTED_TYPES[kind]
            if base != expected:
                raise TypeError(
                    f"{where} is injected as {kind!r}, so its type must be {_name(expected)} "
                    f"(write it as {MARKER_NAMES[kind]}), not {_name(base)}"
                )
            return kind
    if _contains_injected(annotation):
        raise TypeError(
            f"{where}: Injected markers only work on a tool's own parameters, "
            f"not nested inside another type ({annotation})"
        )
    return None


def _contains_injected(tp: Any) -> bool:
    """Whether an Injected marker appears anywhere inside ``tp``."""
    if get_origin(tp) is Annotated and injected_markers(tp.__metadata__):
        return True
    return any(_contains_injected(arg) for arg in get_args(tp))


def _describe_param(
    annotation: Any, default: Any, seen: frozenset[type]
) -> tuple[dict[str, Any], Converter | None, bool]:
    """Schema, converter and nullability of one parameter or field; ``default`` may be _EMPTY."""
    nullable = default is None
    inner = _strip_optional(annotation)
    if inner is not None:
        annotation, nullable = inner, True
    schema, convert = _describe(annotation, seen)
    if nullable:
        schema = _nullable(schema)
        convert = _none_or(convert) if convert is not None else None
    if default is not _EMPTY:
        encoded = _json_default(default)
        if encoded is not _EMPTY:
            schema = {**schema, "default": encoded}
    return schema, convert, nullable


def _describe(tp: Any, seen: frozenset[type]) -> tuple[dict[str, Any], Converter | None]:
    """Translate one annotation to (JSON schema, converter or None when values pass through as is)."""
    if tp in _SCALARS:
        return _scalar_schema(tp)
    origin = get_origin(tp)
    args = get_args(tp)
    if tp is list or origin is list:
        return _array_schema(args, seen)
    if tp is dict or origin is dict:
        return _map_schema(args, seen)
    if origin is Literal:
        return _enum_schema(list(args)), None
    if origin in (Union, types.UnionType):
        raise _Unsupported(f"{tp} is not supported; only 'X | None' unions are")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([member.value for member in tp]), tp
    if isinstance(tp, type) and (is_typeddict(tp) or dataclasses.is_dataclass(tp)):
        return _object_schema(tp, seen)
    raise _Unsupported(f"{_name(tp)} is not a supported annotation")


def _scalar_schema(tp: type) -> tuple[dict[str, Any], Converter | None]:
    """A JSON scalar; numbers get the declared type, as JSON Schema's integer accepts 2.0 and number 3."""
    schema: dict[str, Any] = {"type": _SCALARS[tp]}
    return schema, (_as_float if tp is float else _as_int if tp is int else None)


def _array_schema(args: tuple[Any, ...], seen: frozenset[type]) -> tuple[dict[str, Any], Converter | None]:
    """``list`` or ``list[X]``: items are converted only when X's values need it."""
    if not args:
        return {"type": "array"}, None
    items, convert_item = _describe(args[0], seen)
    return {"type": "array", "items": items}, (_each(convert_item) if convert_item else None)


def _map_schema(args: tuple[Any, ...], seen: frozenset[type]) -> tuple[dict[str, Any], Converter | None]:
    """``dict`` or ``dict[str, X]``: JSON object keys are strings, so other key types cannot arrive."""
    if not args:
        return {"type": "object"}, None
    if args[0] is not str:
        raise _Unsupported(f"dict keys must be str (JSON object keys), not {_name(args[0])}")
    values, convert_value = _describe(args[1], seen)
    return {"type": "object", "additionalProperties": values}, (
        _each_value(convert_value) if convert_value else None
    )


def _object_schema(cls: type, seen: frozenset[type]) -> tuple[dict[str, Any], Converter | None]:
    """A TypedDict or dataclass as a nested object with its own required list."""
    if cls in seen:
        raise _Unsupported(f"{cls.__name__} refers to itself; recursive types are not supported")
    seen = seen | {cls}
    hints = _field_hints(cls)
    is_dataclass = dataclasses.is_dataclass(cls)
    doc = _class_doc(cls)
    properties: dict[str, Any] = {}
    converters: dict[str, Converter] = {}
    required: list[str] = []
    implicit_none: list[str] = []
    for name, default, has_default in _fields(cls, hints):
        try:
            schema, convert, nullable = _describe_param(hints[name], default, seen)
        except _Unsupported as exc:
            raise _Unsupported(f"field {cls.__name__}.{name}: {exc}") from None
        properties[name] = _with_description(schema, doc.params.get(name))
        if not has_default:
            # A dataclass field typed X | None may be left out (it gets None); a TypedDict
            # key stays required when the TypedDict says so, whatever its type.
            (implicit_none if nullable and is_dataclass else required).append(name)
        if convert is not None:
            converters[name] = convert
    schema = _closed_object(properties, required)
    if doc.description:
        schema["description"] = doc.description
    if is_dataclass:
        return schema, _build_dataclass(cls, converters, tuple(implicit_none))
    return schema, (_convert_keys(converters) if converters else None)


def _field_hints(cls: type) -> dict[str, Any]:
    """A class's field types; injected markers are refused, as only a tool's own parameters get values."""
    try:
        hints = get_type_hints(cls)
    except NameError as exc:
        raise _Unsupported(f"cannot resolve the annotations of {cls.__name__}: {exc}") from exc
    if any(_contains_injected(tp) for tp in get_type_hints(cls, include_extras=True).values()):
        raise _Unsupported(
            f"{cls.__name__} has an injected field; only a tool's own parameters can be injected"
        )
    return hints


def _class_doc(cls: type) -> Docstring:
    """A class's docstring, without the signature dataclasses write when it has none."""
    generated = dataclasses.is_dataclass(cls) and (cls.__doc__ or "").startswith(f"{cls.__name__}(")
    return parse_docstring(None if generated else cls.__doc__)


def _with_description(schema: dict[str, Any], description: str | None) -> dict[str, Any]:
    """The schema with the docstring's description of its parameter or field, if it has one."""
    return {**schema, "description": description} if description else schema


def _closed_object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """An object schema refusing unknown keys: a misspelt argument must fail, not be dropped silently."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def _fields(cls: type, hints: Mapping[str, Any]) -> list[tuple[str, Any, bool]]:
    """(name, advertised default or _EMPTY, whether the value may be omitted) per field."""
    if dataclasses.is_dataclass(cls):
        result: list[tuple[str, Any, bool]] = []
        for field in dataclasses.fields(cls):
            if field.init:
                has_value = field.default is not dataclasses.MISSING
                has_factory = field.default_factory is not dataclasses.MISSING
                result.append((field.name, field.default if has_value else _EMPTY, has_value or has_factory))
        return result
    # __required_keys__ misses NotRequired[...] written as a string annotation (PEP 563), so the
    # wrappers kept by include_extras have the last word.
    required_keys: frozenset[str] = typing.cast(Any, cls).__required_keys__
    extras = get_type_hints(cls, include_extras=True)
    result = []
    for name in hints:
        wrapper = get_origin(extras[name])
        optional = wrapper is NotRequired or (wrapper is not Required and name not in required_keys)
        result.append((name, _EMPTY, optional))
    return result


def _strip_optional(tp: Any) -> Any | None:
    """The X of ``X | None`` / ``Optional[X]``, or None when ``tp`` is not such a union."""
    if get_origin(tp) not in (Union, types.UnionType):
        return None
    args = [arg for arg in get_args(tp) if arg is not type(None)]
    if len(args) != len(get_args(tp)) - 1 or len(args) != 1:
        return None
    return args[0]


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    kinds: list[str] = []
    for value in values:
        kind = _JSON_TYPES.get(type(value))
        if kind is None:
            raise _Unsupported(f"enum value {value!r} is not a JSON scalar")
        if kind not in kinds:
            kinds.append(kind)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": values}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind is None:
        return {"anyOf": [schema, {"type": "null"}]}
    result = dict(schema)
    kinds = kind if isinstance(kind, list) else [kind]
    if "null" not in kinds:
        result["type"] = [*kinds, "null"]
    if "enum" in result and None not in result["enum"]:
        result["enum"] = [*result["enum"], None]
    return result


def _json_default(value: Any) -> Any:
    """The default as JSON, or _EMPTY when it has no JSON form (it is then left unadvertised)."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return _EMPTY


def _name(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp)


def _as_int(value: Any) -> Any:
    # JSON Schema's "integer" accepts 2.0; the function declared int.
    return value if type(value) is int else int(value)


def _as_float(value: Any) -> Any:
    return value if type(value) is float else float(value)


def _none_or(convert: Converter) -> Converter:
    return lambda value: None if value is None else convert(value)


def _each(convert: Converter) -> Converter:
    return lambda values: [convert(value) for value in values]


def _each_value(convert: Converter) -> Converter:
    return lambda mapping: {key: convert(value) for key, value in mapping.items()}


def _convert_keys(converters: Mapping[str, Converter]) -> Converter:
    def convert(mapping: dict[str, Any]) -> dict[str, Any]:
        return {key: converters[key](value) if key in converters else value for key, value in mapping.items()}

    return convert


def _build_dataclass(
    cls: type, converters: Mapping[str, Converter], implicit_none: tuple[str, ...]
) -> Converter:
    def build(mapping: dict[str, Any]) -> Any:
        values = {
            key: converters[key](value) if key in converters else value for key, value in mapping.items()
        }
        for key in implicit_none:
            values.setdefault(key, None)
        return cls(**values)

    return build
