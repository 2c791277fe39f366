"""Helpers the tests share, one module per topic; test files import them from here, never from each other."""
