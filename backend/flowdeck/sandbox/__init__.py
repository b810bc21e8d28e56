"""Running untrusted things safely: Jinja2 templates and expressions, and user Python in worker processes."""
