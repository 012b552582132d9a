"""Helpers shared by the tests: oracles, cluster and run fixtures."""
