"""Scrapy settings: polite by default. The CLI's ``-s KEY=VALUE`` and ``scrapy crawl -s`` override them."""

from __future__ import annotations

from crawler import __version__

BOT_NAME = "eventcrawl"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

# Where the project lives and whom a site owner can reach; the one place the crawler names itself.
CONTACT_URL = "https://github.com/eventcrawl/eventcrawl"
USER_AGENT = f"eventcrawl/{__version__} (+{CONTACT_URL})"

UNDERLINE_WEB_BASE = "https://underline.io"
UNDERLINE_API_BASE = "https://app.underline.io"
UNDERLINE_PAGE_SIZE = 100
# A crawl that resumes an unfinished stage skips the lectures already staged.
UNDERLINE_RESUME = True
# The nightly refresh: a lecture's page is fetched when the lecture is new or its listing changed; an
# unchanged one is carried over from the last finished crawl, unless its page is older than
# UNDERLINE_REVALIDATE_AFTER_DAYS, and then at most UNDERLINE_REVALIDATE_SHARE of a listing page's
# lectures a night (the oldest first). UNDERLINE_REFRESH = False fetches every page.
UNDERLINE_REFRESH = True
UNDERLINE_REVALIDATE_AFTER_DAYS = 30.0
UNDERLINE_REVALIDATE_SHARE = 0.02
# A listing that brings new lectures page after page is not believed past its own meta (plus one page)
# nor past this many pages of an event: the crawl stops as listing_unbounded.
UNDERLINE_MAX_LISTING_PAGES = 100
# Subtitles cost one request per fetched lecture (the transcripts endpoint) and one per subtitle file it
# lists (read into the ``transcripts`` table): off unless asked for.
UNDERLINE_SUBTITLES = False
# The hosts besides the site's own (web and API base, any port) a subtitle file is fetched from.
UNDERLINE_ASSET_HOSTS = ["assets.underline.io"]
# A subtitle file past this size (on the wire or decompressed) is not read: its row has no text.
UNDERLINE_SUBTITLE_MAX_BYTES = 2 * 1024 * 1024
# The subtitle tracks asked and published for one lecture at the most (a track list may name any number).
UNDERLINE_MAX_TRACKS_PER_LECTURE = 20
# Slide decks and posters cost one request per document a fetched lecture names (read into the ``slides``
# table): off unless asked for. A PDF past UNDERLINE_SLIDES_MAX_BYTES (on the wire or decompressed) is not
# read; the documents' bytes a night downloads stop at UNDERLINE_SLIDES_BYTE_BUDGET (0: no bound), the rest
# waits for the next night; a PDF's reader may take UNDERLINE_SLIDES_READER_MEMORY more bytes of memory.
UNDERLINE_SLIDES = False
UNDERLINE_SLIDES_MAX_BYTES = 64 * 1024 * 1024
UNDERLINE_SLIDES_BYTE_BUDGET = 2 * 1024 * 1024 * 1024
UNDERLINE_SLIDES_READER_MEMORY = 1024 * 1024 * 1024
# The most lecture-page requests (subtitle requests too) one crawl sends; 0: no limit. Every listing is
# read whole; then new lectures come first, changed ones next, stale ones (revalidation) last, and the
# rest waits for the next crawl (published from the listing, or as the last crawl staged it).
UNDERLINE_PAGE_BUDGET = 0
# How many events' listings a crawl alone reads at once (0: every event's at once). A listing page waiting
# to be read holds its body and, once read, what the last crawl staged of its lectures: more events at
# once would make the crawl's memory grow with the catalogue, not make it faster (one worker reads them).
UNDERLINE_LISTINGS_AT_ONCE = 4

# Politeness: one request at a time per host, about one a second, robots.txt obeyed.
ROBOTSTXT_OBEY = True
CONCURRENT_REQUESTS = 8
CONCURRENT_REQUESTS_PER_DOMAIN = 1
# Scrapy starts this many tasks for every response, whatever the callback yields; a lecture page yields
# one item and the item pipelines never wait, so Scrapy's default of 100 only costs (about 1 ms a page).
CONCURRENT_ITEMS = 8
DOWNLOAD_DELAY = 1.0
# A jittered delay can fall below the configured one; the floor must hold.
DOWNLOAD_DELAY_JITTER = 0
AUTOTHROTTLE_ENABLED = True
AUTOTHROTTLE_START_DELAY = 1.0
AUTOTHROTTLE_MAX_DELAY = 60.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 1.0
DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
REDIRECT_MAX_TIMES = 5

TELNETCONSOLE_ENABLED = False
REMOTE_CONTROL_ENABLED = False

DOWNLOADER_MIDDLEWARES = {
    # Scrapy's own lets concurrent first requests to a host skip the robots.txt check.
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.middlewares.robots_delay.SafeRobotsTxtMiddleware": 100,
    "crawler.middlewares.robots_delay.RobotsCrawlDelayMiddleware": 110,
    "scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
    "crawler.middlewares.backoff.BackoffMiddleware": 550,
    # Between RedirectMiddleware (600) and the cache (900): a login redirect is never followed, nor one
    # that leaves the site's origin (scheme, host and port).
    "crawler.middlewares.origin.OffOriginRedirectMiddleware": 640,
    # Before the robots check's own requests are counted: only document answers are.
    "crawler.middlewares.byte_budget.DocumentByteBudget": 120,
    "crawler.middlewares.gated.GatedDownloadMiddleware": 650,
    "scrapy.downloadermiddlewares.httpcache.HttpCacheMiddleware": None,
    "crawler.cache.httpcache.RevalidatingCacheMiddleware": 900,
}

# Backoff: retries 429, 5xx and dropped connections, slowing the whole host; honours Retry-After. What each
# setting means is said in crawler/middlewares/backoff.py.
BACKOFF_ENABLED = True
BACKOFF_HTTP_CODES = [429, 500, 502, 503, 504, 522, 524, 408]
BACKOFF_EXCEPTIONS = None
BACKOFF_MAX_RETRIES = 5
BACKOFF_MIN_DELAY = 1.0
BACKOFF_DELAY_FACTOR = 2.0
BACKOFF_MAX_DELAY = 300.0
BACKOFF_WINDOW = 60.0
BACKOFF_PRIORITY_ADJUST = -1
# One request's whole retry budget in a row: with the waits doubling from BACKOFF_MIN_DELAY, about a minute
# of waiting, where ten failures would be a quarter of an hour.
BACKOFF_HOST_MAX_FAILURES = 6

# robots.txt Crawl-delay raises the per-host delay (the larger of it and DOWNLOAD_DELAY wins).
ROBOTSTXT_CRAWLDELAY_ENABLED = True
ROBOTSTXT_CRAWLDELAY_MAX = 60.0
# A hard cap on requests per second per host, whatever AutoThrottle does (0 = off).
HOST_MAX_RATE = 0

# Redirects off the site's origin (another scheme, host or port) are refused and counted as failures.
OFFORIGIN_ENABLED = True

# Paper downloads redirect to a login page: recorded as gated, never followed.
GATED_ENABLED = True
GATED_LOGIN_PATHS = ["/log-in", "/login", "/sign-in", "/signin"]
GATED_ACTION = "ignore"

# The HTTP cache lives in the state directory (the CLI points HTTPCACHE_DIR there). Every stored
# page is revalidated with If-None-Match / If-Modified-Since; error responses are never stored.
HTTPCACHE_ENABLED = True
HTTPCACHE_DIR = "httpcache"
HTTPCACHE_EXPIRATION_SECS = 0
HTTPCACHE_POLICY = "crawler.cache.httpcache.RevalidatingPolicy"
HTTPCACHE_STORAGE = "crawler.cache.httpcache.BoundedFilesystemCacheStorage"
HTTPCACHE_MAX_AGE_DAYS = 30
HTTPCACHE_PURGE_ON_CLOSE = True

# The crawl fleet (crawler/frontier/): a crawl is a fleet worker only when FRONTIER_URL
# (redis://HOST:PORT/DB) is set. Every Redis key lives under FRONTIER_KEY_PREFIX (one crawl's under
# <prefix>:<spider>:<event id>, host pacing under <prefix>:pace:). A worker silent FRONTIER_HEARTBEAT_TTL
# seconds is dead and its leased requests are queued again; FRONTIER_POLL_INTERVAL is the period of the
# heartbeat, lease release and shared-queue check.
FRONTIER_URL = None
FRONTIER_KEY_PREFIX = "eventcrawl"
FRONTIER_HEARTBEAT_TTL = 30.0
FRONTIER_POLL_INTERVAL = 0.5
# Seconds a waiting worker goes on while the frontier shows no work outstanding (0: never gives up; see
# crawler/frontier/extension.py).
FRONTIER_IDLE_TIMEOUT = 0.0
# Pace every host fleet-wide: one request in flight, the crawl's delay between a response and the next.
FRONTIER_PACE_ENABLED = True
# Start a new crawl when the frontier holds a finished one (never resets a running one); without it a
# worker that finds the crawl finished closes. FRONTIER_RESET_AFTER (0: never) starts one when the finished
# crawl is at least that many seconds old, for scheduled crawls.
FRONTIER_RESET = False
FRONTIER_RESET_AFTER = 0.0
# Seconds one Redis command may take.
FRONTIER_SOCKET_TIMEOUT = 10.0
# Seconds a worker unable to ask Redis for a host's pacing token keeps trying (crawler/frontier/pacing.py).
FRONTIER_PACE_FAIL_TIMEOUT = 60.0

# Staged items go to <state>/stage/<worker>.jsonl; the CLI sets the state directory.
STAGE_STATE_DIR = "state"
STAGE_WORKER = "main"
# The class that speaks for a fleet sharing one stage; the frontier add-on sets it for a fleet worker.
STAGE_FLEET = None

ITEM_PIPELINES = {
    "crawler.pipelines.normalize.NormalizePipeline": 100,
    # Before boilerplate and dedup: the page blocks that become `text` and the hashed content are
    # both free of e-mail addresses.
    "crawler.pipelines.privacy.PrivacyPipeline": 150,
    "crawler.pipelines.boilerplate.BoilerplatePipeline": 200,
    "crawler.pipelines.dedup.DedupPipeline": 300,
    "crawler.pipelines.stage.StagePipeline": 900,
}

LOG_LEVEL = "INFO"
FEED_EXPORT_ENCODING = "utf-8"

EXTENSIONS = {
    "crawler.extensions.workers.WorkerProcesses": 100,
    "crawler.extensions.progress.ProgressLine": 500,
    "crawler.extensions.crawl_stats.CrawlStatsSnapshot": 510,
}
# Processes that read lecture pages and strip responses before the cache stores them, beside the crawl's
# own (which keeps Scrapy's work); 0 does everything in the crawl's process.
WORKER_PROCESSES = 1
# Seconds a worker job may run (a page parses in milliseconds; see crawler/extensions/workers.py).
WORKER_JOB_TIMEOUT = 20.0
# A function that runs every worker job in the worker, as wrapper(fn, *args, **kwargs), by import path;
# None runs the job itself (tests name one that stalls on chosen pages).
WORKER_JOB_WRAPPER = None
# The crawl's counters are kept in the stage every N seconds, so a resumed crawl is judged whole.
CRAWL_STATS_ENABLED = True
CRAWL_STATS_INTERVAL = 5.0
PROGRESS_ENABLED = True
PROGRESS_INTERVAL = 10.0

# Text cleaning: LaTeX and PDF hyphenation in `text`; the general boilerplate layer's template model
# (kept in the state directory unless BOILERPLATE_MODEL_PATH says otherwise).
NORMALIZE_ENABLED = True
NORMALIZE_LATEX = True
# None: <state>/ next to the stage.
BOILERPLATE_MODEL_PATH = None
BOILERPLATE_MIN_PAGES = 10
BOILERPLATE_MAX_HASHES = 200_000
BOILERPLATE_MAX_RECORDS = 400_000

# Bounds on one crawl; each closes it cleanly with its stage intact, and the next crawl resumes it.
CLOSESPIDER_PAGECOUNT = 50_000
# Seconds one crawl may run (a night); the requests left wait for the next crawl, which resumes this one.
CLOSESPIDER_TIMEOUT = 8 * 3600
MEMUSAGE_ENABLED = True
MEMUSAGE_LIMIT_MB = 2048
MEMUSAGE_WARNING_MB = 1536
MEMUSAGE_CHECK_INTERVAL_SECONDS = 10.0
