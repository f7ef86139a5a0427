"""Imported last by the fork server, after everything it preloads: parses the default card template once,
then moves every object the imports created into the collector's permanent generation (``gc.freeze``).

Every command that publishes renders the card from ``dataset_card/README.template.md``; the crawler
keeps a template's parsed and compiled forms per process, keyed by its text (``crawler.publish.card``),
and each costs about a tenth of a second. Made here, a forked command finds them made; a command given
another template, or a template edited since, parses its own text as before.

A forked command shares the fork server's memory until it writes to a page. A full collection in the
command would walk every imported object, touching (and so copying) nearly all of those pages and
spending seconds of CPU on objects that live until the end anyway; frozen, they are never walked.
"""

import gc

from crawler.publish import card

_DEFAULT_CARD = card.DEFAULT_TEMPLATE.read_text(encoding="utf-8")
card.check_names(_DEFAULT_CARD, where=str(card.DEFAULT_TEMPLATE))
card._compiled(_DEFAULT_CARD)

gc.freeze()
