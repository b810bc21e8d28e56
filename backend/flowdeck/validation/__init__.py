"""Validation of a workflow definition as raw JSON (SPEC §1, §2), above the handlers and the sandbox."""
