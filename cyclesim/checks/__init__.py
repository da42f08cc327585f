"""checks: analytical models and peer adapters, side by side with the replay."""
