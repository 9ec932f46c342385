"""Markdown documentation (a DAG's or a task's ``doc_md``, issue 25) as safe HTML.

Rendered with markdown-it-py (CommonMark) with raw HTML off, so a ``<script>`` in a
DAG's docs shows as text; its link check drops ``javascript:``, ``vbscript:`` and
``data:`` (other than images) links, and every link opens without a referrer.

>>> str(doc_html("Loads **orders**. <b>x</b>"))
'<p>Loads <strong>orders</strong>. &lt;b&gt;x&lt;/b&gt;</p>\\n'
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markupsafe import Markup

_MD = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
_MD.enable("table")
MAX_DOC_CHARS = 100_000  # a longer doc is cut here (a page is not a book)


def doc_html(text: str | None) -> Markup:
    """``text`` (Markdown) as HTML safe to put in a page; empty for None."""
    if not text:
        return Markup("")
    html = _MD.render(text[:MAX_DOC_CHARS])
    return Markup(html.replace("<a href=", '<a rel="noopener noreferrer nofollow" href='))
