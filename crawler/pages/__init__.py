"""Pure parsing of Underline answers: JSON:API documents and lecture pages in, lecture fields out.

One module per source: :mod:`.api` (the lecture list, one lecture, transcripts, sessions),
:mod:`.profiles` (authors, read through an allow-list), :mod:`.next_data` (a page's ``__NEXT_DATA__``),
:mod:`.visible` (what the page shows, the fallback), :mod:`.links` (the lectures a page links to), and
:mod:`.lecture`, the page object that decides field by field which source to use. Every attribute name
read is declared in :mod:`.attributes`. No module here touches the network or Scrapy; personal data is
stripped from what is stored by :mod:`crawler.privacy.stored`.
"""

from crawler.pages.api import (
    LECTURE_TYPE,
    MAX_TOTAL_PAGES,
    ListingAnswer,
    SessionFields,
    lecture_fields,
    lecture_resources,
    parse_lecture_document,
    parse_lecture_list,
    parse_transcripts,
    read_listing,
)
from crawler.pages.attributes import LECTURE_ATTRIBUTES, UnknownAttribute, unknown_attributes
from crawler.pages.fields import (
    Author,
    DocumentError,
    Extraction,
    FieldSource,
    LectureItem,
    LectureListPage,
    LecturePage,
    PageParseError,
)
from crawler.pages.lecture import UnderlineLecturePage, field_sources, parse_lecture_page
from crawler.pages.links import MAX_LECTURE_LINKS, MAX_LINK_LENGTH
from crawler.pages.next_data import MAX_JSON_BYTES
from crawler.pages.profiles import INVALID_ORCID, normalize_orcid
from crawler.pages.visible import PREMIUM_LABEL

__all__ = [
    "INVALID_ORCID",
    "LECTURE_ATTRIBUTES",
    "LECTURE_TYPE",
    "MAX_JSON_BYTES",
    "MAX_LECTURE_LINKS",
    "MAX_LINK_LENGTH",
    "MAX_TOTAL_PAGES",
    "PREMIUM_LABEL",
    "Author",
    "DocumentError",
    "Extraction",
    "FieldSource",
    "LectureItem",
    "LectureListPage",
    "LecturePage",
    "ListingAnswer",
    "PageParseError",
    "SessionFields",
    "UnderlineLecturePage",
    "UnknownAttribute",
    "field_sources",
    "lecture_fields",
    "lecture_resources",
    "normalize_orcid",
    "parse_lecture_document",
    "parse_lecture_list",
    "parse_lecture_page",
    "parse_transcripts",
    "read_listing",
    "unknown_attributes",
]
