"""Unattended runs: one configuration, a lock, a quality gate, and crawl-then-publish."""
