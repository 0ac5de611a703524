"""Speed and scale benchmarks: `uv run --locked --extra dev python -m benchmarks` runs every `bench_*` module, each
printing its figures as ratios against a baseline measured in the same run."""
