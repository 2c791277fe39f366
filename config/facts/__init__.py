"""Catalogs of facts, each with its source: instances and prices, versions, published speed figures,
system pod requests, the conventions (names, labels, tags), the outputs contract. Pure data and small lookups."""
