"""The checks: cross-section rules by topic behind one ordered registry, secrets, and preflight against the account."""
