"""What every osc component shares: the per-instance selection (:mod:`.select`)."""
