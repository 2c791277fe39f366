"""One model's desired state: its workload objects, its ScaledObject, and the HPA arithmetic KEDA relies on."""
