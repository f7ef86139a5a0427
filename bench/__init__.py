"""Benchmarks of the crawler against the local replica: ``bench/run`` runs them all."""
