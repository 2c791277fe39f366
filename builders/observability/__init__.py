"""The monitoring stack's desired state: chart values, monitors, recording and alert rules, dashboards."""
