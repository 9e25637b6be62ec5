// Usage reports: GET /v1/usage as JSON pages, or the whole range as one CSV document.
import type { MediaGenClient } from './client.js';
import type { Page, RequestOptions, UsageQuery } from './types.js';
import { query } from './util.js';

export class Usage {
  constructor(private readonly client: MediaGenClient) {}

  /** GET /v1/usage: credits spent, refunded and net and job counts per UTC day or hour (one page; `totals` covers the range). */
  get(q?: UsageQuery, o?: RequestOptions): Promise<Page<'get_usage'>> {
    return this.client.request<Page<'get_usage'>>('GET', `/v1/usage${query(q)}`, o);
  }

  /** The whole range as CSV (RFC 4180): every page asked with `Accept: text/csv`, the header row once. */
  async csv(q: Omit<UsageQuery, 'cursor'> = {}, o?: RequestOptions): Promise<string> {
    let out = '';
    let cursor: string | null = null;
    do {
      const res = await this.client.send('GET', `/v1/usage${query({ ...q, cursor: cursor ?? undefined })}`, { ...o, accept: 'text/csv' });
      const text = await res.text();
      // The header row holds no quoted field: it ends at the first line break.
      out += out ? text.slice(text.indexOf('\r\n') + 2) : text;
      cursor = res.headers.get('next-cursor');
    } while (cursor);
    return out;
  }
}
