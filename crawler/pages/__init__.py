"""Pure parsing of Underline answers: JSON:API documents and lecture pages in, lecture fields out.

One module per source: :mod:`.api` (the lecture list, one lecture, transcripts, sessions),
:mod:`.profiles` (authors, read through an allow-list), :mod:`.next_data` (a page's ``__NEXT_DATA__``),
:mod:`.visible` (what the page shows, the fallback), :mod:`.links` (the lectures a page links to), and
:mod:`.lecture`, the page object that decides field by field which source to use. Every attribute name
read is declared in :mod:`.attributes`. No module here touches the network or Scrapy; personal data is
stripped from what is stored by :mod:`crawler.privacy.stored`.
"""

from crawler.pages.api import (
    ListingAnswer,
    SessionFields,
    lecture_resources,
    parse_lecture_document,
    parse_lecture_list,
    parse_transcripts,
    read_listing,
)
from crawler.pages.attributes import LECTURE_ATTRIBUTES, UnknownAttribute, unknown_attributes
from crawler.pages.fields import (
    DocumentError,
    LectureItem,
    LectureListPage,
    LecturePage,
    PageParseError,
)
from crawler.pages.lecture import field_sources, parse_lecture_page
from crawler.pages.links import MAX_LECTURE_LINKS, MAX_LINK_LENGTH
from crawler.pages.profiles import INVALID_ORCID, normalize_orcid

__all__ = [
    "INVALID_ORCID",
    "LECTURE_ATTRIBUTES",
    "MAX_LECTURE_LINKS",
    "MAX_LINK_LENGTH",
    "DocumentError",
    "LectureItem",
    "LectureListPage",
    "LecturePage",
    "ListingAnswer",
    "PageParseError",
    "SessionFields",
    "UnknownAttribute",
    "field_sources",
    "lecture_resources",
    "normalize_orcid",
    "parse_lecture_document",
    "parse_lecture_list",
    "parse_lecture_page",
    "parse_transcripts",
    "read_listing",
    "unknown_attributes",
]
