"""Record-level duplicates: one record per talk, near-duplicates marked, what was published remembered.

``records`` holds the same-talk key and the report of what publishing merged; ``near`` gives the
MinHash signatures the crawl computes item by item and the LSH search over them; ``index`` is the
persisted index of what earlier publishes released.
"""
