"""``gateway eval run``: an eval suite through the gateway's own pipeline, graded
deterministically, recorded in ``eval_results`` where the quality signal reads it."""
