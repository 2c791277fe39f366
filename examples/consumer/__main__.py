"""A consumer of the LLM platform: wires a team's app to one model through the outputs contract.

It reads the platform stack's outputs (kubeconfig, models) with a StackReference, deploys into
the platform's cluster with a provider built from the exported kubeconfig, and hands the app the
model's OpenAI-compatible base URL and served name in a ConfigMap, and the model's API key in a
Secret. Two things come from the platform team, not from the outputs: the app's namespace must be
in the model's `clientNamespaces` (its NetworkPolicy refuses every other pod), and the API key
(vLLM requires it on every /v1 request, in the cluster too, whenever the model has one).
"""

import pulumi
import pulumi_kubernetes as k8s

config = pulumi.Config()
platform = pulumi.StackReference(config.require("platformStack"))
model = config.require("model")
namespace_name = config.get("namespace") or "team-chat"
api_key = config.get_secret("apiKey")  # the model's key, as the platform team set it in apiKeys.<model>

models = platform.require_output("models")
endpoint = models.apply(lambda m: m[model])  # KeyError (a failed preview) if the model is not served
provider = k8s.Provider("platform", kubeconfig=platform.require_output("kubeconfig"))
in_cluster = pulumi.ResourceOptions(provider=provider)

namespace = k8s.core.v1.Namespace("team", metadata={"name": namespace_name}, opts=in_cluster)
inside = pulumi.ResourceOptions(provider=provider, depends_on=[namespace])
k8s.core.v1.ConfigMap(
    "llm-endpoint",
    metadata={"name": "llm-endpoint", "namespace": namespace_name},
    data={
        # In-cluster URL: the model's gateway, inside the VPC (admitted for clientNamespaces only; /v1 alone is served).
        "OPENAI_BASE_URL": endpoint.apply(lambda e: e["url"]),
        "OPENAI_MODEL": endpoint.apply(lambda e: e["servedModelName"]),
    },
    opts=inside,
)
if api_key is not None:
    # The app reads it as OPENAI_API_KEY (envFrom this Secret); it never appears in the ConfigMap.
    k8s.core.v1.Secret(
        "llm-api-key", metadata={"name": "llm-api-key", "namespace": namespace_name}, string_data={"OPENAI_API_KEY": api_key}, opts=inside
    )

pulumi.export("openaiBaseUrl", endpoint.apply(lambda e: e["url"]))
pulumi.export("externalBaseUrl", endpoint.apply(lambda e: e.get("baseUrl")))
pulumi.export("clusterName", platform.require_output("clusterName"))
