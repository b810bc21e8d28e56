"""What an operator sees of a running Flowdeck: Prometheus metrics and structured logs."""
