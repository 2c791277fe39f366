"""The LLM inference platform: one stack config in, the whole platform out.

Run with `pulumi up` (real) or `make render STACK=<stack>` (offline, under recording mocks).
"""

import pulumi

from components.platform import build_platform
from config.errors import ConfigError
from config.load import load

try:
    loaded = load()
except ConfigError as err:
    # A user error, not a crash: print every problem, no traceback.
    raise pulumi.RunError(err.report()) from None

for warning in loaded.warnings:
    pulumi.log.warn(str(warning))

outputs = build_platform(loaded.config, loaded.secrets)

for key, value in outputs.items():
    pulumi.export(key, value)
