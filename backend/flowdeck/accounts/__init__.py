"""Accounts: tenants' users, argon2id passwords, browser sessions, API tokens, login links, rate limits."""
