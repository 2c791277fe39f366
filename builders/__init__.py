"""The pure desired state: config sections (and plain wiring values) in, dicts out.

Kubernetes manifests, Helm values, IAM documents and PromQL, built without the Pulumi SDKs so
that the components, the docs, the tests and the planner all read one definition. Nothing in
this package may import `pulumi` (a test imports every module in a fresh interpreter and checks).
Wiring values that are Outputs at run time (a role ARN, a queue name) are passed in as opaque
values and placed into the dicts as they are.
"""
