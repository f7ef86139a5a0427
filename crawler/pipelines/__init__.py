"""Item pipelines, one step per module, in the order ``settings.ITEM_PIPELINES`` runs them:
normalize -> privacy -> boilerplate -> dedup -> stage."""
