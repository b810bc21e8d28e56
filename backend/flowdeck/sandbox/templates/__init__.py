"""Sandboxed Jinja2 templates and expressions (SPEC §3).

``render`` resolves ``{{ ... }}`` in config values: a string that is exactly one ``{{ expr }}`` keeps the
expression's native value, any other templated string renders to ``str``. ``evaluate`` runs a bare
expression (condition branches). The only variable is ``ctx``; on a mapping, ``ctx.a.items`` prefers
the *key* ``items`` over the dict method, so workflow data always wins over Python attributes.

Hardening, on top of Jinja2's ``ImmutableSandboxedEnvironment`` (no ``_`` attributes, no mutation):

* only ``{{ expressions }}`` (plus text, comments and raw blocks): ``{% statements %}`` are refused, so a
  template has no loops, variables, macros or recursion;
* every value a template *creates* is capped (``MAX_VALUE_SIZE`` characters or items each and
  ``MAX_TOTAL_SIZE`` in total per call) and checked *before* it is built where the size is known up
  front (``*``, ``**``, ``+``, ``%``, ``~``, padding and joining filters), rendered text is capped at
  ``MAX_OUTPUT_CHARS`` and sources at ``MAX_SOURCE_CHARS``;
* nothing that can grow is constant-folded at compile time (intercepted operators, filters, tests),
  so ``10 ** 10 ** 10`` or ``'x'|center(10**6)|list`` cannot hang or bloat the compiler;
* every filter, test, call and operator checks a deadline in CPU time (``TIME_LIMIT_SECONDS``);
* string methods that pad, join or re-format (``format``, ``center``, ``join`` ...) are refused;
* an undefined or refused value is an error, never a silently returned ``Undefined``.

Compiled templates are cached by source (LRU); plain ``ctx`` lookups skip Jinja entirely.

The package, by job: ``budget`` (limits, the per-call budget, errors), ``filters`` (safe filters),
``environment`` (the sandboxed Jinja2 environment), ``analysis`` (save-time parsing, problems and
references; runs nothing) and ``rendering`` (compiling and running). Import from here.
"""

from flowdeck.sandbox.templates.analysis import (
    expression_issues,
    nested_strings,
    referenced_input_fields,
    referenced_variables,
    template_issues,
)
from flowdeck.sandbox.templates.budget import (
    MAX_OUTPUT_CHARS,
    MAX_SOURCE_CHARS,
    MAX_TOTAL_SIZE,
    MAX_VALUE_SIZE,
    TemplateError,
)
from flowdeck.sandbox.templates.rendering import evaluate, render

__all__ = (
    "MAX_OUTPUT_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_TOTAL_SIZE",
    "MAX_VALUE_SIZE",
    "TemplateError",
    "evaluate",
    "expression_issues",
    "nested_strings",
    "referenced_input_fields",
    "referenced_variables",
    "render",
    "template_issues",
)
