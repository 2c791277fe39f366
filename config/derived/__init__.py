"""Values derived from a validated stack: capacity math, cost, scale-up budgets, exposure, GPU sharing,
warm headroom, and the per-stack derived state every reader asks (config/derived/state.py)."""
