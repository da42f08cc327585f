"""`cyclesim check stream`: Stream (stream-dse 2.1.1) read, run and checked node by node."""
