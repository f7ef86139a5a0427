"""Names of the crawl statistics that connect the crawl to the quality gate and the reports.

The spider, the pipelines and the middlewares write them; the gate and the run report read them. Both
sides import these names, so a renamed statistic cannot leave a check reading zero.
"""

from __future__ import annotations

LISTED = "underline/listed"
LISTING_PAGES = "underline/listing_pages"
LISTING_NOT_JSON = "underline/listing_not_json"
FETCH_FAILED = "underline/fetch_failed"
PAGE_UNPARSABLE = "underline/page_unparsable"
PAGE_WITHOUT_LECTURE = "underline/page_without_lecture"
EXTRACTION_PREFIX = "underline/extraction/"
EXTRACTION_NEXT_DATA = EXTRACTION_PREFIX + "next_data"
EXTRACTION_VISIBLE_TEXT = EXTRACTION_PREFIX + "visible_text"
STAGE_LECTURES = "stage/lectures"
STAGE_CARRIED = "stage/carried"
STAGE_INVALID = "stage/invalid"
# Staged lines the stage could not read back (torn, malformed, or a record the schema refuses).
STAGE_BAD_LINES = "stage/bad_lines"
BACKOFF_GAVE_UP = "backoff/max_reached"
LISTING_FAILED = "underline/listing_failed"
# The finish reason of a crawl whose listing could not be read whole: never published, resumed next time.
LISTING_INCOMPLETE_REASON = "listing_incomplete"
# A refresh: lecture pages fetched because new or changed, revalidated because old, or carried over
# unchanged from the last crawl without a request.
PAGES_FETCHED = "underline/pages/fetched"
PAGES_REVALIDATED = "underline/pages/revalidated"
PAGES_CARRIED = "underline/pages/carried"
# A crawl with a page budget (UNDERLINE_PAGE_BUDGET): the budget, and the lectures whose page request
# waits for a later crawl because the budget was spent, by why they need one (new, changed, stale).
PAGE_BUDGET = "underline/page_budget"
# How many lectures' pages the budget buys (a lecture costs two requests when subtitles are asked for).
PAGE_BUDGET_LECTURES = "underline/page_budget/lectures"
PAGES_WAITING_NEW = "underline/pages/waiting/new"
PAGES_WAITING_CHANGED = "underline/pages/waiting/changed"
PAGES_WAITING_STALE = "underline/pages/waiting/stale"
PAGES_WAITING = (PAGES_WAITING_NEW, PAGES_WAITING_CHANGED, PAGES_WAITING_STALE)
# A listed lecture whose page failed (or showed another lecture) keeps its last record, or the listing's.
PAGE_FAILED_KEPT = "underline/page_failed_kept"
PAGE_LECTURE_MISMATCH = "underline/page_lecture_mismatch"
LISTING_UNBOUNDED = "underline/listing_unbounded"
# The finish reason of a crawl whose listing would not end: never published.
LISTING_UNBOUNDED_REASON = "listing_unbounded"
LISTING_STATUS_PREFIX = "underline/listing_status/"
# A listing that does not agree with its own ``meta``: a page of it came back empty although ``meta`` counts
# more pages, or it ended with fewer pages or lectures than ``meta`` counts. It is incomplete.
LISTING_EMPTY_PAGE = "underline/listing_empty_page"
LISTING_SHORT = "underline/listing_short"
# The listing callback itself failed: the rest of that page and the pages after it are unread.
LISTING_CALLBACK_ERROR = "underline/listing_callback_error"
# A record of the last stage that cannot be read back: the lecture's page is fetched again.
PREVIOUS_DAMAGED = "underline/previous_damaged"
# Listed lectures whose authors' profiles the listing left out of ``included`` (per event too), and those
# of them that kept their last authors. The gate's ``authors`` coverage counts them as without authors.
AUTHORS_INCOMPLETE = "underline/authors_incomplete"
AUTHORS_INCOMPLETE_PREFIX = "underline/authors_incomplete/"
AUTHORS_KEPT = "underline/authors_kept"
LISTED_PREFIX = "underline/listed/"
ORCID_INVALID = "underline/orcid_invalid"
# Attributes of lecture resources the crawler does not map: a count per name, and one example value.
UNMAPPED_ATTRIBUTE = "underline/unmapped_attribute/"
UNMAPPED_EXAMPLE = "underline/unmapped_example/"
# Scrapy's own names.
RETRY_GAVE_UP = "retry/max_reached"
SPIDER_EXCEPTIONS = "spider_exceptions/count"
REQUESTS_SENT = "downloader/request_count"

# A resumed crawl reads its listing again from the first page: these counters are counted whole by every
# part, never added across a resume.
RECOUNTED_PREFIXES = (
    "underline/listing",
    "underline/listed",
    "underline/resume_skipped",
    PREVIOUS_DAMAGED,
    AUTHORS_INCOMPLETE,
    ORCID_INVALID,
    UNMAPPED_ATTRIBUTE,
    "stage/sessions",
    # The page budget and what it buys: set again by every part.
    PAGE_BUDGET,
)
# Counters of one lecture's outcome: staged with the lecture's line, so that the part of a crawl before a
# resume counts exactly the lectures it staged (a lecture it did not stage is done, and counted, again).
STAGED_PREFIXES = (
    "underline/pages/",
    EXTRACTION_PREFIX,
    FETCH_FAILED,
    PAGE_UNPARSABLE,
    PAGE_WITHOUT_LECTURE,
    PAGE_FAILED_KEPT,
    PAGE_LECTURE_MISMATCH,
    AUTHORS_KEPT,
    "underline/api_mismatch/",
    "underline/filled_from_api/",
    "underline/redirect_loop",
    STAGE_LECTURES,
    STAGE_CARRIED,
    STAGE_INVALID,
)

# A lecture the crawl meant to publish and could not: each counts against the gate's error rate.
ERRORS = (
    STAGE_BAD_LINES,
    FETCH_FAILED,
    PAGE_UNPARSABLE,
    PAGE_WITHOUT_LECTURE,
    LISTING_NOT_JSON,
    STAGE_INVALID,
    SPIDER_EXCEPTIONS,
)


def extraction_key(extraction: str) -> str:
    return EXTRACTION_PREFIX + extraction


# The spider's own counters, named once here.
LISTING_PROBLEMS = "underline/listing_problems"
LISTING_OTHER_EVENT = "underline/listing_other_event"
LISTING_REPEATED = "underline/listing_repeated"
RESUME_SKIPPED = "underline/resume_skipped"
LISTING_PAST_TOTAL_PAGES = "underline/listing_past_total_pages"
FOREIGN_LINKS = "underline/foreign_links"
TRANSCRIPTS_UNREADABLE = "underline/transcripts_unreadable"
TRANSCRIPTS_FAILED = "underline/transcripts_failed"
REDIRECT_LOOP = "underline/redirect_loop"
# Per field: filled from the API listing where the page had none; the page and the listing disagreed.
FILLED_FROM_API_PREFIX = "underline/filled_from_api/"
API_MISMATCH_PREFIX = "underline/api_mismatch/"
