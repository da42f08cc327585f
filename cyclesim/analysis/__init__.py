"""What-if replays and parallel runs: explain's remedies, sweeps, whole-network checks.

This layer may call the engine; views and results never import it.
"""
