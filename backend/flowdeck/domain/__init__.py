"""Pure types and rules of workflows: no I/O, no imports from storage, engine or api."""
