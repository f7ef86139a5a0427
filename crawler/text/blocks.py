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
# The control characters of the two as UTF-8 bytes (each is one byte, and no other character's UTF-8
# holds a byte below 0x20): nearly every page has none, and deleting them from the page's UTF-8 (which
# libxml2 reads anyway) tells so in a fraction of what a regular expression's scan of the text costs.
_UNSAFE_BYTES = bytes([*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20)])
# A text without markup or text: stops at the first character of any other page.
_BLANK = re.compile(r"[\s\ufeff]*")
# ``huge_tree`` lifts libxml2's nesting limit from 256 to 2048 levels: markup nested deeper than 256
# would otherwise cut the page (and its __NEXT_DATA__ at the end) short. Entities are never expanded by
# the HTML parser, so the option opens no entity-expansion attack.
_PARSER = lxml.html.HTMLParser(encoding="utf-8", remove_comments=False, huge_tree=True)


def _html_class_lookup() -> lxml.etree.ElementNamespaceClassLookup:
    """The classes of ``lxml.html``'s own lookup (``HtmlElement``, the form elements' classes, and
    ``lxml.html``'s comment, processing instruction and entity classes), looked up by lxml itself: the
    parser's default lookup calls back into Python for every element a walk touches. The HTML parser
    gives every element a lower-case name, the one ``lxml.html``'s lookup reads."""
    lookup = lxml.etree.ElementNamespaceClassLookup(
        lxml.etree.ElementDefaultClassLookup(
            element=lxml.html.HtmlElement,
            comment=lxml.html.HtmlComment,
            pi=lxml.html.HtmlProcessingInstruction,
            entity=lxml.html.HtmlEntity,
        )
    )
    names = lookup.get_namespace(None)
    for name, cls in lxml.html.HtmlElementClassLookup._default_element_classes.items():
        names[name] = cls
    return lookup


_PARSER.set_element_class_lookup(_html_class_lookup())


@dataclass
class ParsedPage:
    """A page decoded and parsed: its root (None when it has no markup or text), its text, and what
    could not be read as it was sent."""

    root: lxml.html.HtmlElement | None
    text: str
    problems: list[str] = field(default_factory=list)


def _decoded(data: str | bytes, encoding: str | None) -> tuple[str, list[str], bytes | None]:
    """Page text from bytes, a problem when bytes had to be replaced, and ``data`` itself when it is
    exactly the text's UTF-8 (else None).

    A byte order mark wins, then ``encoding`` (the Content-Type header's charset; an unknown one is
    ignored), then a ``<meta charset>``, then UTF-8. Undecodable bytes become U+FFFD. Text passes
    through.
    """
    if isinstance(data, str):
        return data, [], None
    content_type = f"text/html; charset={encoding}" if encoding else None
    try:
        used, text = html_to_unicode(content_type, data)
    except LookupError:
        used, text = html_to_unicode(None, data)
    try:
        used = codecs.lookup(used).name
        # UTF-8 decoding replaces every undecodable byte with U+FFFD: without one, all were decodable,
        # and the bytes are the text's UTF-8 (unless a byte order mark, not part of the text, leads).
        if used == "utf-8" and "\ufffd" not in text:
            return text, [], None if data.startswith(codecs.BOM_UTF8) else data
        data.decode(used)
    except (UnicodeDecodeError, LookupError):
        return text, [f"the page is not valid {used}: undecodable bytes shown as U+FFFD"], None
    return text, [], None


def parseable_utf8(text: str, utf8: bytes | None = None) -> tuple[str, bytes]:
    """``text`` without the characters libxml2 cannot take (whitespace ones become spaces), and it as
    UTF-8; ``utf8`` is the text's UTF-8 when the caller has it already."""
    # A page without any (nearly every one) is told apart by its UTF-8 alone: lone surrogates make the
    # encoding fail, and the control characters and non-characters are searched in the bytes.
    markup = utf8
    if markup is None:
        try:
            markup = text.encode("utf-8")
        except UnicodeEncodeError:
            markup = b""
    if (
        markup
        and "\ufffe" not in text
        and "\uffff" not in text
        and len(markup.translate(None, _UNSAFE_BYTES)) == len(markup)
    ):
        return text, markup
    clean = _UNPARSEABLE.sub("", _CONTROL_SPACE.sub(" ", text))
    return clean, clean.encode("utf-8")


def parse_page(data: str | bytes, encoding: str | None = None) -> ParsedPage:
    """Decode and parse a page; never raises."""
    text, problems, utf8 = _decoded(data, encoding)
    clean, markup = parseable_utf8(text, utf8)
    if _BLANK.fullmatch(clean) is not None:
        return ParsedPage(None, text, problems)
    try:
        root = lxml.html.document_fromstring(markup, parser=_PARSER)
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
    # The walk only gathers the pieces of text, with a marker where a block boundary falls; the blocks
    # are cut from their one joined text after it (most boundaries close no text: indentation between
    # tags).
    pieces: list[str] = []
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
                pieces.append(_BOUNDARY)
                walker.skip_subtree()
                skipped = element
                continue
            if tag in BLOCK_TAGS:
                pieces.append(_BOUNDARY)
            text = element.text
            if text:
                pieces.append(text)
            continue
        if event == "end":
            if element is skipped:
                skipped = None
            elif element.tag in BLOCK_TAGS:
                pieces.append(_BOUNDARY)
        # The end of an element, a comment or a processing instruction: its tail is still page text.
        tail = element.tail
        if tail:
            pieces.append(tail)
    return split_blocks("".join(pieces))


# The block boundary in the text a walk gathers. No text of a tree holds it: libxml2 keeps text as
# C strings, which end at the first NUL, and lxml refuses strings with one.
_BOUNDARY = "\x00"


def split_blocks(text: str) -> list[str]:
    """The blocks of a text whose block boundaries are NULs, each whitespace-collapsed, empty ones
    dropped."""
    blocks: list[str] = []
    for part in text.split(_BOUNDARY):
        block = part.strip()
        # Most of a page's text is paragraphs with nothing to collapse inside: a printable text holds
        # no whitespace but the space (every other whitespace character is unprintable), so a stripped
        # one without two spaces in a row is its own collapsed form.
        if block and not (block.isprintable() and "  " not in block):
            block = " ".join(block.split())
        if block:
            blocks.append(block)
    return blocks
