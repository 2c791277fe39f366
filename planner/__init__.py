"""The capacity and cost planner: replays traffic through what a stack deploys (`make plan`).

Pure Python on the desired state: the validated stack config and the objects `builders/` render
(the ScaledObject, the NodePool), never the Pulumi SDK and never a second copy of a threshold.
"""
