"""The site tools that look at a copy of Underline outside a crawl: ``check-site`` and ``record``
(:mod:`check`), ``events`` (:mod:`events`), and the one HTTP client they share (:mod:`fetcher`)."""
