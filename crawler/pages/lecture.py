"""A lecture page as a page object: one method per field, each saying where that field comes from.

The rule is the same for every field: the page's ``__NEXT_DATA__`` JSON first (the documents the page
was rendered from); only when that JSON holds no document of this lecture does the field come from
the visible page (meta tags, ``<title>``, ``<h1>``, the premium label), and the page then says so in
``extraction``. Fields the visible page does not show (keywords, session, dates, authors, media) are
then gaps for the API listing to fill. Each method also records its source, so a site check can tell,
field by field, where a value was found.
"""

from __future__ import annotations

from typing import Any

from crawler.pages import links, next_data, visible
from crawler.pages.fields import (
    ITEM_FIELD_NAMES,
    AttributeValue,
    Extraction,
    FieldSource,
    LectureItem,
    LecturePage,
    PageParseError,
)
from crawler.pages.next_data import MAX_JSON_BYTES
from crawler.pages.values import shown, slug
from crawler.schema import ATTRIBUTE_FIELDS, Field
from crawler.text.blocks import parse_page, visible_blocks

# What a field holds when its source gave no value.
NO_VALUE: tuple[Any, ...] = (None, "", [])
# The fields the page's JSON alone gives that have no method of their own (see :meth:`_json_only`).
_JSON_ONLY = ("presentation_type", "event_id", "event_name", "session_id", "session_name", "package")


class UnderlineLecturePage:
    """One fetched lecture page, read field by field.

    ``url`` is the page's final URL (after redirects); ``base_url`` resolves relative paper and media
    URLs of the page JSON (the page URL when not given).
    """

    def __init__(
        self,
        html: str | bytes,
        url: str,
        *,
        encoding: str | None = None,
        max_json_bytes: int = MAX_JSON_BYTES,
        base_url: str | None = None,
    ) -> None:
        self.url = url
        self.sources: dict[str, FieldSource] = {}
        parsed = parse_page(html, encoding)
        self.root = parsed.root
        self.url_id = links.url_lecture_id(url)
        self.page_problems = list(parsed.problems)
        self.blocks: list[str] = []
        self.lecture_links: list[str] = []
        self.tree: Any = None
        self.documents: list[Any] = []
        self.json: LectureItem | None = None
        self.why_not_json: str | None = "the page is empty"
        if self.root is None:
            return
        self.blocks = visible_blocks(self.root)
        if visible.cut_short(parsed.text) and self.blocks:
            # The last block of a page that stops mid-document is a fragment, not text the page shows.
            self.page_problems.append("the page ends before </html>: cut short, its last block dropped")
            self.blocks = self.blocks[:-1]
        self.lecture_links = links.lecture_links(self.root, url, self.page_problems)
        self.tree, self.why_not_json = next_data.read_next_data(self.root, parsed.text, max_json_bytes)
        if self.tree is None:
            return
        self.documents, self.why_not_json = next_data.documents(self.tree)
        if self.why_not_json is None:
            wanted = (self.url_id, next_data.slug_lecture_id(self.tree))
            self.json = next_data.lecture_from_next_data(self.documents, wanted, base_url or url)
            if self.json is None:
                self.why_not_json = "__NEXT_DATA__ holds no document of this lecture"

    @property
    def extraction(self) -> Extraction:
        return "next_data" if self.json is not None else "visible_text"

    # -- bookkeeping -------------------------------------------------------------------------------

    def _found(self, name: str, value: Any, source: FieldSource) -> Any:
        self.sources[name] = "none" if value in NO_VALUE else source
        return value

    def _json_only(self, name: str, default: Any) -> Any:
        """A field the visible page does not show: the page JSON's value, else a gap."""
        if self.json is not None:
            return self._found(name, getattr(self.json, name), "next_data")
        return self._found(name, default, "none")

    # -- the fields --------------------------------------------------------------------------------

    def lecture_id(self) -> str | None:
        if self.json is not None:
            return self._found("lecture_id", self.json.lecture_id, "next_data")
        if self.root is not None:
            seen = (
                self.url_id
                or links.link_lecture_id(self.root, self.url, "canonical")
                or links.url_lecture_id(links.absolute(self.url, visible.meta_content(self.root, "og:url")))
            )
            if seen is not None:
                return self._found("lecture_id", seen, "visible_text")
            return self._found("lecture_id", next_data.slug_lecture_id(self.tree), "next_data")
        return self._found("lecture_id", self.url_id, "visible_text")

    def slug(self) -> str | None:
        if self.json is not None:
            return self._found("slug", self.json.slug, "next_data")
        ref = links.safe_lecture_ref(self.url)
        return self._found("slug", slug(ref[1], []) if ref else None, "visible_text")

    def title(self) -> str | None:
        if self.json is not None:
            return self._found("title", self.json.title, "next_data")
        return self._found(
            "title", visible.title(self.root) if self.root is not None else None, "visible_text"
        )

    def abstract(self) -> str | None:
        if self.json is not None:
            return self._found("abstract", self.json.abstract, "next_data")
        found = visible.abstract(self.root) if self.root is not None else None
        return self._found("abstract", found, "visible_text")

    def is_premium(self) -> tuple[bool, bool]:
        """Whether the lecture is premium, and whether anything said so: the JSON's ``package``, else
        the page's own label (without either, a gap rather than a "free")."""
        package = self.json.package if self.json is not None else None
        if self.json is not None and package is not None and package.strip():
            return self._found("is_premium", self.json.is_premium, "next_data"), True
        shown_label = visible.shows_premium_label(self.blocks)
        self.sources["is_premium"] = "visible_text" if shown_label else "none"
        return shown_label, shown_label

    def related_lecture_ids(self, lecture_id: str | None) -> list[str]:
        # Both ways from the page JSON: the visible page does not tell a related lecture's id.
        if self.json is not None:
            return self._found("related_lecture_ids", list(self.json.related_lecture_ids), "next_data")
        found = next_data.related_lecture_ids(self.documents, lecture_id)
        return self._found("related_lecture_ids", found, "next_data")

    # The visible page shows keywords without marking them, and no session, dates, DOI, authors or
    # media links a reader could tell apart from the related lectures': these come from the JSON only
    # (:meth:`_json_only`).

    def attribute(self, f: Field) -> AttributeValue:
        """A plain attribute field of the schema: the title and abstract by their own methods (the
        visible page shows them), every other one from the page's JSON alone."""
        if f.name in ("title", "abstract"):
            return self.title() if f.name == "title" else self.abstract()
        value = self._json_only(f.name, [] if f.kind == "string_list" else None)
        return list(value) if isinstance(value, list) else value

    # -- the whole page ----------------------------------------------------------------------------

    def fields(self, lecture_id: str) -> LectureItem:
        """Every field, each by its own method (the plain attribute fields by :meth:`attribute`, those of
        ``_JSON_ONLY`` by :meth:`_json_only`)."""
        is_premium, premium_known = self.is_premium()
        fields = LectureItem(
            lecture_id=lecture_id,
            slug=self.slug(),
            **{name: self._json_only(name, None) for name in _JSON_ONLY},
            is_premium=is_premium,
            premium_known=premium_known,
            related_lecture_ids=self.related_lecture_ids(lecture_id),
            authors=list(self._json_only("authors", [])),
            problems=list(self.json.problems) if self.json is not None else [],
        )
        for f in ATTRIBUTE_FIELDS:
            setattr(fields, f.name, self.attribute(f))
        return fields

    def to_page(self) -> LecturePage:
        """What the page holds; raises :class:`PageParseError` when it has neither a lecture id nor a
        title."""
        lecture_id = self.lecture_id()
        if self.root is None:
            if lecture_id is None:
                raise PageParseError(f"empty page and no lecture id in {shown(self.url)!r}")
            fields = LectureItem(lecture_id=lecture_id)
            problems = ["the page is empty", *self.page_problems]
            return LecturePage(fields, [], [], "visible_text", problems, self._sources())
        if self.json is not None:
            fields = self.fields(self.json.lecture_id)
            problems = [*fields.problems, *visible.cross_check(fields, self.blocks), *self.page_problems]
            return LecturePage(
                fields, self.blocks, self.lecture_links, "next_data", problems, self._sources()
            )
        problems = [self.why_not_json or "__NEXT_DATA__ holds no document of this lecture"]
        title = self.title()
        if lecture_id is None and title is None:
            raise PageParseError(f"no lecture id and no title in the page at {self.url[:200]!r}")
        if lecture_id is None:
            problems.append(f"no lecture id for the page titled {shown(title)!r}")
        return LecturePage(
            self.fields(lecture_id) if lecture_id is not None else None,
            self.blocks,
            self.lecture_links,
            "visible_text",
            [*problems, *self.page_problems],
            self._sources() if lecture_id is not None else {},
        )

    def _sources(self) -> dict[str, FieldSource]:
        return {name: self.sources.get(name, "none") for name in ITEM_FIELD_NAMES}


def parse_lecture_page(
    html: str | bytes,
    url: str,
    *,
    encoding: str | None = None,
    max_json_bytes: int = MAX_JSON_BYTES,
    base_url: str | None = None,
) -> LecturePage:
    """Read a lecture page fetched from ``url`` (its final URL, after redirects).

    The lecture is the ``thin_lectures`` resource of ``__NEXT_DATA__`` whose id is the one in
    ``url`` (or else in the page's ``lectureSlug``); its related lectures are the first list of
    lectures there. Without usable JSON the fields come from the visible page (``extraction`` is
    ``"visible_text"`` and ``problems`` says why). Raises :class:`PageParseError`, and nothing
    else, when the page has neither a lecture id nor a title.
    """
    page = UnderlineLecturePage(
        html, url, encoding=encoding, max_json_bytes=max_json_bytes, base_url=base_url
    )
    return page.to_page()


def field_sources(page: LecturePage, listed: LectureItem | None = None) -> dict[str, FieldSource]:
    """For each item field, where the crawler takes its value from: ``next_data`` or ``visible_text``
    (the page), ``api`` (the listing's record, when given) or ``none``.

    The precedence is the crawler's: a page read from its JSON leads and the listing fills its gaps;
    a page read from its visible text only fills the listing's gaps.
    """
    from_listing = listed.parsed_record() if listed is not None else None
    sources: dict[str, FieldSource] = {}
    for name in ITEM_FIELD_NAMES:
        on_page = page.sources.get(name, "none")
        in_listing = getattr(from_listing, name, None) not in NO_VALUE
        if in_listing and (page.extraction == "visible_text" or on_page == "none"):
            sources[name] = "api"
        else:
            sources[name] = on_page
    return sources
