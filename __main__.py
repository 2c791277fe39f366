"""The LLM inference platform: one stack config in, the whole platform out.

Run with `pulumi up` (real) or `make render STACK=<stack>` (offline, under recording mocks).
"""

import pulumi

from components.account import check as preflight_check
from components.platform import build_platform
from config.checks import preflight
from config.errors import ConfigError, format_report
from config.load import load, offline_account

try:
    # None under `pulumi up`/`preview`; the offline harness hands the run its account answers.
    loaded = load(offline_account(globals()))
except ConfigError as err:
    # A user error, not a crash: print every problem, no traceback.
    raise pulumi.RunError(err.report()) from None

for warning in loaded.warnings:
    pulumi.log.warn(str(warning))

# Preflight: what only the account knows, checked before any resource is registered.
try:
    found = preflight.problems(preflight_check(loaded.config, loaded.offline))
except ConfigError as err:
    raise pulumi.RunError(err.report()) from None
except Exception as err:  # a data source failed outright: say so, without a traceback
    raise pulumi.RunError(f"Preflight could not read the account: {str(err).splitlines()[0][:300]}") from None
if any(p.severity == "error" for p in found):
    raise pulumi.RunError("Preflight against the account failed.\n" + format_report(found))
for warning in found:
    pulumi.log.warn(f"preflight: {warning}")

outputs = build_platform(loaded.config, loaded.secrets)

for key, value in outputs.items():
    pulumi.export(key, value)
