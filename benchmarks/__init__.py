"""Speed and scale benchmarks. Each module has `main()`, prints its figures as ratios against a baseline measured in
the same run, and is run in turn by `python -m benchmarks` (or alone: `python -m benchmarks.<module>`)."""
