"""The pieces of the imgfs benchmark (mount-scripts/bench.py is the driver)."""
