"""The inference gateway in front of a model: the llm-d router's release values, its Envoy config,
the Endpoint Picker's config, and the objects the platform adds beside the chart. Pure."""
