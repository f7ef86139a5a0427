"""The revalidating HTTP cache: Scrapy's storage (``httpcache``) and its entry files, read and written
without Scrapy so that the worker processes can store answers too (``entry``)."""
