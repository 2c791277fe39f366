"""`ingress`: model endpoints through the AWS Load Balancer Controller and one shared ALB."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from config.sections.base import ConfigModel
from config.sections.types import AcmCertificateArn, AllowedCidr, DnsDomain, config_error


class IngressConfig(ConfigModel):
    """Model endpoints: the AWS Load Balancer Controller and one shared ALB."""

    scheme: Literal["internal", "internet-facing"] = Field(
        default="internal", description="`internal` (default) or `internet-facing` (needs allowedCidrs and API keys)."
    )
    allowed_cidrs: list[AllowedCidr] = Field(
        default_factory=list,
        description="Client CIDRs allowed by the ALB security group. Required for internet-facing; internal ALBs "
        "default to the VPC's CIDR blocks.",
    )
    certificate_arn: AcmCertificateArn | None = Field(
        default=None, description="ACM certificate for HTTPS (HTTP redirects to HTTPS). Required for internet-facing."
    )
    domain: DnsDomain | None = Field(
        default=None,
        description="DNS domain for host-based routing: model M is served at https://M.<domain>/v1 "
        "(point a wildcard record *.<domain> at the ALB). Unset: models are told apart by path "
        "prefix /M/v1 on the ALB hostname.",
    )
    idle_timeout_seconds: int = Field(default=600, ge=60, le=4000, description="ALB idle timeout; long, so streamed responses are not cut.")
    extra_values: dict[str, Any] = Field(
        default_factory=dict, description="Escape hatch: Helm values deep-merged last into the controller chart values."
    )

    @model_validator(mode="after")
    def _exposure(self) -> IngressConfig:
        if self.scheme == "internet-facing":
            if not self.allowed_cidrs:
                raise config_error(
                    "scheme is internet-facing but allowedCidrs is empty; the models would be open to the whole internet",
                    "list client CIDRs in ingress.allowedCidrs, or use scheme internal",
                )
            if self.certificate_arn is None:
                raise config_error(
                    "scheme is internet-facing without certificateArn; prompts and API keys would cross the internet in clear text",
                    "set ingress.certificateArn to an ACM certificate for the domain",
                )
        return self
