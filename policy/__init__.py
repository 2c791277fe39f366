"""Policy pack (see checks.py); the package marker lets tests import policy.checks."""
