// Tracing off costs nothing: without OTEL_EXPORTER_OTLP_ENDPOINT no OpenTelemetry SDK module and no
// Temporal interceptor module is loaded by the processes' code, and the helpers run their function
// as it is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import '../../api/gateway.js';
import '../../worker/service.js';
import { currentTraceId, startTracing, tracing, tracingLogOptions, withSpan } from '../../shared/tracing.js';

test('without an OTLP endpoint nothing of the tracing SDK is loaded or installed', async () => {
  assert.equal(await startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_SERVICE_NAME: undefined }, 'test'), null);
  assert.equal(tracing(), null);
  assert.deepEqual(tracingLogOptions(), {}, 'no log mixin');
  assert.equal(await withSpan('x', {}, async (span) => span), null, 'no span is made');
  assert.equal(currentTraceId(), undefined);
  // Both are CommonJS packages: loading them from ESM puts them in the CommonJS module cache.
  const loaded = Object.keys(createRequire(import.meta.url).cache).filter((p) =>
    /@opentelemetry[\\/]sdk-trace-base|interceptors-opentelemetry|exporter-trace-otlp/.test(p),
  );
  assert.deepEqual(loaded, []);
});
