"""cyclesim: a discrete-event cycle simulator for DNN accelerators."""

__version__ = "0.1.0"
