"""Resource-option helpers shared by the components."""

from __future__ import annotations

from typing import Any

import pulumi


def inherited_depends_on(opts: pulumi.ResourceOptions | None) -> list[Any]:
    """The component's own depends_on, for its children.

    A component's depends_on does not make its children wait, so a component passes it on to
    the children that must not start before those resources exist (a Helm release that needs
    the Prometheus CRDs, a model that needs the GPU operator and its NodePool).
    """
    if opts is None or opts.depends_on is None:
        return []
    deps = opts.depends_on
    return list(deps) if isinstance(deps, (list, tuple)) else [deps]
