"""Boundary pairs of config/checks/artifacts.py (the table: artifacts.yaml; see __init__)."""

from __future__ import annotations

from config.sections.weights import STREAMER_LOAD_FORMATS
from tests.config.checks.boundaries import values

values(first_streamer_format=STREAMER_LOAD_FORMATS[0], last_streamer_format=STREAMER_LOAD_FORMATS[-1])
