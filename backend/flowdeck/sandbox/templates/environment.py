"""The sandboxed Jinja2 environment: native values, refused attributes, budgeted calls and operators."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from jinja2 import nodes
from jinja2.compiler import Frame
from jinja2.exceptions import SecurityError
from jinja2.nativetypes import NativeCodeGenerator, NativeEnvironment
from jinja2.runtime import Context, StrictUndefined, Undefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.utils import missing, object_type_repr

from flowdeck.domain.truthiness import is_truthy
from flowdeck.sandbox.templates.budget import account_for, check_binop, check_size, current_guard
from flowdeck.sandbox.templates.filters import FILTER_REPLACEMENTS, with_budget

__all__ = ("ALLOWED_NAMES", "DICT_METHODS", "ENV", "VARIABLE")

VARIABLE = "ctx"
_GLOBALS_KEPT = frozenset({"range", "dict"})
_REMOVED_FILTERS = frozenset({"urlize"})  # adds caller-chosen text per URL found: unbounded growth
_REFUSED_STR_METHODS: Final = {
    "center": "the |center filter",
    "ljust": "the |center filter or ~",
    "rjust": "the |center filter or ~",
    "zfill": "the |format filter",
    "expandtabs": "the |replace filter",
    "format": "~ or the |format filter",
    "format_map": "~ or the |format filter",
    "join": "the |join filter",
    "replace": "the |replace filter",
    "encode": None,
    "translate": "the |replace filter",
    "maketrans": None,
}
_REFUSED_INT_METHODS: Final = frozenset({"to_bytes", "from_bytes"})
DICT_METHODS: Final = frozenset({"get", "items", "keys", "values"})


class _StrictUndefined(StrictUndefined):
    """StrictUndefined with messages that name what is missing: ``'missing' is undefined``."""

    __slots__ = ()

    @property
    def _undefined_message(self) -> str:
        if self._undefined_hint:
            return self._undefined_hint
        name = self._undefined_name
        if self._undefined_obj is missing:
            return f"{name!r} is undefined"
        if not isinstance(name, str):
            return f"{name!r} is undefined ({object_type_repr(self._undefined_obj)} has no element {name!r})"
        return f"{name!r} is undefined ({object_type_repr(self._undefined_obj)} has no key or attribute {name!r})"


class _CodeGenerator(NativeCodeGenerator):
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:  # noqa: N802 (Jinja's visitor naming)
        """``a ~ b`` goes through ``environment.guarded_concat`` so its size is checked before joining."""
        self.write("environment.guarded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _SandboxEnvironment(ImmutableSandboxedEnvironment, NativeEnvironment):
    code_generator_class = _CodeGenerator
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not super().is_safe_attribute(obj, attr, value):
            return False
        if isinstance(obj, str):
            return attr not in _REFUSED_STR_METHODS
        return not (isinstance(obj, int) and attr in _REFUSED_INT_METHODS)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Undefined:
        hint = _REFUSED_STR_METHODS.get(attribute) if isinstance(obj, str) else None
        advice = f"; use {hint} instead" if hint else ""
        return self.undefined(
            f"access to attribute {attribute!r} of a {type(obj).__name__!r} object is refused{advice}",
            name=attribute,
            obj=obj,
            exc=SecurityError,
        )

    def wrap_str_format(self, value: Any) -> None:
        """``str.format`` is refused outright (``is_safe_attribute``) instead of being wrapped."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Mapping):
            try:
                return obj[attribute]
            except (KeyError, TypeError):
                pass
        return super().getattr(obj, attribute)

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        guard = current_guard()
        guard.tick()
        return account_for(super().call(context, obj, *args, **kwargs), guard)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        guard = current_guard()
        guard.tick()
        check_binop(operator, left, right)
        return account_for(self.binop_table[operator](left, right), guard)

    def guarded_concat(self, values: tuple[Any, ...]) -> str:
        guard = current_guard()
        guard.tick()
        parts = [str(value) for value in values]  # str() of a StrictUndefined raises
        check_size(sum(map(len, parts)), "~")
        return account_for("".join(parts), guard)  # type: ignore[no-any-return]


def _build_environment() -> _SandboxEnvironment:
    env = _SandboxEnvironment(undefined=_StrictUndefined, keep_trailing_newline=True, autoescape=False, cache_size=0)
    for name in [name for name in env.globals if name not in _GLOBALS_KEPT]:
        del env.globals[name]
    for name in _REMOVED_FILTERS:
        env.filters.pop(name, None)
    env.filters.update(FILTER_REPLACEMENTS)
    env.filters["truthy"] = is_truthy
    env.tests["truthy"] = is_truthy
    env.filters = {name: with_budget(func, account=True) for name, func in env.filters.items()}
    tests = cast("dict[str, Callable[..., Any]]", env.tests)
    env.tests = {name: with_budget(func, account=False) for name, func in tests.items()}
    return env


ENV: Final = _build_environment()
ALLOWED_NAMES: Final = frozenset({VARIABLE, *_GLOBALS_KEPT})
