"""Markdown -> safe HTML for text widgets: raw HTML is escaped, and only http(s), mailto and relative links stay."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

__all__ = ("render_markdown",)

_SAFE_SCHEMES: Final = frozenset({"http", "https", "mailto"})


def _safe_link(url: str) -> bool:
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return False
    return scheme == "" or scheme in _SAFE_SCHEMES


def _link_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    # An embed page lives in a frame: links open a new tab and tell the target nothing.
    tokens[idx].attrSet("target", "_blank")
    tokens[idx].attrSet("rel", "noopener noreferrer nofollow")
    return renderer.renderToken(tokens, idx, options, env)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.validateLink = _safe_link  # type: ignore[method-assign]
    md.add_render_rule("link_open", _link_open)
    return md


_MD: Final = _parser()


def render_markdown(text: str) -> str:
    html: Any = _MD.render(text)
    return str(html)
