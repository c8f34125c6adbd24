"""Trace export: spans (the SDK's per request, lazytools' per search and per upstream request) are sent over OTLP
when the `otel` extra is installed and the standard OpenTelemetry variables ask for it; otherwise the
OpenTelemetry API's no-op tracer makes them free."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping

__all__ = ["configure_tracing"]

logger = logging.getLogger(__name__)

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def configure_tracing(environ: Mapping[str, str] = os.environ) -> Callable[[], None] | None:
    """Install an OTLP exporter if `environ` names an endpoint (and neither OTEL_SDK_DISABLED nor
    OTEL_TRACES_EXPORTER=none says otherwise); returns the provider's shutdown, which flushes spans."""
    if not any(environ.get(name) for name in _ENDPOINTS):
        return None
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true" or environ.get("OTEL_TRACES_EXPORTER") == "none":
        return None
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        logger.warning("OTEL_EXPORTER_OTLP_ENDPOINT is set but the otel extra is not installed "
                       "(pip install 'lazytools[otel]'): no traces are exported")
        return None
    # OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES are read by Resource.create; the exporter reads the
    # endpoint, headers, timeout and compression variables itself.
    provider = TracerProvider(resource=Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME",
                                                                                    "lazytools")}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    logger.info("traces exported over OTLP/HTTP to %s", next(environ[name] for name in _ENDPOINTS
                                                             if environ.get(name)))
    return provider.shutdown
