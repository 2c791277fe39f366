"""A consumer of the LLM platform: wires a team's app to one model through the outputs contract.

It reads the platform stack's outputs (kubeconfig, models) with a StackReference, deploys into
the platform's cluster with a provider built from the exported kubeconfig, and hands the app the
model's OpenAI-compatible base URL and served name in a ConfigMap.
"""

import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platformStack"))
model = config.require("model")

models = platform.require_output("models")
endpoint = models.apply(lambda m: m[model])  # KeyError (a failed preview) if the model is not served
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))

namespace = k8s.core.v1.Namespace("team", metadata={"name": "team-chat"}, opts=pulumi.ResourceOptions(provider=provider))
k8s.core.v1.ConfigMap(
    "llm-endpoint",
    metadata={"name": "llm-endpoint", "namespace": "team-chat"},
    data={
        # In-cluster URL: traffic stays inside the VPC and needs no API key from inside the cluster.
        "OPENAI_BASE_URL": endpoint.apply(lambda e: e["url"]),
        "OPENAI_MODEL": endpoint.apply(lambda e: e["servedModelName"]),
    },
    opts=pulumi.ResourceOptions(provider=provider, depends_on=[namespace]),
)

pulumi.export("openaiBaseUrl", endpoint.apply(lambda e: e["url"]))
pulumi.export("externalBaseUrl", endpoint.apply(lambda e: e.get("baseUrl")))
pulumi.export("clusterName", platform.require_output("clusterName"))
