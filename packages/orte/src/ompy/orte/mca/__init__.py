"""Frameworks of the run-time layer."""
