"""Model endpoints' desired state: the load balancer controller's values and IAM, one Ingress per model."""
