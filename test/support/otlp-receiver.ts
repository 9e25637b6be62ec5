// An OTLP/HTTP trace receiver on loopback, for tests: it accepts POST /v1/traces in protobuf (what
// the service's exporter sends) or JSON and keeps every span. The protobuf is decoded here by hand
// (the few fields of opentelemetry/proto/trace/v1/trace.proto a test reads), so the check does not
// lean on the exporter's own encoder.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** The spans this one links to (not its parent). */
  links: { traceId: string; spanId: string }[];
}

export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Every request body received, as sent (a scan for a secret reads all of it: events, links, resources). */
  bodies: Buffer[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      const body = Buffer.concat(chunks);
      bodies.push(body);
      try {
        spans.push(...(String(req.headers['content-type']).includes('json') ? fromJson(JSON.parse(body.toString('utf8'))) : fromProtobuf(body)));
      } catch {
        return void res.writeHead(400).end();
      }
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    bodies,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

type Field = { no: number; wire: number; value: bigint | Buffer };

/** The fields of one protobuf message (varints, 64/32-bit and length-delimited values). */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    if (wire === 0) out.push({ no, wire, value: varint() });
    else {
      const len = wire === 1 ? 8 : wire === 5 ? 4 : wire === 2 ? Number(varint()) : -1;
      if (len < 0) throw new Error(`unsupported wire type ${wire}`);
      out.push({ no, wire, value: buf.subarray(i, i + len) });
      i += len;
    }
  }
  return out;
}

const sub = (f: Field[], no: number) => f.filter((x) => x.no === no).map((x) => x.value as Buffer);
const str = (f: Field[], no: number) => sub(f, no)[0]?.toString('utf8') ?? '';
const hex = (f: Field[], no: number) => sub(f, no)[0]?.toString('hex') ?? '';

function anyValue(buf: Buffer): string | number | boolean {
  const f = fields(buf)[0];
  if (!f) return '';
  if (f.no === 1) return (f.value as Buffer).toString('utf8');
  if (f.no === 2) return f.value === 1n;
  if (f.no === 3) return Number(f.value as bigint);
  if (f.no === 4) return (f.value as Buffer).readDoubleLE(0);
  return '';
}

function attributes(kvs: Buffer[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of kvs) {
    const f = fields(kv);
    out[str(f, 1)] = anyValue(sub(f, 2)[0] ?? Buffer.alloc(0));
  }
  return out;
}

// ExportTraceServiceRequest.resource_spans(1) → ResourceSpans{resource(1), scope_spans(2)} →
// ScopeSpans{spans(2)} → Span{trace_id(1), span_id(2), parent_span_id(4), name(5), kind(6), attributes(9),
// links(13)} with Link{trace_id(1), span_id(2)}.
function fromProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of sub(fields(body), 1)) {
    const rsf = fields(rs);
    const resource = attributes(sub(fields(sub(rsf, 1)[0] ?? Buffer.alloc(0)), 1));
    for (const ss of sub(rsf, 2)) {
      for (const sp of sub(fields(ss), 2)) {
        const f = fields(sp);
        out.push({
          service: String(resource['service.name'] ?? ''),
          traceId: hex(f, 1),
          spanId: hex(f, 2),
          parentSpanId: hex(f, 4),
          name: str(f, 5),
          kind: Number(f.find((x) => x.no === 6)?.value ?? 0n),
          attributes: attributes(sub(f, 9)),
          links: sub(f, 13).map((l) => {
            const lf = fields(l);
            return { traceId: hex(lf, 1), spanId: hex(lf, 2) };
          }),
        });
      }
    }
  }
  return out;
}

function fromJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const value = (v: any) => v?.stringValue ?? v?.boolValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.doubleValue) ?? '';
  const attrs = (kvs: any[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));
  for (const rs of body.resourceSpans ?? []) {
    const resource = attrs(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const sp of ss.spans ?? []) {
        out.push({
          service: String(resource['service.name'] ?? ''),
          traceId: sp.traceId,
          spanId: sp.spanId,
          parentSpanId: sp.parentSpanId ?? '',
          name: sp.name,
          kind: sp.kind ?? 0,
          attributes: attrs(sp.attributes),
          links: (sp.links ?? []).map((l: any) => ({ traceId: l.traceId, spanId: l.spanId })),
        });
      }
    }
  }
  return out;
}
