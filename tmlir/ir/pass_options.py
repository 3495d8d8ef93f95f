"""Typed, validated pass and target options: ``-p`` and ``-t`` texts to instances.

In: a pipeline text in MLIR syntax (``lower-to-cuda{fusion=false target-arch=sm_80},cse``)
or a target text, and the driver's table of passes or targets (name -> lazy loader). Out:
pass instances (`parse_passes`) or a checked target text (`check_target`), each option's
value converted to its dataclass field's type (bool, int, float, str, a tuple of them, an
optional or a ``Literal``) and checked by the class's ``__post_init__``. Every mistake is
a `PassOptionError` of one line naming the pass or target and the option::

    unknown pass 'lower-to-cuad'; did you mean 'lower-to-cuda'?
    pass 'lower-to-cuda' has no option 'fuson'; did you mean 'fusion'? (options: fusion, ...)
    option 'fusion' of pass 'lower-to-cuda' expects a bool (true/false), got 'maybe'

xDSL's own conversion (``from_spec``) accepts the same texts but reports mistakes as Python
reprs; a bool option given alone (``{fusion}``) means true, as in mlir-opt, and a number
given to a string option is that number's text.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, ParameterListType, parse_pipeline, parse_spec
from xdsl.utils.exceptions import ArgSpecParseError, DiagnosticException

Loaders = Mapping[str, Callable[[], type]]


class PassOptionError(ValueError):
    """A ``-p`` or ``-t`` text that names an unknown pass, target or option, or gives an
    option a value of the wrong type or one the pass refuses."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest of `candidates`, or ``""``."""
    close = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


def type_name(hint: Any) -> str:
    """A field's type as ``--help-pass`` shows it: ``bool``, ``list of int``, ``str | none``."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        return " | ".join(type_name(a) for a in args) + (" | none" if len(args) < len(typing.get_args(hint)) else "")
    if typing.get_origin(hint) is tuple:
        return f"list of {type_name(typing.get_args(hint)[0])}"
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(str(a) for a in typing.get_args(hint))
    return getattr(hint, "__name__", str(hint))


def value_text(value: Any) -> str:
    """An option value as it is written on the command line."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return ",".join(value_text(v) for v in value) if value else "(empty)"
    if value is None or value == "":
        return '""' if value == "" else "(none)"
    return str(value)


def option_fields(cls: type) -> list[dataclasses.Field]:
    """The fields of a pass or target class that are options."""
    return [f for f in dataclasses.fields(cls) if f.init and f.name != "name"]


_EXPECTS = {bool: "a bool (true/false)", int: "an integer", float: "a number", str: "a string"}


def _convert(values: ParameterListType, hint: Any, what: str) -> Any:
    """`values` (as xDSL's pipeline lexer read them) as a value of type `hint`."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if not values and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _convert(values, arg, what)
            except PassOptionError as exc:
                errors.append(exc)
        raise errors[0]
    if origin is tuple:
        return tuple(_convert((v,), args[0], what) for v in values)
    if origin is typing.Literal:
        if len(values) == 1 and values[0] in args:
            return values[0]
        hint = did_you_mean(str(values[0]), map(str, args)) if len(values) == 1 else ""
        raise PassOptionError(f"{what} expects one of {', '.join(map(str, args))}, got {_given(values)}{hint}")
    if hint is bool and not values:  # `{fusion}` alone, as in mlir-opt
        return True
    if len(values) == 1:
        value = values[0]
        if hint is str and not isinstance(value, str):
            return value_text(value)  # target-arch=80: the arch check names it
        if hint is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, hint) and not (hint is int and isinstance(value, bool)):
            return value
    expects = _EXPECTS.get(hint, f"a {type_name(hint)}")
    raise PassOptionError(f"{what} expects {expects}, got {_given(values)}")


def _given(values: ParameterListType) -> str:
    return "nothing" if not values else "'" + ",".join(value_text(v) for v in values) + "'"


def build(cls: type, spec: ArgSpec, kind: str) -> Any:
    """An instance of the pass or target class `cls` from `spec`, each option's value checked
    against its field's type; what ``__post_init__`` refuses (ValueError) is one line too."""
    fields = {f.name: f for f in option_fields(cls)}
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for given, values in spec.parameters.items():
        name = given.replace("-", "_")
        if name not in fields:
            valid = [f.replace("_", "-") for f in fields]
            if not valid:
                raise PassOptionError(f"{kind} '{spec.name}' takes no options, got '{given}'")
            raise PassOptionError(f"{kind} '{spec.name}' has no option '{given}'"
                                  f"{did_you_mean(given, valid)} (options: {', '.join(valid)})")
        kwargs[name] = _convert(values, hints.get(name, fields[name].type),
                                f"option '{given}' of {kind} '{spec.name}'")
    missing = [n.replace("_", "-") for n, f in fields.items() if n not in kwargs
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise PassOptionError(f"{kind} '{spec.name}' needs option '{missing[0]}'")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError, DiagnosticException) as exc:
        raise PassOptionError(str(exc).strip().splitlines()[0]) from None


def unknown_name(kind: str, name: str, known: Iterable[str]) -> PassOptionError:
    hint = did_you_mean(name, known) or f" (tm-opt --help lists the {kind}{'es' if kind == 'pass' else 's'})"
    return PassOptionError(f"unknown {kind} '{name}'{hint}")


def parse_passes(available: Loaders, text: str) -> tuple[ModulePass, ...]:
    """The passes of a ``-p`` pipeline text, options typed and validated; a PassOptionError
    naming the pass and option for any mistake (ArgSpecParseError for malformed text)."""
    specs = list(parse_pipeline(text))
    for spec in specs:
        if spec.name not in available:
            raise unknown_name("pass", spec.name, available)
    return tuple(build(available[s.name](), s, "pass") for s in specs)


def check_target(available: Loaders, text: str) -> str:
    """The ``-t`` text with its name known and its options typed and validated, as a spec text
    xDSL reads back; a PassOptionError otherwise."""
    try:
        spec = parse_spec(text)
    except ArgSpecParseError as exc:
        raise PassOptionError(f"malformed target '{text}': {str(exc).strip().splitlines()[-1]}") from None
    if spec.name not in available:
        raise unknown_name("target", spec.name, available)
    factory = available[spec.name]
    if is_function_target(factory):  # an old-style target: no options
        return text
    target = build(factory(), spec, "target")
    given = {n.replace("-", "_") for n in spec.parameters}
    options = {f.name: _as_parameters(getattr(target, f.name)) for f in option_fields(type(target)) if f.name in given}
    return str(ArgSpec(spec.name, options))


def is_function_target(loader: Callable[..., Any]) -> bool:
    """Whether a target loader is an old-style xDSL function ``(module, stream)``, not a
    factory of a `Target` class."""
    return any(p.default is inspect.Parameter.empty for p in inspect.signature(loader).parameters.values())


def _as_parameters(value: Any) -> ParameterListType:
    return () if value is None else tuple(value) if isinstance(value, tuple) else (value,)
