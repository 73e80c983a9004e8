"""JSON Schemas from outside the process, checked and compiled so that using them reads nothing else.

Schemas arrive from clients (a run's ``output_schema``), from MCP servers and
from tool modules. jsonschema, given no registry, resolves a ``$ref`` it does
not hold by fetching it (``urlopen``: ``http://`` and ``file://`` alike), and
what it finds can end up in an error message a client reads. So every schema
of that kind is compiled here, and only here:

- before use, one walk of the whole document refuses every reference that is
  not a JSON pointer into the same document (``#`` or ``#/...``): no URLs, no
  relative files, no anchors; a ``$id`` below the root (which would re-base
  the references under it) is refused too, and every pointer must land on a
  schema that exists;
- references are bounded: at most MAX_REFERENCES of them, none that leads back
  to itself without consuming any input (``{"$ref": "#"}``), the encoded
  schema within the JSON size and depth limits the Reasoner parses it with,
  and each validation may follow at most MAX_REFERENCE_STEPS references (an
  ``allOf`` of two references to a definition that does the same, nested
  thirty times, would otherwise take 2**30 steps, in the caller's event loop);
- the validator's registry retrieves nothing: were anything to slip past the
  walk, resolving it fails instead of fetching.

Failures are SchemaRefused (a ValueError) whose message says what is wrong
and where (a JSON pointer into the schema), so a caller can prefix its own
field: "options.output_schema: refers outside itself: $ref 'file:///...' ...
(at #/properties/a/$ref)".
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast
from urllib.parse import unquote

import referencing
import referencing.exceptions
from jsonschema import Draft3Validator, Draft4Validator, Draft202012Validator, SchemaError, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for

from agentloop.kernel.jsonlimits import MAX_BYTES, JsonLimitError, check_bounds

MAX_REFERENCES = 256
"""References one schema may hold; generated schemas (pydantic's ``$defs``) use a few dozen."""
MAX_REFERENCE_STEPS = 10_000
"""References one validation may follow: a step costs 5 to 50 microseconds, so at most about half a
second, and an array of ten thousand items that each refer to a definition still passes."""

_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
"""Keywords whose subschemas apply to the same value as the schema that holds them ..."""
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
"""... so a reference cycle through them alone never reaches a smaller value and never ends."""

Pointer = tuple[str, ...]


class SchemaRefused(ValueError):
    """A schema that cannot be used safely; the message says why and where (a JSON pointer into it)."""

    def __init__(self, problem: str, where: Pointer = ()) -> None:
        self.where = _pointer_text(where)
        super().__init__(problem if not where else f"{problem} (at {self.where})")


def _pointer_text(parts: Pointer) -> str:
    return "#" + "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _refuse_retrieval(uri: str) -> referencing.Resource[Any]:
    """The registry's retrieve function: nothing outside the schema is ever read."""
    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: referencing.Registry[Any] = referencing.Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


class _Steps:
    """The references one validation has left to follow."""

    __slots__ = ("left",)

    def __init__(self, steps: int) -> None:
        self.left = steps


_STEPS: contextvars.ContextVar[_Steps | None] = contextvars.ContextVar("schema_steps", default=None)

KeywordFn = Callable[[Validator, Any, Any, Mapping[str, Any]], Iterator[ValidationError]]


def _counted(keyword: KeywordFn) -> KeywordFn:
    def follow(validator: Validator, value: Any, instance: Any, schema: Mapping[str, Any]) -> Any:
        steps = _STEPS.get()
        if steps is not None:
            steps.left -= 1
            if steps.left < 0:
                raise SchemaRefused(f"checking a value takes more than {MAX_REFERENCE_STEPS} reference steps")
        return keyword(validator, value, instance, schema)

    return follow


_COUNTING: dict[type[Validator], type[Validator]] = {}


def _counting_class(base: type[Validator]) -> type[Validator]:
    """``base`` whose reference keywords count against the validation's step budget."""
    counting = _COUNTING.get(base)
    if counting is None:
        keywords = {name: _counted(fn) for name, fn in base.VALIDATORS.items() if name in _REFERENCE_KEYWORDS}
        counting = cast("type[Validator]", extend(base, keywords))  # type: ignore[no-untyped-call]
        _COUNTING[base] = counting
    return counting


class SchemaValidator:
    """A checked schema's validator: ``errors`` never reads anything outside the schema."""

    __slots__ = ("_validator", "schema")

    def __init__(self, schema: Mapping[str, Any] | bool, validator: Validator) -> None:
        self.schema = schema
        self._validator = validator

    def errors(self, instance: Any) -> list[ValidationError]:
        """Every way ``instance`` fails the schema; SchemaRefused when checking it costs too much."""
        token = _STEPS.set(_Steps(MAX_REFERENCE_STEPS))
        try:
            return list(self._validator.iter_errors(instance))
        except RecursionError:
            raise SchemaRefused("checking a value nests references too deeply") from None
        except (
            referencing.exceptions.Unresolvable,
            referencing.exceptions.NoSuchResource,
            referencing.exceptions.Unretrievable,
        ) as exc:
            # Not reachable for a checked schema; kept so that a gap in the walk is an error, not a fetch.
            raise SchemaRefused(f"a reference does not resolve inside the schema ({exc})") from None
        finally:
            _STEPS.reset(token)


def compile_schema(
    schema: object, *, default: type[Validator] = Draft202012Validator, max_bytes: int = MAX_BYTES
) -> SchemaValidator:
    """Check an untrusted schema (see the module docstring) and build its validator.

    The dialect is the one ``$schema`` names, ``default`` without one. Raises
    SchemaRefused naming the problem's place in the schema.
    """
    base = check_schema(schema, default=default, max_bytes=max_bytes)
    checked = cast("Mapping[str, Any] | bool", schema)
    return SchemaValidator(checked, _counting_class(base)(checked, registry=_REGISTRY))


def check_schema(
    schema: object, *, default: type[Validator] = Draft202012Validator, max_bytes: int = MAX_BYTES
) -> type[Validator]:
    """Refuse a schema that is not a valid JSON Schema or refers outside itself; its validator class."""
    if isinstance(schema, bool):
        return default
    if not isinstance(schema, Mapping):
        raise SchemaRefused(f"must be a JSON object or a boolean, not {type(schema).__name__}")
    try:
        check_bounds(json.dumps(schema, ensure_ascii=False), max_bytes=max_bytes, what="schema")
    except JsonLimitError as exc:
        raise SchemaRefused(exc.problem) from None
    except (TypeError, ValueError) as exc:
        raise SchemaRefused(f"is not JSON ({exc})") from None
    cls = validator_for(schema, default=default)
    _References(schema, legacy_ids=cls in (Draft3Validator, Draft4Validator)).check()
    try:
        cls.check_schema(dict(schema))
    except SchemaError as exc:
        where = tuple(str(part) for part in exc.path)
        raise SchemaRefused(f"is not a valid JSON Schema: {exc.message}", where) from None
    return cls


class _References:
    """One walk over a schema document: where its references point, and whether they may be followed."""

    def __init__(self, document: Mapping[str, Any], *, legacy_ids: bool) -> None:
        self.document = document
        self._id_keys = ("$id", "id") if legacy_ids else ("$id",)
        self.targets: dict[Pointer, list[Pointer]] = {}
        """Reference holder -> the schemas its references point to (every one inside the document)."""

    def check(self) -> None:
        """Raise SchemaRefused for the first reference or ``$id`` that could lead outside the document."""
        count = 0
        for parts, node in self._objects():
            for key in self._id_keys:
                if parts and isinstance(node.get(key), str):
                    raise SchemaRefused(
                        f"{key} is only allowed at the root of a schema (below it, it would change where "
                        "references point)",
                        (*parts, key),
                    )
            for key in _REFERENCE_KEYWORDS:
                if key not in node:
                    continue
                count += 1
                if count > MAX_REFERENCES:
                    raise SchemaRefused(f"holds more than {MAX_REFERENCES} references")
                self.targets.setdefault(parts, []).append(self._target((*parts, key), node[key]))
        self._check_cycles()

    def _objects(self) -> Iterator[tuple[Pointer, Mapping[str, Any]]]:
        """Every object in the document, wherever it is: a pointer may make any of them a schema."""
        stack: list[tuple[Pointer, Any]] = [((), self.document)]
        while stack:
            parts, node = stack.pop()
            if isinstance(node, Mapping):
                yield parts, node
                stack.extend(((*parts, str(key)), value) for key, value in node.items())
            elif isinstance(node, list):
                stack.extend(((*parts, str(i)), value) for i, value in enumerate(node))

    def _target(self, where: Pointer, ref: object) -> Pointer:
        if not isinstance(ref, str):
            raise SchemaRefused(f"{where[-1]} must be a string", where)
        if not (ref == "#" or ref.startswith("#/")):
            raise SchemaRefused(
                f"refers outside itself: {where[-1]} {ref[:200]!r} is not a JSON pointer into the same "
                "schema; only references such as '#/$defs/Name' are allowed, nothing is fetched or read",
                where,
            )
        parts = tuple(part.replace("~1", "/").replace("~0", "~") for part in unquote(ref[1:]).split("/")[1:])
        node: Any = self.document
        for part in parts:
            if isinstance(node, Mapping) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and (part == "0" or not part.startswith("0")):
                index = int(part)
                if index >= len(node):
                    raise SchemaRefused(f"{where[-1]} {ref[:200]!r} points to nothing in this schema", where)
                node = node[index]
            else:
                raise SchemaRefused(f"{where[-1]} {ref[:200]!r} points to nothing in this schema", where)
        if not isinstance(node, Mapping | bool):
            raise SchemaRefused(f"{where[-1]} {ref[:200]!r} does not point to a schema", where)
        return parts

    def _in_place(self, parts: Pointer) -> Iterator[Pointer]:
        """The schemas applied to the same value as the one at ``parts``: its reference and combinators."""
        node = self._at(parts)
        if not isinstance(node, Mapping):
            return
        yield from self.targets.get(parts, ())
        for key in _IN_PLACE_LISTS:
            if isinstance(node.get(key), list):
                yield from ((*parts, key, str(i)) for i in range(len(node[key])))
        for key in _IN_PLACE_ONE:
            if isinstance(node.get(key), Mapping):
                yield (*parts, key)
        for key in _IN_PLACE_MAPS:
            if isinstance(node.get(key), Mapping):
                yield from (
                    (*parts, key, name) for name, sub in node[key].items() if isinstance(sub, Mapping)
                )

    def _at(self, parts: Pointer) -> Any:
        node: Any = self.document
        for part in parts:
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def _check_cycles(self) -> None:
        """Refuse a reference that leads back to itself through schemas applied to the same value."""
        done: set[Pointer] = set()
        for start in self.targets:
            if start in done:
                continue
            path: list[Pointer] = [start]
            on_path = {start}
            pending = [self._in_place(start)]
            while pending:
                child = next(pending[-1], None)
                if child is None:
                    pending.pop()
                    finished = path.pop()
                    on_path.discard(finished)
                    done.add(finished)
                    continue
                if child in on_path:
                    raise SchemaRefused(
                        f"its references lead back to {_pointer_text(child)} without reading any part "
                        "of the value, so checking a value would never end",
                        path[-1],
                    )
                if child not in done:
                    path.append(child)
                    on_path.add(child)
                    pending.append(self._in_place(child))
