"""The execution engine: scheduling rules, the orchestrator, the queue transport and the worker."""
