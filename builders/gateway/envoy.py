"""The gateway's Envoy configuration, written here instead of the chart's preset. Pure.

The preset (llm-d-router-standalone v0.10.0, `router.proxy.presets.envoy.configMap`) routes every
path (`/`) with a one-day route timeout, connection timeouts of 1000 s and more, and Envoy's default
idle timeouts (an hour upstream); this one serves `/v1` only and derives every timeout from the ALB's
(builders/gateway/timeouts.py). The parts the Endpoint Picker relies on stay as upstream has them:
the ext_proc filter with streamed bodies both ways, and an ORIGINAL_DST cluster that sends each
request to the pod the picker names in `x-gateway-destination-endpoint`.

Listeners: 8081, the API (the ALB's targets and the in-cluster Service); 19001, `/ready` only (the
kubelet's readiness probe and the ALB's health check): ready while Envoy runs, deliberately not tied to
the Endpoint Picker, so a picker gap (a failover, a rollout) never deregisters the proxies from the ALB
(callers get Envoy's fail-closed 503 meanwhile, and the targets are there when the picker is back);
19002, `/stats/prometheus` only, for Prometheus. The admin interface listens on loopback.

The chart renders the text through Helm's `tpl`: it must hold no template braces (it holds none).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from config.derived.path import Chain

API_PORT = 8081
READY_PORT = 19001
METRICS_PORT = 19002
ADMIN_PORT = 19000
EXT_PROC_PORT = 9002
READY_PATH = "/ready"
METRICS_PATH = "/stats/prometheus"
API_PREFIX = "/v1"
API_STAT_PREFIX = "api"
"""The API listener's stat_prefix: `envoy_http_conn_manager_prefix` on its statistics (dashboards, the wake trigger)."""
DESTINATION_HEADER = "x-gateway-destination-endpoint"
"""Where the Endpoint Picker writes the chosen pod's address (the ORIGINAL_DST cluster reads it)."""
EXT_PROC_CLUSTER = "ext_proc"
ENDPOINT_CLUSTER = "original_destination_cluster"
STATUS_ON_PICKER_ERROR = 503
"""What a caller gets at once when the Endpoint Picker is unreachable or fails (fail closed): a
retryable 503, never a request sent to no one in particular. Envoy 1.33's ext_proc answers such a
failure with a local 500 (ext_proc.proto, failure_mode_allow; its status_on_error field arrived in 1.36),
which the API listener's local-reply mapper turns into this."""
LOCAL_REPLY_RUNTIME_KEY = "gateway.picker_error_status"
"""RuntimeUInt32 needs a runtime key; no runtime layer sets it, so the default (500) applies."""

CONNECT_TIMEOUT = "5s"
"""To a vLLM pod or the picker, both in the cluster: seconds, not the preset's 1000 s."""
# Envoy's own bounds on a model's concurrent streams, well above what its replicas admit
# (replicas.max x --max-num-queued-reqs), so vLLM, not Envoy, decides what is refused.
CIRCUIT_LIMIT = 40_000
MAX_CONCURRENT_STREAMS = 100
BUFFER_LIMIT_BYTES = 32_768


def _seconds(value: int) -> str:
    return f"{value}s"


def _typed(kind: str, **fields: Any) -> dict[str, Any]:
    return {"@type": f"type.googleapis.com/{kind}", **fields}


def _address(address: str, port: int) -> dict[str, Any]:
    return {"socket_address": {"address": address, "port_value": port}}


def _listener(name: str, port: int, manager: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "address": _address("0.0.0.0", port),
        **extra,
        "filter_chains": [{"filters": [{"name": "envoy.filters.network.http_connection_manager", "typed_config": manager}]}],
    }


HCM = "envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager"
ROUTER = {"name": "envoy.filters.http.router", "typed_config": _typed("envoy.extensions.filters.http.router.v3.Router")}


def _ready_listener() -> dict[str, Any]:
    """`/ready`: answered by Envoy itself while it runs (not tied to the picker, see the module docstring)."""
    health = {
        "name": "envoy.filters.http.health_check",
        "typed_config": _typed(
            "envoy.extensions.filters.http.health_check.v3.HealthCheck",
            pass_through_mode=False,
            headers=[{"name": ":path", "string_match": {"exact": READY_PATH}}],
        ),
    }
    manager = _typed(
        HCM,
        stat_prefix="ready",
        route_config={"name": "ready", "virtual_hosts": [{"name": "ready", "domains": ["*"], "routes": [_not_found()]}]},
        http_filters=[health, ROUTER],
    )
    return _listener("ready", READY_PORT, manager)


def _metrics_listener() -> dict[str, Any]:
    """`/stats/prometheus` of the admin interface, and nothing else of it."""
    route = {"match": {"path": METRICS_PATH}, "route": {"cluster": "admin"}}
    manager = _typed(
        HCM,
        stat_prefix="metrics",
        route_config={"name": "metrics", "virtual_hosts": [{"name": "metrics", "domains": ["*"], "routes": [route, _not_found()]}]},
        http_filters=[ROUTER],
    )
    return _listener("metrics", METRICS_PORT, manager)


def _not_found() -> dict[str, Any]:
    return {"match": {"prefix": "/"}, "direct_response": {"status": 404, "body": {"inline_string": "not found\n"}}}


MODELS_PATH = f"{API_PREFIX}/models"


def models_body(served_name: str, max_model_len: int) -> str:
    """`GET /v1/models` as vLLM answers it for the one model a gateway serves (its served name; created 0 so the
    bootstrap does not change from one render to the next)."""
    entry = {"id": served_name, "object": "model", "created": 0, "owned_by": "vllm", "root": served_name, "max_model_len": max_model_len}
    return json.dumps({"object": "list", "data": [entry]})


def _models_route(body: str) -> dict[str, Any]:
    """`GET /v1/models` answered by Envoy: a request with no body bypasses the picker's flow control, so at zero it
    would get a 503 at once and never wake the model (llm-d-router v0.10.0 request.go), and clients that list the
    models before they ask fail there. It names only the served model, as the model's host name already does;
    every other /v1 request still reaches vLLM, which checks the key."""
    return {
        "match": {"path": MODELS_PATH, "headers": [{"name": ":method", "string_match": {"exact": "GET"}}]},
        "direct_response": {"status": 200, "body": {"inline_string": body}},
        "response_headers_to_add": [
            {"header": {"key": "content-type", "value": "application/json"}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
        ],
    }


def _api_listener(timeouts: Chain, models: str | None = None) -> dict[str, Any]:
    """The API: `/v1` and below to the pod the Endpoint Picker chose; every other path 404 from Envoy
    itself (vLLM's /invocations, /tokenize, /pooling, /score, /metrics never reached). Paths are
    normalized first, so `/v1/../invocations` is `/invocations`."""
    ext_proc = {
        "name": "envoy.filters.http.ext_proc",
        "typed_config": _typed(
            "envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor",
            failure_mode_allow=False,
            grpc_service={"envoy_grpc": {"cluster_name": EXT_PROC_CLUSTER}},
            processing_mode={
                "request_header_mode": "SEND",
                "response_header_mode": "SEND",
                "request_body_mode": "FULL_DUPLEX_STREAMED",
                "response_body_mode": "FULL_DUPLEX_STREAMED",
                "request_trailer_mode": "SEND",
                "response_trailer_mode": "SEND",
            },
            message_timeout=_seconds(timeouts.ext_proc_message),
        ),
    }
    api = {
        "match": {"path_separated_prefix": API_PREFIX},
        "route": {
            "cluster": ENDPOINT_CLUSTER,
            # no total deadline (a streamed answer may run long); silence is bounded by the idle timeout
            "timeout": "0s",
            "idle_timeout": _seconds(timeouts.envoy_stream_idle),
        },
    }
    # Paths outside /v1 never reach the picker either.
    no_picker = {"envoy.filters.http.ext_proc": _typed("envoy.config.route.v3.FilterConfig", disabled=True)}
    manager = _typed(
        HCM,
        stat_prefix=API_STAT_PREFIX,
        route_config={
            "name": "api",
            "virtual_hosts": [
                {
                    "name": "api",
                    "domains": ["*"],
                    "routes": [
                        *([{**_models_route(models), "typed_per_filter_config": no_picker}] if models is not None else []),
                        api,
                        {**_not_found(), "typed_per_filter_config": no_picker},
                    ],
                }
            ],
        },
        http_filters=[ext_proc, ROUTER],
        stream_idle_timeout=_seconds(timeouts.envoy_stream_idle),
        request_timeout="0s",
        local_reply_config=local_replies(),
        access_log=[ACCESS_LOG],
        common_http_protocol_options={
            "idle_timeout": _seconds(timeouts.envoy_downstream_idle),
            "headers_with_underscores_action": "REJECT_REQUEST",
        },
        http2_protocol_options={"max_concurrent_streams": MAX_CONCURRENT_STREAMS},
        # the ALB is the only hop in front: its X-Forwarded-For names the caller
        use_remote_address=True,
        xff_num_trusted_hops=1,
        normalize_path=True,
        merge_slashes=True,
        # refused, not redirected: a redirect to the unescaped /v1/... would drop path routing's /<model> prefix
        path_with_escaped_slashes_action="REJECT_REQUEST",
    )
    return _listener("api", API_PORT, manager, per_connection_buffer_limit_bytes=BUFFER_LIMIT_BYTES)


RETRY_AFTER_SECONDS = 30
"""`Retry-After` on the gateway's 429 and 503: a request held for its whole TTL met a scale-up still under way
(or no replica at all), and another 30 s (the TTL's own step, config/derived/hold.py TTL_STEP_SECONDS) lets it
progress before the client tries again."""
_ERRORS = {429: ("RateLimitError", "rate_limit_exceeded"), 503: ("ServiceUnavailableError", "service_unavailable")}


def _openai_error(status: int) -> dict[str, Any]:
    """OpenAI's error shape (what vLLM's own errors have), around what the picker or Envoy said. Strings only:
    Envoy's structured formats take strings, numbers, booleans and nested structs, never a null."""
    kind, code = _ERRORS[status]
    return {
        "json_format": {"error": {"message": "%LOCAL_REPLY_BODY%", "type": kind, "code": code}},
        "content_type": "application/json",
    }


def _mapper(status: int, *, from_status: int | None = None) -> dict[str, Any]:
    """A local reply of `from_status` (default: `status`) answered as `status`, in OpenAI's shape, with Retry-After.
    RuntimeUInt32 needs a runtime key; no runtime layer sets them, so the defaults apply."""
    matched = from_status or status
    key = LOCAL_REPLY_RUNTIME_KEY if matched == 500 else f"gateway.local_reply_{matched}"
    mapper: dict[str, Any] = {
        "filter": {"status_code_filter": {"comparison": {"op": "EQ", "value": {"default_value": matched, "runtime_key": key}}}},
        "headers_to_add": [
            {"header": {"key": "retry-after", "value": str(RETRY_AFTER_SECONDS)}, "append_action": "OVERWRITE_IF_EXISTS_OR_ADD"}
        ],
        "body_format_override": _openai_error(status),
    }
    if from_status is not None:
        mapper["status_code"] = status
    return mapper


def local_replies() -> dict[str, Any]:
    """What Envoy answers itself on the API listener: the picker's 429 (held past its TTL, or flow control full)
    and 503 (no replica), Envoy's own 503s (no upstream), and the picker's failure, Envoy's local 500 answered as
    a retryable 503 (STATUS_ON_PICKER_ERROR): each in OpenAI's error shape with `Retry-After`, so a client's SDK
    reads and backs off. The first mapper that matches applies; other local replies (the 404 of paths outside
    /v1) keep their own body."""
    return {"mappers": [_mapper(STATUS_ON_PICKER_ERROR, from_status=500), _mapper(429), _mapper(503)]}


ACCESS_LOG = {
    "name": "envoy.access_loggers.stdout",
    "typed_config": _typed(
        "envoy.extensions.access_loggers.stream.v3.StdoutAccessLog",
        log_format={
            "json_format": {
                "start": "%START_TIME%",
                "method": "%REQ(:METHOD)%",
                "path": "%REQ_WITHOUT_QUERY(:PATH)%",
                "status": "%RESPONSE_CODE%",
                "flags": "%RESPONSE_FLAGS%",
                "details": "%RESPONSE_CODE_DETAILS%",
                "upstream": "%UPSTREAM_HOST%",
                "duration_ms": "%DURATION%",
                "to_first_byte_ms": "%RESPONSE_DURATION%",
                "bytes_in": "%BYTES_RECEIVED%",
                "bytes_out": "%BYTES_SENT%",
                "request_id": "%REQ(X-REQUEST-ID)%",
                "client": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
            }
        },
    ),
}
"""One JSON line per request on the API listener (the proxy's stdout): status, Envoy's response flags, the
replica that served it and how long; never a header that carries the key, never the query string."""


def _circuit() -> dict[str, Any]:
    return {"thresholds": [{"max_connections": CIRCUIT_LIMIT, "max_pending_requests": CIRCUIT_LIMIT, "max_requests": CIRCUIT_LIMIT}]}


def _endpoint_cluster(timeouts: Chain) -> dict[str, Any]:
    """vLLM pods, one per request as the picker names it; HTTP/1.1 (uvicorn), idle connections
    closed before vLLM's keep-alive ends."""
    return {
        "name": ENDPOINT_CLUSTER,
        "type": "ORIGINAL_DST",
        "lb_policy": "CLUSTER_PROVIDED",
        "connect_timeout": CONNECT_TIMEOUT,
        "circuit_breakers": _circuit(),
        "original_dst_lb_config": {"use_http_header": True, "http_header_name": DESTINATION_HEADER},
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": _typed(
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                common_http_protocol_options={"idle_timeout": _seconds(timeouts.envoy_upstream_idle)},
                explicit_http_config={"http_protocol_options": {}},
            )
        },
    }


PICKER_CONNECTION_SECONDS = 10
"""The longest a proxy keeps one HTTP/2 connection to the picker's Service (max_connection_duration: then it
drains it, streams finish, new ones open a new connection). The Service's ClusterIP pins a connection to
the pod it first reached (kube-proxy's conntrack), and the picker's gRPC health service answers SERVING
whatever its leadership (pkg/epp/server/runserver.go): without a bound, a proxy could keep talking to a
picker that is no longer the one behind the Service until that picker goes away."""


def _ext_proc_cluster(picker_host: str) -> dict[str, Any]:
    """The Endpoint Picker's Service (only its leader is ready behind it), over TLS (the picker serves
    its own certificate; nothing outside the namespace's policies reaches the port) and HTTP/2, with
    the gRPC health check the ready listener counts."""
    return {
        "name": EXT_PROC_CLUSTER,
        "type": "STRICT_DNS",
        "lb_policy": "LEAST_REQUEST",
        "connect_timeout": CONNECT_TIMEOUT,
        "circuit_breakers": _circuit(),
        "health_checks": [
            {
                "timeout": "2s",
                "interval": "5s",
                "unhealthy_threshold": 2,
                "healthy_threshold": 1,
                "reuse_connection": True,
                "grpc_health_check": {"service_name": "envoy.service.ext_proc.v3.ExternalProcessor"},
                "tls_options": {"alpn_protocols": ["h2"]},
            }
        ],
        "transport_socket": {
            "name": "envoy.transport_sockets.tls",
            "typed_config": _typed(
                "envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext", common_tls_context={"alpn_protocols": ["h2"]}
            ),
        },
        "typed_extension_protocol_options": {
            "envoy.extensions.upstreams.http.v3.HttpProtocolOptions": _typed(
                "envoy.extensions.upstreams.http.v3.HttpProtocolOptions",
                common_http_protocol_options={"max_connection_duration": _seconds(PICKER_CONNECTION_SECONDS)},
                explicit_http_config={"http2_protocol_options": {}},
            )
        },
        "load_assignment": {
            "cluster_name": EXT_PROC_CLUSTER,
            "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _address(picker_host, EXT_PROC_PORT)}}]}],
        },
    }


def config(picker_host: str, timeouts: Chain, models: str | None = None) -> dict[str, Any]:
    """The whole bootstrap: admin on loopback, the three listeners, the three clusters; `models`, the body
    Envoy answers `GET /v1/models` with (None: the picker routes it)."""
    return {
        "admin": {"address": _address("127.0.0.1", ADMIN_PORT)},
        "static_resources": {
            "listeners": [_api_listener(timeouts, models), _ready_listener(), _metrics_listener()],
            "clusters": [
                _endpoint_cluster(timeouts),
                _ext_proc_cluster(picker_host),
                {
                    "name": "admin",
                    "type": "STATIC",
                    "connect_timeout": "0.25s",
                    "load_assignment": {
                        "cluster_name": "admin",
                        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": _address("127.0.0.1", ADMIN_PORT)}}]}],
                    },
                },
            ],
        },
    }


class _NoAliases(yaml.SafeDumper):
    """Every repeated block written out in full: no `&id001` anchors in the bootstrap."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def config_text(picker_host: str, timeouts: Chain, models: str | None = None) -> str:
    text = yaml.dump(config(picker_host, timeouts, models), Dumper=_NoAliases, sort_keys=False, width=200)
    if "{{" in text or "}}" in text:
        raise ValueError("envoy.yaml holds template braces, which the chart's tpl would render")
    return text
