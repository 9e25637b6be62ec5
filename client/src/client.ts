// The typed client. Runs wherever `fetch` does (Node 20+, browsers, workers): no Node built-ins here;
// file paths and streams live in ./node.ts. Request and response types (./types.ts) come from ./openapi.ts,
// generated from the gateway's OpenAPI document (`npm run client:types`).
import { MediaGenError, errorFromResponse } from './errors.js';
import { followEvents, statusEvents, terminal } from './events.js';
import { modelWarningOf, warnOnce } from './warnings.js';
import { newIdempotencyKey, query, sleep } from './util.js';
import { Usage } from './usage.js';
import { jobPaths, kindOfJobId, mimeTypeOf } from './types.js';
import type {
  AnyJob,
  ClientOptions,
  CreateBodies,
  CreatedData,
  DirectUploadRecord,
  DryRunQuote,
  EventsOptions,
  FileUpload,
  Health,
  ImageCreate,
  JobEvent,
  JobKind,
  JobListQuery,
  JobRecords,
  JobRef,
  JobTimeline,
  ModelWarning,
  Page,
  Readiness,
  ReplaceActorCreate,
  RequestOptions,
  SendOptions,
  TalkingActorCreate,
  UploadFromUrl,
  UploadMimeType,
  UrlResult,
  VideoCreate,
  WaitOptions,
  WaitResult,
} from './types.js';
// The types and tables live in ./types.ts; the package's entry exports them from here.
export * from './types.js';
export { sleep } from './util.js';
import { webhookDeliveriesApi } from './webhook-deliveries.js';
import { webhookEndpointsApi } from './webhook-endpoints.js';
import { actorsApi, apiKeysApi, auditEventsApi, balanceApi, budgetsApi, modelsApi, projectsApi, queueApi, voicesApi } from './resources.js';
import { workspaceEventsApi } from './workspace-events.js';
import { pipelinesApi } from './pipelines.js';
import { batchesApi } from './batches.js';
import { bulkActionsApi } from './bulk-actions.js';
import { directUploadsApi } from './direct-uploads.js';

// ------------------------------------------------------------------ the client

export class MediaGenClient {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  /** Set once the gateway answered 404 for an event stream: poll from then on. */
  private eventsUnsupported = false;
  private readonly onWarning: (warning: ModelWarning) => void;

  constructor(opts: ClientOptions) {
    if (!opts.apiKey && !opts.session) throw new MediaGenError({ status: 0, code: 'missing_api_key', message: 'an API key is required (MEDIAGEN_API_KEY)' });
    if (!opts.baseUrl) throw new MediaGenError({ status: 0, code: 'missing_base_url', message: 'a base URL is required (MEDIAGEN_BASE_URL)' });
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    this.apiKey = opts.session ? '' : (opts.apiKey ?? '');
    this.maxRetries = opts.maxRetries ?? 2;
    this.maxRetryDelayMs = opts.maxRetryDelayMs ?? 60_000;
    this.fetchImpl = opts.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.onWarning = opts.onWarning ?? warnOnce();
  }

  /**
   * One API call: JSON or FormData body, bearer auth, 429 retried after `retry_after_ms` (the same
   * Idempotency-Key on every attempt), any other non-2xx thrown as MediaGenError.
   */
  async request<T>(method: string, path: string, opts: SendOptions = {}): Promise<T> {
    const res = await this.send(method, path, opts);
    let text: string;
    try {
      text = await res.text();
    } catch (cause) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      // The connection closed while the body was arriving.
      throw new MediaGenError({
        status: 0,
        code: 'network_error',
        message: `the answer to ${method} ${path} was cut off: ${(cause as Error).message}`,
        requestId: res.headers.get('x-request-id'),
        cause,
      });
    }
    try {
      return (text ? JSON.parse(text) : null) as T;
    } catch (cause) {
      throw new MediaGenError({
        status: res.status,
        code: 'invalid_response',
        message: `the gateway answered ${path} with a body that is not JSON`,
        requestId: res.headers.get('x-request-id'),
        cause,
      });
    }
  }

  /** Like request(), but hands back the 2xx Response unread (streams). */
  async send(method: string, path: string, opts: SendOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { ...opts.headers, accept: opts.accept ?? 'application/json' };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    let body: BodyInit | undefined;
    if (opts.body instanceof FormData) body = opts.body;
    else if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    if (opts.idempotent) headers['idempotency-key'] = opts.idempotencyKey ?? newIdempotencyKey();
    let networkRetried = false;
    for (let attempt = 0; ; attempt++) {
      let res: Response;
      try {
        res = await this.fetchImpl(`${this.baseUrl}${path}`, { method, headers, body, signal: opts.signal ?? null });
      } catch (cause) {
        if (opts.signal?.aborted) throw opts.signal.reason;
        // A kept-alive connection the server closed between two polls: a read is safe to repeat once.
        if (method === 'GET' && !networkRetried) {
          networkRetried = true;
          attempt--;
          continue;
        }
        throw new MediaGenError({ status: 0, code: 'network_error', message: `could not reach ${this.baseUrl}: ${(cause as Error).message}`, cause });
      }
      if (res.ok) {
        const warning = modelWarningOf(res.headers);
        if (warning) this.onWarning(warning);
        return res;
      }
      const err = errorFromResponse(res, await res.text());
      const delay = err.retryAfterMs ?? 1000;
      if (res.status === 429 && attempt < this.maxRetries && delay <= this.maxRetryDelayMs) {
        await sleep(delay, opts.signal);
        continue;
      }
      throw err;
    }
  }

  private async data<T>(method: string, path: string, opts: RequestOptions & { body?: unknown; idempotent?: boolean } = {}): Promise<T> {
    return (await this.request<{ data: T }>(method, path, opts)).data;
  }

  // ---------------------------------------------------------------- discovery

  readonly projects = projectsApi(this);
  readonly actors = actorsApi(this);
  readonly voices = voicesApi(this);
  readonly models = modelsApi(this);
  readonly queue = queueApi(this);

  // ---------------------------------------------------------------- the workspace's records

  readonly auditEvents = auditEventsApi(this);
  readonly usage = new Usage(this);
  readonly budgets = budgetsApi(this);
  readonly balance = balanceApi(this);
  readonly apiKeys = apiKeysApi(this);
  readonly webhookDeliveries = webhookDeliveriesApi(this);
  readonly webhookEndpoints = webhookEndpointsApi(this);
  readonly events = workspaceEventsApi(this);
  readonly pipelines = pipelinesApi(this);
  readonly batches = batchesApi(this);
  readonly bulkActions = bulkActionsApi(this);

  // ---------------------------------------------------------------- jobs

  readonly jobs = {
    /** GET /v1/jobs: every kind, newest first, where the gateway serves it. */
    list: (q?: JobListQuery, o?: RequestOptions) => this.request<Page<'get_jobs'>>('GET', `/v1/jobs${query(q)}`, o),
    /** The status of any job, its kind told by its id. */
    get: (id: string, o?: RequestOptions) => this.getJob(this.refOf(id), o),
    /** GET /v1/jobs/{id}/timeline: what happened to the job, in order, with the credits charged and refunded (its receipt). */
    timeline: (id: string, o?: RequestOptions) => this.data<JobTimeline>('GET', `/v1/jobs/${encodeURIComponent(id)}/timeline`, o),
  };

  /** Yields every item of a list endpoint, following `next_cursor`. */
  async *paginate<T>(list: (q: { cursor?: string; limit?: number }) => Promise<{ data: T[]; next_cursor?: string | null }>, limit = 100): AsyncGenerator<T> {
    let cursor: string | undefined;
    do {
      const page = await list(cursor ? { cursor, limit } : { limit });
      yield* page.data;
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  // ---------------------------------------------------------------- uploads

  /** POST /v1/upload with a Blob (or File). Node paths and streams: `uploadFile` from `@mediagen/client/node`. */
  async uploadFile(file: Blob, opts: RequestOptions & { projectId: string; filename?: string }): Promise<FileUpload> {
    const form = new FormData();
    form.set('project_id', opts.projectId);
    const name = opts.filename ?? ((file as { name?: unknown }).name as string | undefined) ?? 'upload';
    form.set('file', file, name);
    return this.data<FileUpload>('POST', '/v1/upload', { ...opts, body: form, idempotent: true });
  }

  /** POST /v1/upload-from-url: the gateway fetches a public HTTPS image or video. */
  async uploadFromUrl(url: string, opts: RequestOptions & { projectId: string }): Promise<FileUpload> {
    const body: UploadFromUrl = { url, project_id: opts.projectId };
    return this.data<FileUpload>('POST', '/v1/upload-from-url', { ...opts, body, idempotent: true });
  }

  /** Direct uploads: the bytes go straight to storage with a presigned POST, never through a gateway. */
  readonly uploads = directUploadsApi(this);

  /**
   * A direct upload in one call: create, send the Blob to storage with the presigned POST, complete.
   * The MIME type is the Blob's, else guessed from the file name; storage refuses any other size or
   * type, and completion checks the bytes as POST /v1/upload does.
   */
  async uploadDirect(file: Blob, opts: RequestOptions & { projectId: string; filename?: string; mimeType?: UploadMimeType }): Promise<DirectUploadRecord> {
    const name = opts.filename ?? ((file as { name?: unknown }).name as string | undefined) ?? 'upload';
    const mime = opts.mimeType ?? (file.type ? (file.type as UploadMimeType) : null) ?? mimeTypeOf(name);
    if (!mime)
      throw new MediaGenError({
        status: 0,
        code: 'unknown_mime_type',
        message: `cannot tell the type of ${name}: pass mimeType (image/jpeg, image/png, image/webp, video/mp4, video/quicktime or video/webm)`,
      });
    const created = await this.uploads.create({ project_id: opts.projectId, name, mime_type: mime, size: file.size }, opts);
    const form = new FormData();
    for (const [k, v] of Object.entries(created.upload.fields)) form.append(k, v);
    form.append('file', file.type === mime ? file : new Blob([file], { type: mime }), name);
    let res: Response;
    try {
      res = await this.fetchImpl(created.upload.url, { method: 'POST', body: form, signal: opts.signal ?? null });
    } catch (cause) {
      if (opts.signal?.aborted) throw opts.signal.reason;
      throw new MediaGenError({
        status: 0,
        code: 'network_error',
        message: `could not reach storage at ${new URL(created.upload.url).origin}: ${(cause as Error).message}`,
        cause,
      });
    }
    const text = await res.text();
    if (!res.ok) {
      // Storage answers S3 XML (<Code>EntityTooLarge</Code>…), not the API's error envelope.
      const code = /<Code>([^<]+)<\/Code>/.exec(text)?.[1] ?? `http_${res.status}`;
      throw new MediaGenError({ status: res.status, code: 'storage_refused', message: `storage refused upload ${created.id}: ${code}`, body: text });
    }
    return this.uploads.complete(created.id, { signal: opts.signal });
  }

  // ---------------------------------------------------------------- service

  /** GET /healthz: the gateway process is up. */
  health(o?: RequestOptions): Promise<Health> {
    return this.request<Health>('GET', '/healthz', o);
  }
  /** GET /readyz: Postgres, Temporal and storage reachable (503, a MediaGenError whose body names the part down, otherwise). */
  ready(o?: RequestOptions): Promise<Readiness> {
    return this.request<Readiness>('GET', '/readyz', o);
  }
  /** GET /v1/openapi.json: the OpenAPI 3.1 document these types were generated from. */
  openapi(o?: RequestOptions): Promise<Record<string, unknown>> {
    return this.request<Record<string, unknown>>('GET', '/v1/openapi.json', o);
  }

  // ---------------------------------------------------------------- jobs

  private kindMethods<K extends JobKind>(kind: K) {
    const p = jobPaths[kind];
    return {
      /** GET {base}: this kind's jobs, newest first (the same filters as jobs.list). */
      list: (q?: JobListQuery, o?: RequestOptions) => this.request<{ data: JobRecords[K][]; next_cursor: string | null }>('GET', `${p.base}${query(q)}`, o),
      get: (id: string, o?: RequestOptions) => this.data<JobRecords[K]>('GET', `${p.base}/${encodeURIComponent(id)}`, o),
      url: (id: string, o?: RequestOptions) => this.data<UrlResult>('GET', `${p.base}/${encodeURIComponent(id)}/url`, o),
      cancel: (id: string, o?: RequestOptions) => this.data<JobRecords[K]>('POST', `${p.base}/${encodeURIComponent(id)}/cancel`, o),
      /** DELETE {base}/{id}: removes a finished job's outputs from storage (the record stays; its URL then answers 410). */
      deleteOutputs: (id: string, o?: RequestOptions) => this.data<JobRecords[K]>('DELETE', `${p.base}/${encodeURIComponent(id)}`, o),
      /** POST the create with ?dry_run=true: validation and price, nothing created or charged. */
      quote: (body: CreateBodies[K], o?: RequestOptions) => this.data<DryRunQuote>('POST', `${jobPaths[kind].create}?dry_run=true`, { ...o, body }),
      /** GET …/{id}/events (server-sent events), where the gateway offers it: see jobEvents. */
      events: (id: string, o?: EventsOptions) => this.jobEvents({ kind, id }, o),
    };
  }

  private async create<R extends object, K extends JobKind>(kind: K, body: unknown, o?: RequestOptions): Promise<R & { kind: K }> {
    const data = await this.data<R>('POST', jobPaths[kind].create, { ...o, body, idempotent: true });
    return { ...data, kind };
  }

  readonly images = {
    generate: (body: ImageCreate, o?: RequestOptions) => this.create<CreatedData<'post_images_generate'>, 'images'>('images', body, o),
    ...this.kindMethods('images'),
  };
  readonly videos = {
    generate: (body: VideoCreate, o?: RequestOptions) => this.create<CreatedData<'post_videos_generate'>, 'videos'>('videos', body, o),
    ...this.kindMethods('videos'),
  };
  readonly replaceActors = {
    generate: (body: ReplaceActorCreate, o?: RequestOptions) =>
      this.create<CreatedData<'post_replace_actors_generations'>, 'replace-actors'>('replace-actors', body, o),
    ...this.kindMethods('replace-actors'),
  };
  readonly talkingActors = {
    generate: (body: TalkingActorCreate, o?: RequestOptions) =>
      this.create<CreatedData<'post_talking_actors_generate'>, 'talking-actors'>('talking-actors', body, o),
    ...this.kindMethods('talking-actors'),
  };

  private byKind(kind: JobKind) {
    return { images: this.images, videos: this.videos, 'replace-actors': this.replaceActors, 'talking-actors': this.talkingActors }[kind];
  }

  /** `{ kind, id }` of a job id (its prefix tells the kind). */
  refOf(id: string): JobRef {
    const kind = kindOfJobId(id);
    if (!kind) throw new MediaGenError({ status: 0, code: 'invalid_job_id', message: `${id} is not a job id (img_, vid_, rpl_ or tlk_ …)` });
    return { kind, id };
  }

  getJob<K extends JobKind>(ref: JobRef<K>, o?: RequestOptions): Promise<JobRecords[K]> {
    return this.byKind(ref.kind).get(ref.id, o) as Promise<JobRecords[K]>;
  }

  jobUrl(ref: JobRef, o?: RequestOptions): Promise<UrlResult> {
    return this.byKind(ref.kind).url(ref.id, o);
  }

  /**
   * Resolves once the job is `completed`, with the job and its output URLs; rejects with the job's
   * MediaGenError (`generation_failed` or `canceled`) once it is `failed`. Follows the live event
   * stream (GET …/{id}/events) where the gateway offers it, else polls with backoff.
   */
  async waitForJob<K extends JobKind>(ref: JobRef<K>, opts: WaitOptions = {}): Promise<WaitResult<JobRecords[K]>> {
    const { signal, onProgress } = opts;
    let last = '';
    const seen = (job: AnyJob) => {
      const key = JSON.stringify([job.status, job.progress, job.error]);
      if (key === last) return false;
      last = key;
      onProgress?.(job);
      return true;
    };

    let job: AnyJob = await this.getJob(ref, { signal });
    seen(job);
    if (!terminal.has(job.status) && opts.events !== false && !this.eventsUnsupported) {
      const followed = await followEvents((o) => this.jobEvents(ref, o), seen, signal);
      if (followed === 'unsupported') this.eventsUnsupported = true;
      else job = followed ?? job;
    }
    let interval = opts.pollIntervalMs ?? 500;
    const maxInterval = opts.maxPollIntervalMs ?? 5000;
    while (!terminal.has(job.status)) {
      await sleep(interval, signal);
      job = await this.getJob(ref, { signal });
      interval = seen(job) ? (opts.pollIntervalMs ?? 500) : Math.min(maxInterval, Math.ceil(interval * 1.5));
    }
    return this.finish(ref, job as JobRecords[K], signal);
  }

  private async finish<J extends AnyJob>(ref: JobRef, job: J, signal?: AbortSignal): Promise<WaitResult<J>> {
    if (job.status === 'failed') {
      throw new MediaGenError({
        status: 409,
        code: job.error?.code ?? 'generation_failed',
        message: `${ref.kind} job ${ref.id} failed: ${job.error?.message ?? 'no reason given'}`,
        body: job,
      });
    }
    const r = await this.jobUrl(ref, { signal });
    return { job, url: r.url, urls: r.urls ?? [r.url] };
  }

  /**
   * One connection to GET /v1/{kind}/{id}/events: yields `{ id, job }` for each `status` event (the
   * job record, as GET answers it) and returns when the stream ends (after the terminal event, or
   * when the connection drops: pass the last `id` as `lastEventId` to resume without replays).
   * Throws MediaGenError 404 where the gateway has no event stream.
   */
  async *jobEvents<K extends JobKind>(ref: JobRef<K>, o: EventsOptions = {}): AsyncGenerator<JobEvent<JobRecords[K]>> {
    const headers: Record<string, string> = o.lastEventId ? { 'last-event-id': o.lastEventId } : {};
    const res = await this.send('GET', `${jobPaths[ref.kind].base}/${encodeURIComponent(ref.id)}/events`, {
      signal: o.signal,
      headers,
      accept: 'text/event-stream',
    });
    yield* statusEvents<JobRecords[K]>(res, ref.kind);
  }
}

export function createClient(opts: ClientOptions): MediaGenClient {
  return new MediaGenClient(opts);
}
