"""Visible text of an HTML page as blocks: one block per run of text between block boundaries.

A block boundary is the start or end of a block-level element or a ``<br>``; inline elements
(``<a>``, ``<span>``, ``<em>`` ...) do not split text, so a link wrapping paragraphs yields the
paragraphs' blocks. The parser is lxml's HTML parser, which never rejects markup; what it had to give
up on (undecodable bytes, nesting deeper than libxml2 follows) is reported by :func:`parse_page`.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass, field

import lxml.etree
import lxml.html
from w3lib.encoding import html_to_unicode

BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "button", "caption", "center", "dd",
        "details", "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
        "form", "frameset", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hgroup", "hr", "html",
        "legend", "li", "main", "menu", "nav", "ol", "optgroup", "option", "p", "pre", "section",
        "select", "summary", "table", "tbody", "td", "tfoot", "th", "thead", "tr", "ul",
    }
)  # fmt: skip
# Text inside these is never rendered as page text.
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "iframe", "object"})

# Characters libxml2 cannot take (C0 controls but tab/LF/CR, lone surrogates, non-characters)
# would make lxml raise or stop: the whitespace ones become spaces, the rest carry no text.
_CONTROL_SPACE = re.compile("[\x0b\x0c\x1c-\x1f]")
_UNPARSEABLE = re.compile("[\x00-\x08\x0e-\x1b\ud800-\udfff\ufffe\uffff]")
# Either of the two: nearly every page has none, and one scan of its text then replaces two.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
# A text without markup or text: stops at the first character of any other page.
_BLANK = re.compile(r"[\s\ufeff]*")
# ``huge_tree`` lifts libxml2's nesting limit from 256 to 2048 levels: markup nested deeper than 256
# would otherwise cut the page (and its __NEXT_DATA__ at the end) short. Entities are never expanded by
# the HTML parser, so the option opens no entity-expansion attack.
_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=False, huge_tree=True)


@dataclass
class ParsedPage:
    """A page decoded and parsed: its root (None when it has no markup or text), its text, and what
    could not be read as it was sent."""

    root: lxml.html.HtmlElement | None
    text: str
    problems: list[str] = field(default_factory=list)


def decode_page(data: str | bytes, encoding: str | None = None) -> tuple[str, list[str]]:
    """Page text from bytes, and a problem when bytes had to be replaced.

    A byte order mark wins, then ``encoding`` (the Content-Type header's charset; an unknown one is
    ignored), then a ``<meta charset>``, then UTF-8. Undecodable bytes become U+FFFD. Text passes
    through.
    """
    if isinstance(data, str):
        return data, []
    content_type = f"text/html; charset={encoding}" if encoding else None
    try:
        used, text = html_to_unicode(content_type, data)
    except LookupError:
        used, text = html_to_unicode(None, data)
    try:
        used = codecs.lookup(used).name
        data.decode(used)
    except (UnicodeDecodeError, LookupError):
        return text, [f"the page is not valid {used}: undecodable bytes shown as U+FFFD"]
    return text, []


def decode_html(data: str | bytes, encoding: str | None = None) -> str:
    """Page text from bytes, as :func:`decode_page` decodes it."""
    return decode_page(data, encoding)[0]


def parse_page(data: str | bytes, encoding: str | None = None) -> ParsedPage:
    """Decode and parse a page; never raises."""
    text, problems = decode_page(data, encoding)
    clean = text if _UNSAFE.search(text) is None else _UNPARSEABLE.sub("", _CONTROL_SPACE.sub(" ", text))
    if _BLANK.fullmatch(clean) is not None:
        return ParsedPage(None, text, problems)
    try:
        root = lxml.html.document_fromstring(clean.encode("utf-8"), parser=_PARSER)
    except (lxml.etree.LxmlError, ValueError):
        return ParsedPage(None, text, [*problems, "the page could not be parsed as HTML"])
    if any(e.type_name == "ERR_RESOURCE_LIMIT" for e in _PARSER.error_log):
        problems.append("the markup nests too deeply: the page's text after that point is lost")
    return ParsedPage(root if isinstance(root, lxml.html.HtmlElement) else None, text, problems)


def parse_html(data: str | bytes, encoding: str | None = None) -> lxml.html.HtmlElement | None:
    """The document's root element, or None when there is no markup or text at all."""
    return parse_page(data, encoding).root


def visible_blocks(html: str | bytes | lxml.html.HtmlElement, encoding: str | None = None) -> list[str]:
    """Visible text blocks in page order, each whitespace-collapsed, empty ones dropped."""
    root = html if isinstance(html, lxml.html.HtmlElement) else parse_html(html, encoding)
    if root is None:
        return []
    blocks: list[str] = []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            block = " ".join("".join(pending).split())
            if block:
                blocks.append(block)
            pending.clear()

    # lxml walks the tree (no recursion here: nesting depth is the document's choice, not ours), and
    # each text and tail is read once: lxml builds a new string on every read.
    walker = lxml.etree.iterwalk(root, events=("start", "end", "comment", "pi"))
    skipped = None
    for event, element in walker:
        if event == "start":
            tag = element.tag
            if not isinstance(tag, str) or tag in SKIP_TAGS or element.get("hidden") is not None:
                # Its "end" comes next: only its tail is page text.
                walker.skip_subtree()
                skipped = element
                continue
            if tag == "br":
                flush()
                walker.skip_subtree()
                skipped = element
                continue
            if tag in BLOCK_TAGS:
                flush()
            text = element.text
            if text:
                pending.append(text)
            continue
        if event == "end":
            if element is skipped:
                skipped = None
            elif element.tag in BLOCK_TAGS:
                flush()
        # The end of an element, a comment or a processing instruction: its tail is still page text.
        tail = element.tail
        if tail:
            pending.append(tail)
    flush()
    return blocks
