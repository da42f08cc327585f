"""peers: adapters that run the real peer packages when installed."""
