"""The AccelForge adapter: read its specs, model its counting rules, import, check, run the peer."""
