"""SCALE-Sim 3.0.0 as a peer: read its config and topology files, model its cycle formulas,
import each layer as our architecture and mapping, replay it, and run the real SCALE-Sim."""
