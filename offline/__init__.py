"""Run the real Pulumi program offline: recording mocks, the render, and its summary."""
