"""The benchmark harness behind `make bench`: one run, every scenario, figures side by side."""
