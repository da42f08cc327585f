"""What-if replays and parallel runs: the `simulate` facade (simulate.py), sweeps
(sweep_spec.py, sweep.py, sweep_cli.py), explain's remedies and whole-network checks, all
through the one parallel runner (parallel.py: map_tasks).

This layer may call the engine; views and results never import it.
"""
