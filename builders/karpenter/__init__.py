"""Karpenter's desired state: IAM documents, controller values, EC2NodeClasses, NodePools, NodeOverlays."""
