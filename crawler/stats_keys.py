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
# Before a lecture that an event's listing no longer names may be withdrawn, its own resource is asked
# (an event that lists nothing: the event's): how many were asked, and what they said (gone: 404/410;
# live: still served under the event, which keeps the event back; moved: served under another event;
# unknown: no answer that says either). Unasked: a page budget left no request for them.
PRESENCE_ASKED = "underline/presence/asked"
PRESENCE_GONE = "underline/presence/gone"
PRESENCE_LIVE = "underline/presence/live"
PRESENCE_MOVED = "underline/presence/moved"
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
BACKOFF_HELD_REQUESTS = "backoff/held_requests"
BACKOFF_DELAY_RAISED = "backoff/delay_raised"
BACKOFF_DELAY_LOWERED = "backoff/delay_lowered"
BACKOFF_RETRY_AFTER_HONOURED = "backoff/retry_after_honoured"
BACKOFF_RETRY_AFTER_CAPPED = "backoff/retry_after_capped"
BACKOFF_RECOVERED = "backoff/recovered"
BACKOFF_RETRY_COUNT = "backoff/retry_count"
BACKOFF_RETRY_COUNT_PREFIX = "backoff/retry_count/"
GATED_COUNT = "gated/count"
OFFORIGIN_REDIRECTS = "offorigin/redirects"
ROBOTSTXT_FORBIDDEN = "robotstxt/forbidden"
ROBOTSTXT_CRAWL_DELAY_HOSTS = "robotstxt/crawl_delay/hosts"
ROBOTSTXT_CRAWL_DELAY_CAPPED = "robotstxt/crawl_delay/capped"
HTTPCACHE_CONDITIONAL = "httpcache/conditional"
HTTPCACHE_HIT_304 = "httpcache/hit_304"
HTTPCACHE_NOT_STORED_ENCODING = "httpcache/not_stored_encoding"
HTTPCACHE_BROKEN_ENTRIES = "httpcache/broken_entries"
HTTPCACHE_WRITE_ERRORS = "httpcache/write_errors"
HTTPCACHE_PURGED_ENTRIES = "httpcache/purged_entries"
HTTPCACHE_PURGED_BYTES = "httpcache/purged_bytes"
HTTPCACHE_ENTRIES = "httpcache/entries"
HTTPCACHE_BYTES = "httpcache/bytes"
WORKERS_PROCESSES = "workers/processes"
WORKERS_JOBS = "workers/jobs"
WORKERS_TIMED_OUT = "workers/timed_out"
WORKERS_DIED = "workers/died"
WORKERS_RETRIED = "workers/retried"
WORKERS_FAILED = "workers/failed"
WORKERS_REPLACED = "workers/replaced"
# Scrapy's own names, read by the progress line.
RESPONSES_RECEIVED = "response_received_count"
ITEMS_SCRAPED = "item_scraped_count"
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
FRONTIER_ROLE = "frontier/role"
# Leases of this worker's killed earlier run, put back in the queue when it joined.
FRONTIER_RECLAIMED = "frontier/reclaimed"
FRONTIER_FILTERED = "frontier/filtered"
FRONTIER_ENQUEUED = "frontier/enqueued"
FRONTIER_LEASED = "frontier/leased"
FRONTIER_ACKED = "frontier/acked"
# Leases of dead workers this worker put back in the queue, and its own put back when it closed.
FRONTIER_REQUEUED = "frontier/requeued"
FRONTIER_RETURNED = "frontier/returned"
FRONTIER_IDLE_WAITS = "frontier/idle_waits"
FRONTIER_DRAINED = "frontier/drained"
FRONTIER_RESEEDED = "frontier/reseeded"
FRONTIER_RESEED_ITEMS_SKIPPED = "frontier/reseed_items_skipped"
# A Redis call that failed (heartbeat, drain check, leaving, counting a staged lecture).
FRONTIER_ERRORS = "frontier/errors"
FRONTIER_SUMMARY = "frontier/summary"
# Fleet-wide host pacing: requests paced, those that waited and for how long (total and longest), failed
# Redis calls and the time spent waiting for Redis to answer again, requests not sent without a token.
PACE_REQUESTS = "frontier/pace/requests"
PACE_WAITS = "frontier/pace/waits"
PACE_WAIT_SECONDS = "frontier/pace/wait_seconds"
PACE_MAX_WAIT_SECONDS = "frontier/pace/max_wait_seconds"
PACE_ERRORS = "frontier/pace/errors"
PACE_RETRY_SECONDS = "frontier/pace/retry_seconds"
PACE_GAVE_UP = "frontier/pace/gave_up"

# The spider's own counters, named once here.
LISTING_PROBLEMS = "underline/listing_problems"
LISTING_OTHER_EVENT = "underline/listing_other_event"
LISTING_REPEATED = "underline/listing_repeated"
RESUME_SKIPPED = "underline/resume_skipped"
LISTING_PAST_TOTAL_PAGES = "underline/listing_past_total_pages"
FOREIGN_LINKS = "underline/foreign_links"
TRANSCRIPTS_UNREADABLE = "underline/transcripts_unreadable"
TRANSCRIPTS_FAILED = "underline/transcripts_failed"
# Subtitle files: asked, parsed into a transcript, unchanged since the last stage (304), gone (404/410),
# unreadable as subtitles, cues skipped, addresses and numbers redacted, not asked (off the allowed hosts,
# or the page budget spent), and per problem (too_large, not_utf8, failed, off_host, ...).
SUBTITLES_ASKED = "underline/subtitles/asked"
SUBTITLES_PARSED = "underline/subtitles/parsed"
SUBTITLES_UNCHANGED = "underline/subtitles/unchanged"
SUBTITLES_NOT_FOUND = "underline/subtitles/not_found"
SUBTITLES_UNPARSABLE = "underline/subtitles/unparsable"
SUBTITLES_FAILED = "underline/subtitles/failed"
SUBTITLES_CUES_SKIPPED = "underline/subtitles/cues_skipped"
SUBTITLES_REDACTED = "underline/subtitles/redacted"
SUBTITLES_OFF_HOST = "underline/subtitles/off_host"
SUBTITLES_WAITING = "underline/subtitles/waiting"
SUBTITLES_CARRIED = "underline/subtitles/carried"
# Tracks a lecture's track list named beyond UNDERLINE_MAX_TRACKS_PER_LECTURE: neither asked nor published.
SUBTITLES_OVER_LIMIT = "underline/subtitles/over_limit"
# Tracks whose answer was no evidence (an HTML page, robots, off the hosts, unreadable, no answer): the
# text read before is kept.
SUBTITLES_KEPT_UNREADABLE = "underline/subtitles/kept_unreadable"
# Downloads of subtitle files stopped at UNDERLINE_SUBTITLE_MAX_BYTES (never held whole in memory).
SUBTITLES_CUT_SHORT = "underline/subtitles/cut_short"
SUBTITLES_PROBLEM_PREFIX = "underline/subtitles/problem/"
STAGE_TRANSCRIPTS = "stage/transcripts"
# Documents (slide decks, posters): asked, read into pages, unchanged since the last stage (304), gone
# (404/410), kept because the answer was no evidence, carried with an unchanged lecture, left for the next
# night (the byte budget spent), bytes downloaded, addresses and numbers redacted, and per problem.
SLIDES_ASKED = "underline/slides/asked"
SLIDES_READ = "underline/slides/read"
SLIDES_UNCHANGED = "underline/slides/unchanged"
SLIDES_NOT_FOUND = "underline/slides/not_found"
SLIDES_KEPT_UNREADABLE = "underline/slides/kept_unreadable"
SLIDES_CARRIED = "underline/slides/carried"
SLIDES_WAITING = "underline/slides/waiting"
SLIDES_BYTES = "underline/slides/bytes"
# The bytes the byte budget counted (answers of document requests, 304s and errors included).
SLIDES_BUDGET_SPENT = "underline/slides/budget_spent"
SLIDES_REDACTED = "underline/slides/redacted"
SLIDES_PROBLEM_PREFIX = "underline/slides/problem/"
STAGE_SLIDES = "stage/slides"
REDIRECT_LOOP = "underline/redirect_loop"
# Per field: filled from the API listing where the page had none; the page and the listing disagreed.
FILLED_FROM_API_PREFIX = "underline/filled_from_api/"
API_MISMATCH_PREFIX = "underline/api_mismatch/"

# A host that failed BACKOFF_HOST_MAX_FAILURES times in a row: hosts deferred to the next crawl, and the
# requests not sent (or not retried) because of it, in total and per host (scheme, host and port).
BACKOFF_HOSTS_DEFERRED = "backoff/hosts_deferred"
BACKOFF_DEFERRED = "backoff/deferred"
BACKOFF_DEFERRED_PREFIX = "backoff/deferred/"
# Requests the backoff held when the crawl began to close, handed back to the scheduler unsent.
BACKOFF_HANDED_BACK_AT_CLOSE = "backoff/handed_back_at_close"
