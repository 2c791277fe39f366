"""Pulumi ComponentResources: each creates resources from pure builder output."""
