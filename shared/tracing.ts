// OpenTelemetry tracing of both processes. Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set, and off
// means off: the SDK, the exporter and the Temporal interceptors are loaded by startTracing() only
// (dynamic imports), and every helper here checks one module variable before touching the API, so
// a process without tracing pays a branch per call and no memory.
//
// On: one tracer provider per process, spans batched to `<endpoint>/v1/traces` over OTLP/HTTP
// (protobuf), W3C trace context, context carried across awaits by AsyncLocalStorage. The Temporal
// interceptors (@temporalio/interceptors-opentelemetry) carry it from the gateway's request span
// into the workflow (traced workflow bundle, spans leave the sandbox through a sink) and every
// activity, local ones included.
import { context, propagation, trace, SpanKind, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Resource } from '@opentelemetry/resources';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import type { Config } from './config.js';

interface TracingRuntime {
  serviceName: string;
  processor: SpanProcessor;
  resource: Resource;
  /** For the gateway's and the reconciler's Temporal clients: the start carries the trace context. */
  clientInterceptors(): WorkflowClientInterceptor[];
  /** For every worker that runs activities (local ones too). */
  activityInterceptor: ActivityInterceptorsFactory;
  /** The workflow interceptor module: bundled into the traced workflow bundle. */
  workflowInterceptorModule: string;
  /** The sink through which the workflow sandbox hands its spans to this process's exporter. */
  workflowSinks(): InjectedSinks<OpenTelemetrySinks>;
  /** Sends every finished span now (tests, shutdown). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

let runtime: TracingRuntime | null = null;
let starting: Promise<TracingRuntime | null> | null = null;

/** The process's tracing, or null when it is off. */
export function tracing(): TracingRuntime | null {
  return runtime;
}

export function tracingEnabled(): boolean {
  return runtime !== null;
}

/**
 * Starts tracing for this process when OTEL_EXPORTER_OTLP_ENDPOINT is set (once: later calls get
 * the same runtime, so a test running the gateway and a worker in one process has one provider).
 */
export function startTracing(
  config: Pick<Config, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_SERVICE_NAME'>,
  defaultServiceName: string,
): Promise<TracingRuntime | null> {
  const endpoint = config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint) return Promise.resolve(runtime);
  starting ??= load(endpoint.replace(/\/+$/, ''), config.OTEL_SERVICE_NAME ?? defaultServiceName).then((r) => (runtime = r));
  return starting;
}

async function load(endpoint: string, serviceName: string): Promise<TracingRuntime> {
  const [base, { Resource }, { W3CTraceContextPropagator }, { AsyncLocalStorageContextManager }, { OTLPTraceExporter }, otelInterceptors] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/core'),
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/exporter-trace-otlp-proto'),
    import('@temporalio/interceptors-opentelemetry'),
  ]);
  const { createRequire } = await import('node:module');
  const resource = new Resource({ 'service.name': serviceName });
  const exporter = new OTLPTraceExporter({ url: `${endpoint}/v1/traces` });
  // Batched: a span costs a buffer push on the hot path; export happens off it, every second.
  const processor = new base.BatchSpanProcessor(exporter, { scheduledDelayMillis: 1_000, maxQueueSize: 8_192, maxExportBatchSize: 512 });
  const provider = new base.BasicTracerProvider({ resource, spanProcessors: [processor] });
  provider.register({ contextManager: new AsyncLocalStorageContextManager().enable(), propagator: new W3CTraceContextPropagator() });
  const { OpenTelemetryWorkflowClientInterceptor, OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } =
    otelInterceptors;
  return {
    serviceName,
    processor,
    resource,
    clientInterceptors: () => [new OpenTelemetryWorkflowClientInterceptor()],
    activityInterceptor: (ctx) => {
      // The SDK writes an activity's "completed" line after its span has ended: the trace id seen
      // while it ran goes on that line too. (Its "started" line is written before any interceptor
      // sees the task's headers, so it cannot carry one.)
      let traceId: string | undefined;
      const inbound = new OpenTelemetryActivityInboundInterceptor(ctx);
      const outbound = new OpenTelemetryActivityOutboundInterceptor(ctx);
      return {
        inbound: {
          execute: (input, next) =>
            inbound.execute(input, (i) => {
              traceId = currentTraceId();
              return next(i);
            }),
        },
        outbound: {
          getLogAttributes: (input, next) =>
            outbound.getLogAttributes(input, (attrs) => next(traceId && attrs.trace_id === undefined ? { trace_id: traceId, ...attrs } : attrs)),
          getMetricTags: (input, next) => next(input),
        },
      };
    },
    workflowInterceptorModule: createRequire(import.meta.url).resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors'),
    workflowSinks: () => ({ exporter: makeWorkflowExporter(processor, resource) }),
    flush: () => provider.forceFlush(),
    shutdown: async () => {
      await provider.shutdown();
      runtime = null;
      starting = null;
    },
  };
}

const tracerName = 'mediagen';

/**
 * Runs `fn` inside a new span (a child of the active one), ending it when `fn` settles and
 * recording a failure. Tracing off: just `fn()`.
 */
export function withSpan<T>(name: string, attributes: Attributes, fn: (span: Span | null) => Promise<T>, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!runtime) return fn(null);
  return trace.getTracer(tracerName).startActiveSpan(name, { kind, attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
      throw err;
    } finally {
      span.end();
    }
  });
}

/**
 * Starts a server span for an incoming request; run the rest of the request in `ctx`. A caller's
 * `traceparent` is adopted as the parent only when `trustInbound` (a proxy of ours sets it);
 * otherwise the request starts its own trace and the caller's span is a link: a client cannot
 * splice our spans into a trace of its choosing, nor pick our sampling.
 */
export function startRequestSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes, trustInbound: boolean) {
  const inbound = propagation.extract(context.active(), headers);
  const tracer = trace.getTracer(tracerName);
  if (trustInbound) {
    const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes }, inbound);
    return { span, ctx: trace.setSpan(inbound, span) };
  }
  const caller = trace.getSpanContext(inbound);
  const links = caller && trace.isSpanContextValid(caller) ? [{ context: caller }] : [];
  const span = tracer.startSpan(name, { kind: SpanKind.SERVER, attributes, links, root: true }, context.active());
  return { span, ctx: trace.setSpan(context.active(), span) };
}

export function runInContext<T>(ctx: ReturnType<typeof context.active>, fn: () => T): T {
  return context.with(ctx, fn);
}

/** Attributes on the active span (the request's, say, once the job id is known). */
export function annotateSpan(attributes: Attributes): void {
  if (!runtime) return;
  trace.getActiveSpan()?.setAttributes(attributes);
}

/** The active trace's id, or undefined (tracing off, or no span). */
export function currentTraceId(): string | undefined {
  if (!runtime) return undefined;
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}

/** The W3C `traceparent` of a span, for a response header. */
export function traceparentOf(span: Span): string {
  const sc = span.spanContext();
  return `00-${sc.traceId}-${sc.spanId}-0${(sc.traceFlags & 1).toString()}`;
}

/** pino `mixin`: the trace and span ids on every log line written inside a span (named as the Temporal SDK names them on activity log lines). */
function traceLogFields(): { trace_id?: string; span_id?: string } {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

/** pino options to add to a logger: the mixin when tracing is on, nothing otherwise. */
export function tracingLogOptions(): { mixin?: () => object } {
  return runtime ? { mixin: traceLogFields } : {};
}

export { SpanKind };
