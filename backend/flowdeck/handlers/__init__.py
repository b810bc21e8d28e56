"""Node handlers: one module per node type, all behind the contract in ``handlers.base``."""
