"""Scrapy extensions of the crawler."""
