"""What sandboxed code may touch: builtins, guards, and curated stand-ins for the allowed modules.

Reviewed in one place. Everything here runs inside a sandbox worker process; the guards are the
hooks RestrictedPython's compiled code calls (``_getattr_``, ``_write_`` ...) plus the size guards
:mod:`flowdeck.sandbox.compiler` adds for ``*``, ``**`` and ``<<``.

Modules are never handed over: through plain attributes a module leads back to the host
(``json.codecs``, ``re.enum``, ``datetime.sys``, ``statistics.sys``). User code gets a frozen
:class:`ModuleView` holding only listed functions, types and constants. Submodules are refused, on
purpose: ``collections.abc`` (its ABCs' ``register`` would mutate process-wide state) and
``os.path`` (``os`` is not allowed at all).
"""

from __future__ import annotations

import collections
import datetime
import decimal
import itertools
import json
import math
import operator
import random
import re
import statistics
import types
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NoReturn

from RestrictedPython.Guards import guarded_iter_unpack_sequence, guarded_unpack_sequence, safe_builtins
from RestrictedPython.transformer import INSPECT_ATTRIBUTES
from RestrictedPython.Utilities import utility_builtins

from flowdeck.sandbox.node_context import NodeContext

__all__ = (
    "ALLOWED_MODULES",
    "BLOCKED_ATTRIBUTES",
    "MAX_INT_BITS",
    "MAX_SEQUENCE_ITEMS",
    "Importer",
    "ModuleView",
    "PolicyViolationError",
    "PrintCollector",
    "SandboxLimitError",
    "guarded_getattr",
    "guarded_inplacevar",
    "guarded_lshift",
    "guarded_mul",
    "guarded_pow",
    "guarded_write",
    "make_globals",
)

MAX_SEQUENCE_ITEMS: Final = 1 << 25
MAX_INT_BITS: Final = 1_000_000


class PolicyViolationError(Exception):
    """User code asked for something the sandbox refuses (never retried)."""


class SandboxLimitError(Exception):
    """User code asked for a result too large to build (reported as a memory error)."""


# Frame, code and traceback attributes lead to the host's globals; RestrictedPython refuses most at
# compile time, and the runtime guard refuses them again for computed access paths.
BLOCKED_ATTRIBUTES: Final[frozenset[str]] = INSPECT_ATTRIBUTES | {
    "gi_frame", "gi_code", "gi_yieldfrom", "cr_frame", "cr_code", "cr_await", "cr_origin",
    "ag_frame", "ag_code", "ag_await", "f_back", "f_globals", "f_locals", "f_builtins", "f_code",
    "f_trace", "tb_frame", "tb_next", "co_code", "mro",
}  # fmt: skip


def guarded_getattr(obj: object, name: str) -> Any:
    """``_getattr_``: every ``a.b`` in user code."""
    if type(name) is not str:
        raise TypeError("attribute name must be a string")
    if name.startswith("_"):
        raise PolicyViolationError(f'access to "{name}" is not allowed: names starting with "_" are private')
    if name in BLOCKED_ATTRIBUTES:
        raise PolicyViolationError(f'access to "{name}" is not allowed in the sandbox')
    if name == "obj" and isinstance(obj, BaseException):
        # AttributeError.obj is whatever object a lookup failed on, possibly deep inside host code.
        raise PolicyViolationError("access to an exception's .obj is not allowed in the sandbox")
    if name in ("format", "format_map") and (isinstance(obj, str) or (isinstance(obj, type) and issubclass(obj, str))):
        raise PolicyViolationError(f"str.{name}() is not allowed in the sandbox; use an f-string")
    return getattr(obj, name)


def guarded_getitem(obj: Any, key: Any) -> Any:
    """``_getitem_``: every ``a[b]``."""
    return obj[key]


# Item and attribute writes are allowed on the user's own containers; immutable values go through
# so Python raises its usual TypeError. Anything else (module views, functions, host objects) is refused.
_WRITABLE: Final[frozenset[type]] = frozenset({
    dict, list, set, collections.OrderedDict, collections.defaultdict, collections.Counter, collections.deque,
    decimal.Context,
    str, bytes, int, float, complex, bool, tuple, frozenset, type(None), range,
    NodeContext,
})  # fmt: skip


def guarded_write(obj: Any) -> Any:
    """``_write_``: the target of ``a.b = ...``, ``a[b] = ...`` and ``del``."""
    if type(obj) in _WRITABLE:
        return obj
    if isinstance(obj, ModuleView):
        raise PolicyViolationError("modules cannot be modified in the sandbox")
    raise PolicyViolationError(f"modifying {type(obj).__name__} objects is not allowed in the sandbox")


_SEQUENCES: Final = (str, bytes, bytearray, list, tuple, collections.deque)


def _approx(number: int) -> str:
    """``number`` for a message, without turning a gigantic int into decimal digits."""
    return f"{number:,}" if number.bit_length() <= 64 else f"about 2**{number.bit_length() - 1}"


def _check_items(length: int, times: object) -> None:
    if isinstance(times, int) and length * times > MAX_SEQUENCE_ITEMS:
        raise SandboxLimitError(
            f"repeating {length:,} items {_approx(times)} times exceeds the limit of {MAX_SEQUENCE_ITEMS:,} items"
        )


def guarded_mul(left: Any, right: Any) -> Any:
    """``a * b`` with a cap on the length of a repeated sequence."""
    if isinstance(left, _SEQUENCES):
        _check_items(len(left), right)
    elif isinstance(right, _SEQUENCES):
        _check_items(len(right), left)
    return left * right


def guarded_pow(base: Any, exponent: Any, modulo: Any = None) -> Any:
    """``a ** b`` and ``pow()`` with a cap on the size of an integer result."""
    if modulo is not None:
        return pow(base, exponent, modulo)
    if type(base) in (int, bool) and type(exponent) in (int, bool) and exponent > 0 and abs(base) > 1:
        bits = exponent * (abs(base).bit_length() - 1)
        if bits > MAX_INT_BITS:
            raise SandboxLimitError(
                f"{_approx(base)} ** {_approx(exponent)} would have at least {_approx(bits)} bits;"
                f" the limit is {MAX_INT_BITS:,}"
            )
    return pow(base, exponent)


def guarded_lshift(value: Any, shift: Any) -> Any:
    """``a << b`` with a cap on the size of an integer result."""
    if type(value) in (int, bool) and type(shift) in (int, bool) and value and shift > 0:
        bits = abs(value).bit_length() + shift
        if bits > MAX_INT_BITS:
            raise SandboxLimitError(
                f"<< {_approx(shift)} would need {_approx(bits)} bits; the limit is {MAX_INT_BITS:,}"
            )
    return value << shift


def _guarded_iadd(left: Any, right: Any) -> Any:
    if isinstance(left, _SEQUENCES) and isinstance(right, _SEQUENCES):
        total = len(left) + len(right)
        if total > MAX_SEQUENCE_ITEMS:
            raise SandboxLimitError(f"+= would build {total:,} items; the limit is {MAX_SEQUENCE_ITEMS:,}")
    left += right
    return left


def _guarded_imul(left: Any, right: Any) -> Any:
    if isinstance(left, _SEQUENCES):
        _check_items(len(left), right)
    elif isinstance(right, _SEQUENCES):
        _check_items(len(right), left)
    left *= right
    return left


_INPLACE: Final[Mapping[str, Callable[[Any, Any], Any]]] = {
    "+=": _guarded_iadd,
    "-=": operator.isub,
    "*=": _guarded_imul,
    "/=": operator.itruediv,
    "//=": operator.ifloordiv,
    "%=": operator.imod,
    "**=": guarded_pow,
    "<<=": guarded_lshift,
    ">>=": operator.irshift,
    "|=": operator.ior,
    "^=": operator.ixor,
    "&=": operator.iand,
    "@=": operator.imatmul,
}


def guarded_inplacevar(op: str, left: Any, right: Any) -> Any:
    """``_inplacevar_``: ``name op= value``."""
    return _INPLACE[op](left, right)


def _guarded_apply(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``_apply_``: calls written with ``*args`` or ``**kwargs``."""
    return func(*args, **kwargs)


class PrintCollector:
    """``print`` output of one call, capped at ``limit`` characters; ``printed`` reads it back."""

    def __init__(self, limit: int) -> None:
        self._parts: list[str] = []
        self._size = 0
        self._limit = limit
        self.truncated = False

    def factory(self, _getattr_: object = None) -> PrintCollector:
        """``_print_``: every function that prints shares this one collector."""
        return self

    def write(self, text: str) -> None:
        room = self._limit - self._size
        if len(text) > room:
            text = text[: max(room, 0)]
            self.truncated = True
        self._parts.append(text)
        self._size += len(text)

    def __call__(self) -> str:
        return "".join(self._parts)

    def _call_print(self, *objects: object, sep: str | None = " ", end: str | None = "\n", file: object = None,
                    flush: bool = False) -> None:  # fmt: skip
        if file is not None:
            raise PolicyViolationError("print(file=...) is not allowed in the sandbox")
        print(*objects, sep=sep, end=end, file=self)

    def text(self) -> str:
        suffix = f"\n[logs truncated at {self._limit:,} characters]" if self.truncated else ""
        return self() + suffix


class ModuleView(types.SimpleNamespace):
    """A frozen stand-in for an allowed module: only the listed names, never the module object.

    It deliberately has no ``__name__``: for ``from json import decoder`` CPython falls back to
    ``sys.modules[view.__name__ + ".decoder"]``, which would hand out the real submodule.
    """

    def __init__(self, label: str, names: Mapping[str, object]) -> None:
        for name, value in names.items():
            if isinstance(value, types.ModuleType) or name.startswith("_"):
                raise ValueError(f"{label}.{name} must not be exposed to sandboxed code")
        super().__init__(**names)
        object.__setattr__(self, "_label", label)

    def __getattr__(self, name: str) -> NoReturn:
        # Only called when the name is missing: say so in the module's terms, not ModuleView's.
        raise AttributeError(f"module {vars(self).get('_label')!r} has no attribute {name!r} in the sandbox")

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise PolicyViolationError("modules cannot be modified in the sandbox")

    def __delattr__(self, name: str) -> NoReturn:
        raise PolicyViolationError("modules cannot be modified in the sandbox")

    def __repr__(self) -> str:
        return f"<module {self._label!r} (sandboxed)>"


def _pick(module: object, names: Iterable[str]) -> dict[str, object]:
    return {name: getattr(module, name) for name in names if hasattr(module, name)}


_RNG: Final = random.Random()  # noqa: S311 - user-facing randomness, not cryptography
_RANDOM_NAMES: Final = (
    "betavariate", "choice", "choices", "expovariate", "gammavariate", "gauss", "getrandbits", "lognormvariate",
    "normalvariate", "paretovariate", "randbytes", "randint", "random", "randrange", "sample", "seed", "shuffle",
    "triangular", "uniform", "vonmisesvariate", "weibullvariate",
)  # fmt: skip
_RE_FLAGS: Final = ("A", "ASCII", "I", "IGNORECASE", "M", "MULTILINE", "S", "DOTALL", "X", "VERBOSE", "U", "UNICODE",
                    "NOFLAG")  # fmt: skip


def _build_views() -> dict[str, ModuleView]:
    return {
        "math": ModuleView("math", {n: getattr(math, n) for n in dir(math) if not n.startswith("_")}),
        "json": ModuleView("json", _pick(json, ("dumps", "loads", "JSONDecodeError"))),
        "re": ModuleView("re", {
            **_pick(re, ("compile", "search", "match", "fullmatch", "split", "findall", "finditer", "sub", "subn",
                         "escape", "error", "Pattern", "Match")),
            # Flags as plain ints: the RegexFlag enum class is a door we need not open.
            **{flag: int(getattr(re, flag)) for flag in _RE_FLAGS if hasattr(re, flag)},
        }),
        "datetime": ModuleView("datetime", _pick(datetime, ("date", "datetime", "time", "timedelta", "timezone",
                                                            "tzinfo", "MINYEAR", "MAXYEAR", "UTC"))),
        "statistics": ModuleView("statistics", _pick(statistics, (
            "NormalDist", "StatisticsError", "correlation", "covariance", "fmean", "geometric_mean", "harmonic_mean",
            "linear_regression", "mean", "median", "median_grouped", "median_high", "median_low", "mode",
            "multimode", "pstdev", "pvariance", "quantiles", "stdev", "variance"))),
        "itertools": ModuleView("itertools", _pick(itertools, (
            "accumulate", "batched", "chain", "combinations", "combinations_with_replacement", "compress", "count",
            "cycle", "dropwhile", "filterfalse", "groupby", "islice", "pairwise", "permutations", "product",
            "repeat", "starmap", "takewhile", "tee", "zip_longest"))),
        "collections": ModuleView("collections", _pick(collections, (
            "ChainMap", "Counter", "OrderedDict", "defaultdict", "deque", "namedtuple"))),
        # No DefaultContext/BasicContext/ExtendedContext: they are process-wide templates.
        "decimal": ModuleView("decimal", _pick(decimal, (
            "Decimal", "Context", "localcontext", "getcontext", "setcontext", "DecimalException", "Clamped",
            "DivisionByZero", "FloatOperation", "Inexact", "InvalidOperation", "Overflow", "Rounded", "Subnormal",
            "Underflow", "ROUND_05UP", "ROUND_CEILING", "ROUND_DOWN", "ROUND_FLOOR", "ROUND_HALF_DOWN",
            "ROUND_HALF_EVEN", "ROUND_HALF_UP", "ROUND_UP", "MAX_EMAX", "MAX_PREC", "MIN_EMIN", "MIN_ETINY"))),
        # Bound methods of one private generator, reseeded for every call that imports random.
        "random": ModuleView("random", {
            **_pick(_RNG, _RANDOM_NAMES),
            "Random": random.Random,
            "SystemRandom": random.SystemRandom,
        }),
    }  # fmt: skip


_VIEWS: Final = _build_views()
ALLOWED_MODULES: Final[frozenset[str]] = frozenset(_VIEWS)
_VIEW_NAMES: Final = {name: frozenset(vars(view)) - {"_label"} for name, view in _VIEWS.items()}


def _reset_module_state(name: str) -> None:
    """Undo what an earlier call may have changed in a module's process-wide state."""
    if name == "random":
        _RNG.seed()
    elif name == "decimal":
        decimal.setcontext(decimal.Context())


class Importer:
    """``__import__`` for one call: allowed modules only, as views, with their state reset once per call."""

    def __init__(self) -> None:
        self._imported: set[str] = set()

    def __call__(self, name: str, globals: object = None, locals: object = None,  # noqa: A002
                 fromlist: Iterable[str] | None = (), level: int = 0) -> ModuleView:  # fmt: skip
        if level != 0:
            raise PolicyViolationError("relative imports are not allowed in the sandbox")
        view = _VIEWS.get(name)
        if view is None:
            allowed = ", ".join(sorted(ALLOWED_MODULES))
            raise PolicyViolationError(f"import of {name!r} is not allowed; allowed modules: {allowed}")
        for attr in fromlist or ():
            if attr not in _VIEW_NAMES[name]:
                raise PolicyViolationError(f"cannot import {attr!r} from {name}: not available in the sandbox")
        if name not in self._imported:
            self._imported.add(name)
            _reset_module_state(name)
        return view


def _refused(name: str, reason: str) -> Callable[..., NoReturn]:
    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise PolicyViolationError(f"{name}() is not available in the sandbox ({reason})")

    refuse.__name__ = refuse.__qualname__ = name
    return refuse


_REFUSED: Final = {
    "open": "no file access", "input": "no console access", "breakpoint": "no debugger", "help": "no console access",
    "exec": "no dynamic code", "eval": "no dynamic code", "compile": "no dynamic code",
    "globals": "no namespace access", "locals": "no namespace access", "vars": "no namespace access",
    "dir": "no introspection", "getattr": "no computed attribute access", "setattr": "no computed attribute access",
    "delattr": "no computed attribute access", "hasattr": "no computed attribute access",
    "type": "use isinstance()", "object": "no classes", "super": "no classes", "classmethod": "no classes",
    "staticmethod": "no classes", "property": "no classes", "memoryview": "no raw memory", "id": "no addresses",
    "exit": "return a value instead", "quit": "return a value instead", "format": "use an f-string",
}  # fmt: skip

_UTILITIES: Final = ("set", "frozenset", "same_type", "test", "reorder")  # not math/random/string: real modules


def _build_builtins() -> dict[str, object]:
    names: dict[str, object] = {
        name: value
        for name, value in safe_builtins.items()
        if name not in ("__build_class__", "_getattr_", "setattr", "delattr", "id")
    }
    names.update({name: utility_builtins[name] for name in _UTILITIES})
    names.update(
        dict=dict, list=list, tuple=tuple, set=set, frozenset=frozenset, str=str, int=int, float=float, bool=bool,
        sum=sum, min=min, max=max, len=len, abs=abs, round=round, divmod=divmod, pow=guarded_pow,
        enumerate=enumerate, zip=zip, range=range, sorted=sorted, reversed=reversed, map=map, filter=filter,
        iter=iter, next=next, any=any, all=all, isinstance=isinstance, issubclass=issubclass, callable=callable,
        repr=repr, ascii=ascii, bin=bin, hex=hex, oct=oct, chr=chr, ord=ord, hash=hash, slice=slice,
        complex=complex,
    )  # fmt: skip
    names.update({name: _refused(name, reason) for name, reason in _REFUSED.items()})
    return names


_BUILTINS: Final = _build_builtins()
_GUARDS: Final[Mapping[str, object]] = {
    "_getattr_": guarded_getattr,
    "_getitem_": guarded_getitem,
    "_getiter_": iter,
    "_iter_unpack_sequence_": guarded_iter_unpack_sequence,
    "_unpack_sequence_": guarded_unpack_sequence,
    "_write_": guarded_write,
    "_inplacevar_": guarded_inplacevar,
    "_apply_": _guarded_apply,
    "_mul_": guarded_mul,
    "_pow_": guarded_pow,
    "_lshift_": guarded_lshift,
}


def make_globals(printer: PrintCollector) -> dict[str, object]:
    """A fresh global namespace for one call; nothing in it outlives the call."""
    builtins = dict(_BUILTINS)
    builtins["__import__"] = Importer()
    return {"__builtins__": builtins, "__name__": "node_code", "_print_": printer.factory, **_GUARDS}
