"""Triggers (SPEC §8) beyond the REST API: webhooks (``webhooks.py``) and schedules (``schedules.py``)."""
