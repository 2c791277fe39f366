"""One model's serving stack, by part: its inputs (args), its gateway, its S3 weights, its Ingress, and the
VllmModel component that puts them together (model). Resource names and the component's type are those of
the single module this package replaces, so existing stacks see no change."""

from components.serving.args import Endpoint, Gateway, S3Weights, VllmModelArgs
from components.serving.model import VllmModel

__all__ = ["Endpoint", "Gateway", "S3Weights", "VllmModel", "VllmModelArgs"]
