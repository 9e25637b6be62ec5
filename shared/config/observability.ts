// Metrics and tracing (shared/tracing.ts).
import { z } from 'zod';
import { bool, int, optionalString, optionalUrl } from './env-types.js';

export const observabilityEnv = {
  METRICS_ENABLED: bool(true).describe('Gateway: serve Prometheus /metrics on API_METRICS_PORT.'),
  // /metrics is never on the public API port.
  API_METRICS_PORT: int(9464, 0, 65535).describe("Gateway: the port of /metrics, its own, never the public API's."),
  METRICS_HOST: z.string().default('127.0.0.1').meta({ valueType: 'address' }).describe('Gateway: the address /metrics listens on (loopback by default).'),
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalUrl().describe(
    'Spans go over OTLP/HTTP (protobuf) to this base URL (`<url>/v1/traces`, e.g. `http://127.0.0.1:4318`). Unset: tracing is off and nothing of the OpenTelemetry SDK is loaded.',
  ),
  OTEL_SERVICE_NAME: optionalString.describe("Overrides the process's service name in traces (`mediagen-api`, `mediagen-worker`)."),
  TRACE_TRUST_INBOUND: bool(false).describe(
    "An inbound `traceparent` becomes the parent of the request's span only when set (a trusted proxy in front); otherwise the request starts its own trace with a link to the caller's span.",
  ),
};
