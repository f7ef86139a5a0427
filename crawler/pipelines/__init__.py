"""Item pipelines, one step per module, in the order ``settings.ITEM_PIPELINES`` runs them:
normalize -> boilerplate -> dedupe -> stage."""
