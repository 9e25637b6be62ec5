// A text/event-stream parser (WHATWG "server-sent events" framing) over a fetch body, so the client
// can follow `GET /v1/{kind}/{id}/events` in Node and in browsers alike (EventSource cannot send an
// Authorization header).

export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | null;
}

/** Incremental parser: feed text chunks, get the complete events they finish. */
export function createSseParser(): (chunk: string) => ServerSentEvent[] {
  let buffer = '';
  let event = '';
  let data: string[] = [];
  let id: string | null = null;
  return (chunk) => {
    buffer += chunk;
    const out: ServerSentEvent[] = [];
    let nl: number;
    while ((nl = buffer.search(/\r\n|\r|\n/)) >= 0) {
      // A CR at the end of a chunk may be the first half of CRLF: wait for the next chunk.
      if (buffer[nl] === '\r' && nl === buffer.length - 1) break;
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + (buffer.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (data.length) out.push({ event: event || 'message', data: data.join('\n'), id });
        event = '';
        data = [];
        continue;
      }
      if (line.startsWith(':')) continue; // comment (heartbeat)
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id' && !value.includes('\0')) id = value;
    }
    return out;
  };
}

/** Reads a streamed body and yields its events until the stream ends. */
export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const parse = createSseParser();
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parse(decoder.decode(value, { stream: true }));
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => undefined);
  }
}
