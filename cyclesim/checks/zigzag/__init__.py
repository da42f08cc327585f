"""ZigZag 3.9.1 adapter: read its inputs, model its latency, import to our spec, check side by side."""
