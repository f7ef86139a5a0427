"""Spiders: crawling only. Page parsing lives in :mod:`crawler.pages`."""
