"""Notifications of a run's failure and SLA breach (SPEC §2 ``options.onFailure`` / ``options.onSlaBreach``).

The engine queues a notice (``storage/notices.py``) in the transaction that fails a run or marks its
breach; ``Notifier.sweep`` (a worker sweep hook, every second, in every process) sends them: it starts
the named error workflow and/or POSTs the signed payload to the URL, retrying with backoff.
"""
