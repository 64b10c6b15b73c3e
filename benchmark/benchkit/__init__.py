"""The pieces of the imgfs benchmark (benchmark/bench.py is the driver)."""
