"""Names of the crawl statistics that connect the crawl to the quality gate and the reports.

The spider, the pipelines and the middlewares write them; the gate and the run report read them. Both
sides import these names, so a renamed statistic cannot leave a check reading zero. A counter that only
the module writing it names is that module's string.
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
# Before a lecture that an event's listing no longer names may be withdrawn, its own resource is asked
# (an event that lists nothing: the event's): how many were asked, and what they said (gone: 404/410;
# live: still served under the event, which keeps the event back; moved: served under another event;
# unknown: no answer that says either). Unasked: a page budget left no request for them.
PRESENCE_ASKED = "underline/presence/asked"
PRESENCE_GONE = "underline/presence/gone"
PRESENCE_LIVE = "underline/presence/live"
PRESENCE_UNKNOWN = "underline/presence/unknown"
PRESENCE_UNASKED = "underline/presence/unasked"
# An event whose listing could not be read whole, or that left out a lecture still served: its rows stay
# as last published while the crawl's other events publish.
EVENT_KEPT_BACK_PREFIX = "underline/kept_back/"
# Listing requests given up on: each keeps its event back (reported as such), not a page lost.
LISTING_GAVE_UP = "underline/listing_gave_up"
# An event that lists nothing whose own resource says it is gone: its lectures are withdrawn.
EVENT_GONE_PREFIX = "underline/event_gone/"
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

# -- the pipelines', middlewares', HTTP cache's and extensions' own counters ------------------------------
NORMALIZE_ITEMS = "normalize/items"
NORMALIZE_FIELDS_CHANGED = "normalize/fields_changed"
PRIVACY_EMAILS_SCRUBBED = "privacy/emails_scrubbed"
PRIVACY_EMAILS_SCRUBBED_PAGE_BLOCKS = "privacy/emails_scrubbed_page_blocks"
PRIVACY_ITEMS_SCRUBBED = "privacy/items_scrubbed"
PRIVACY_SESSIONS_SCRUBBED = "privacy/sessions_scrubbed"
PRIVACY_FIELDS_PREFIX = "privacy/fields/"
PRIVACY_SESSION_FIELDS_PREFIX = "privacy/session_fields/"
BOILERPLATE_TEXT_FROM_FIELDS = "boilerplate/text_from_fields"
BOILERPLATE_MODEL_PAGES_LOADED = "boilerplate/model_pages_loaded"
BOILERPLATE_MODEL_PAGES = "boilerplate/model_pages"
BOILERPLATE_MODEL_HASHES = "boilerplate/model_hashes"
BOILERPLATE_GENERAL_NOT_READY = "boilerplate/general_not_ready"
BOILERPLATE_LAYER_GENERAL = "boilerplate/layer/general"
BOILERPLATE_LAYER_STRUCTURAL = "boilerplate/layer/structural"
BOILERPLATE_LATEX_CLEANED = "boilerplate/latex_cleaned"
BOILERPLATE_BLOCKS_KEPT = "boilerplate/blocks_kept"
BOILERPLATE_BLOCKS_REMOVED = "boilerplate/blocks_removed"
DEDUP_UNIQUE = "dedup/unique"
DEDUP_CHANGED_ON_REFETCH = "dedup/changed_on_refetch"
DEDUP_MERGED_URLS = "dedup/merged_urls"
DEDUP_DROPPED = "dedup/dropped"
DEDUP_SAME_TALK_SEEN = "dedup/same_talk_seen"
DEDUP_SIGNATURES = "dedup/signatures"
DEDUP_ALIAS = "dedup/alias"
DEDUP_ALIAS_DROPPED = "dedup/alias_dropped"
DEDUP_NEAR_DUPLICATE_CANDIDATES = "dedup/near_duplicate_candidates"
DEDUP_NEAR_DUPLICATE_GROUPS = "dedup/near_duplicate_groups"
DEDUP_NEAR_DUPLICATE_GROUPS_COUNT = "dedup/near_duplicate_groups_count"
STAGE_SESSIONS = "stage/sessions"
STAGE_ALIASES = "stage/aliases"
STAGE_PREVIOUS_MOVED = "stage/previous_moved"
STAGE_RESUMED = "stage/resumed"
STAGE_TORN_BYTES_DROPPED = "stage/torn_bytes_dropped"
ROBOTSTXT_FORBIDDEN = "robotstxt/forbidden"
HTTPCACHE_NOT_STORED_ENCODING = "httpcache/not_stored_encoding"
WORKERS_PROCESSES = "workers/processes"
WORKERS_JOBS = "workers/jobs"
# -- end of the pipelines', middlewares', HTTP cache's and extensions' counters -----------------------------

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

# A lecture the crawl meant to publish and could not counts against one of the gate's two shares. A
# lecture page asked for that failed (not answered, not readable, showing no lecture or another one): of
# the lecture pages the crawl asked for (fetched + revalidated).
PAGE_ERRORS = (FETCH_FAILED, PAGE_UNPARSABLE, PAGE_WITHOUT_LECTURE)
# A lecture lost on its way to the release (never staged, or staged and not read back): of those listed.
LOST_LECTURES = (STAGE_BAD_LINES, STAGE_INVALID, LISTING_NOT_JSON, SPIDER_EXCEPTIONS)

# -- the frontier (crawler/frontier/): a fleet worker's statistics ------------------------------------
# A Redis call that failed (heartbeat, drain check, leaving, counting a staged lecture).
FRONTIER_ERRORS = "frontier/errors"
# Fleet-wide host pacing: Redis calls that failed (the other ``frontier/pace/`` counters are pacing's own).
PACE_ERRORS = "frontier/pace/errors"

# The spider's own counters, named once here.
LISTING_OTHER_EVENT = "underline/listing_other_event"
TRANSCRIPTS_UNREADABLE = "underline/transcripts_unreadable"
# Subtitle files: asked, parsed into a transcript, unchanged since the last stage (304), gone (404/410),
# unreadable as subtitles, cues skipped, addresses and numbers redacted, not asked (off the allowed hosts,
# or the page budget spent), and per problem (too_large, not_utf8, failed, off_host, ...).
SUBTITLES_OFF_HOST = "underline/subtitles/off_host"
SUBTITLES_CARRIED = "underline/subtitles/carried"
SUBTITLES_PROBLEM_PREFIX = "underline/subtitles/problem/"
STAGE_TRANSCRIPTS = "stage/transcripts"
# Documents (slide decks, posters): asked, read into pages, unchanged since the last stage (304), gone
# (404/410), kept because the answer was no evidence, carried with an unchanged lecture, left for the next
# night (the byte budget spent), bytes downloaded, addresses and numbers redacted, and per problem.
SLIDES_ASKED = "underline/slides/asked"
SLIDES_READ = "underline/slides/read"
SLIDES_CARRIED = "underline/slides/carried"
SLIDES_BYTES = "underline/slides/bytes"
SLIDES_PROBLEM_PREFIX = "underline/slides/problem/"
STAGE_SLIDES = "stage/slides"
# Per field: filled from the API listing where the page had none; the page and the listing disagreed.
FILLED_FROM_API_PREFIX = "underline/filled_from_api/"
API_MISMATCH_PREFIX = "underline/api_mismatch/"

# Requests the backoff held when the crawl began to close, handed back to the scheduler unsent.
BACKOFF_HANDED_BACK_AT_CLOSE = "backoff/handed_back_at_close"
