"""Benchmarks of agentloop (run with `make bench`); results land in bench/results/."""
