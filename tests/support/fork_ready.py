"""Imported last by the fork server, after everything it preloads: moves every object the imports created
into the collector's permanent generation (``gc.freeze``).

A forked command shares the fork server's memory until it writes to a page. A full collection in the
command would walk every imported object, touching (and so copying) nearly all of those pages and
spending seconds of CPU on objects that live until the end anyway; frozen, they are never walked.
"""

import gc

gc.freeze()
