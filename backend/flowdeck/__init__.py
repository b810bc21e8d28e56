"""Flowdeck: a DAG workflow engine with a browser node-graph editor."""

__version__ = "0.1.0"
