"""The one schema of the dataset: every table's columns, declared once as a record class.

- :mod:`.columns`: how a column is declared (:func:`column`, :class:`Field`, the kinds read off types);
- :mod:`.lecture`: the ``lectures`` table's record, :class:`Lecture`, and what derives from it;
- :mod:`.transcript`: the ``transcripts`` table's record, :class:`Transcript`;
- :mod:`.slides`: the ``slides`` table's record, :class:`Slides` (a lecture's slide deck or poster);
- :mod:`.values`: the one JSON codec of every record, timestamps, and the one "has a value";
- :mod:`.arrow`: the Arrow and ``datasets`` forms; :mod:`.check`: the check of a record from outside.
"""

from crawler.schema.columns import (
    Field,
    Int32,
    Kind,
    column,
    fields_of,
)
from crawler.schema.lecture import (
    ATTRIBUTE_FIELDS,
    BOOKKEEPING_FIELDS,
    CONTENT_FIELDS,
    FIELD_NAMES,
    FIELDS,
    FIELDS_BY_NAME,
    LISTING_ONLY_EXTRACTION,
    ONE_LINE_FIELDS,
    OWN_URL_FIELDS,
    PAGE_FIELDS,
    PARSED_FIELDS,
    SORT_KEY,
    TEXT_BLOCK_FIELDS,
    VOLATILE_FIELDS,
    AnthologyMatch,
    Author,
    Lecture,
    Subtitle,
    content_sha256,
    is_listing_only,
    lecture_order,
    listing_only_extraction,
    to_json_record,
    volatile_digest,
)
from crawler.schema.slides import SLIDES_FIELDS, Slides, listed_documents, slides_order
from crawler.schema.transcript import (
    TRANSCRIPT_FIELDS,
    Segment,
    Transcript,
    transcript_order,
)
from crawler.schema.values import format_timestamp, has_value, parse_timestamp, record_to_json, record_values

__all__ = [
    "ATTRIBUTE_FIELDS",
    "BOOKKEEPING_FIELDS",
    "CONTENT_FIELDS",
    "FIELDS",
    "FIELDS_BY_NAME",
    "FIELD_NAMES",
    "LISTING_ONLY_EXTRACTION",
    "ONE_LINE_FIELDS",
    "OWN_URL_FIELDS",
    "PAGE_FIELDS",
    "PARSED_FIELDS",
    "SLIDES_FIELDS",
    "SORT_KEY",
    "TEXT_BLOCK_FIELDS",
    "TRANSCRIPT_FIELDS",
    "VOLATILE_FIELDS",
    "AnthologyMatch",
    "Author",
    "Field",
    "Int32",
    "Kind",
    "Lecture",
    "Segment",
    "Slides",
    "Subtitle",
    "Transcript",
    "column",
    "content_sha256",
    "fields_of",
    "format_timestamp",
    "has_value",
    "is_listing_only",
    "lecture_order",
    "listed_documents",
    "listing_only_extraction",
    "parse_timestamp",
    "record_to_json",
    "record_values",
    "slides_order",
    "to_json_record",
    "transcript_order",
    "volatile_digest",
]
