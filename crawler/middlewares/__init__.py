"""Downloader middlewares of the polite crawl: backoff, Crawl-delay, gated downloads, slot floors."""
