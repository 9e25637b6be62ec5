// The playground: one form per model, generated from GET /v1/models (its inputs, aspect ratios,
// resolutions, durations and prompt length). Every change is priced by the create's dry run
// (?dry_run=true): the price, or the API's refusal, shows before anything is charged. Files are
// dropped or picked on their fields and uploaded at once (./upload-field.tsx). Submitting creates
// the job and follows it live to its outputs.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { jobPriorities, type ImageCreate, type JobKind, type ModelInfo } from '@mediagen/client';
import { client } from '../api.js';
import { ErrorNote, failure, useLoad } from '../ui.js';
import { JobProgress } from './progress.js';
import { UploadField, uploadFieldOf } from './upload-field.js';

const kindOfModel: Record<ModelInfo['kind'], JobKind> = { image: 'images', video: 'videos', replace_actor: 'replace-actors', talking_actor: 'talking-actors' };
/** The options every kind's create takes, each drawn as the field its type needs (docs/api/*.md). */
const optionLabels: Record<string, string> = {
  priority: 'Priority',
  deadline_seconds: 'Deadline in seconds (optional)',
  webhook_url: 'Webhook URL (optional)',
  webhook_events: 'Webhook events',
  tags: 'Tags (optional, comma-separated)',
  metadata: 'Metadata (optional, one key=value per line)',
};
/** Inputs the form draws itself; the model's other inputs are text (ids and URLs). */
const drawn = new Set([
  'prompt',
  'negative_prompt',
  'aspect_ratio',
  'resolution',
  'duration',
  'count',
  'seed',
  'audio',
  'output_format',
  'output_quality',
  'reuse',
  ...Object.keys(optionLabels),
]);
/** Inputs sent as numbers (the form gives strings). */
const numeric = new Set(['count', 'duration', 'seed', 'deadline_seconds', 'output_quality']);
/** Inputs sent as true or false (a choice whose empty value leaves the API's default). */
const booleans = new Set(['audio', 'reuse']);
/** The webhook events a create may subscribe to (every kind's body takes the same). */
const webhookEvents = ['generating', 'completed', 'failed'] as const satisfies NonNullable<ImageCreate['webhook_events']>;

/** The create options the model takes, below its own fields. */
function OptionFields({ inputs }: { inputs: readonly string[] }) {
  const labels = optionLabels;
  const has = (k: string) => inputs.includes(k);
  return (
    <>
      {has('priority') && (
        <label>
          {labels.priority}
          <select name="priority">
            <option value="">normal (default)</option>
            {jobPriorities
              .filter((p) => p !== 'normal')
              .map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
          </select>
        </label>
      )}
      {has('deadline_seconds') && (
        <label>
          {labels.deadline_seconds}
          <input name="deadline_seconds" type="number" min={1} step={1} />
        </label>
      )}
      {has('webhook_url') && (
        <label class="wide">
          {labels.webhook_url}
          <input name="webhook_url" type="url" placeholder="https://" />
        </label>
      )}
      {has('webhook_events') && (
        <fieldset class="wide">
          <legend>{labels.webhook_events} (optional; the default is completed and failed)</legend>
          {webhookEvents.map((e) => (
            <label key={e} class="check">
              <input type="checkbox" name="webhook_events" value={e} /> {e}
            </label>
          ))}
        </fieldset>
      )}
      {has('tags') && (
        <label class="wide">
          {labels.tags}
          <input name="tags" type="text" placeholder="customer:acme, campaign:winter" />
        </label>
      )}
      {has('metadata') && (
        <label class="wide">
          {labels.metadata}
          <textarea name="metadata" rows={2} placeholder="order=A-7" />
        </label>
      )}
    </>
  );
}

/** `key=value` lines as an object; a line without `=` is kept whole as a key with an empty value, which the API refuses by name. */
function metadataOf(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const at = t.indexOf('=');
    if (at < 0) out[t] = '';
    else out[t.slice(0, at).trim()] = t.slice(at + 1).trim();
  }
  return out;
}

type Body = Record<string, unknown>;

function kindApi(kind: JobKind) {
  return { images: client.images, videos: client.videos, 'replace-actors': client.replaceActors, 'talking-actors': client.talkingActors }[kind];
}

function Choice({ name, label, values, value }: { name: string; label: string; values: (string | number)[]; value: string | number | null }) {
  return (
    <label>
      {label}
      <select name={name} value={value ?? undefined}>
        {values.map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    </label>
  );
}

/** The stored format of an image's outputs (GET /v1/models output_formats, the first the default) and its quality, taken with jpeg or webp only. */
function OutputFields({ model }: { model: ModelInfo }) {
  const [format, setFormat] = useState('');
  if (!model.inputs.includes('output_format') || model.output_formats.length < 2) return null;
  return (
    <>
      <label>
        Output format
        <select name="output_format" value={format} onChange={(e) => setFormat((e.currentTarget as HTMLSelectElement).value)}>
          <option value="">{model.output_formats[0]} (default)</option>
          {model.output_formats.slice(1).map((f) => (
            <option key={f} value={f}>
              {f}
            </option>
          ))}
        </select>
      </label>
      {model.inputs.includes('output_quality') && format !== '' && format !== 'png' && (
        <label>
          Quality (optional, 1–100)
          <input name="output_quality" type="number" min={1} max={100} step={1} />
        </label>
      )}
    </>
  );
}

function ModelFields({ model }: { model: ModelInfo }) {
  const d = model.durations;
  const durations = d ? ('values' in d ? d.values : Array.from({ length: d.max - d.min + 1 }, (_, i) => d.min + i)) : null;
  const [chars, setChars] = useState(0);
  return (
    <>
      {model.inputs.includes('prompt') && (
        <label class="wide">
          Prompt {model.prompt_length ? `(${chars} of at most ${model.prompt_length.max} characters)` : ''}
          <textarea name="prompt" rows={4} onInput={(e) => setChars([...(e.currentTarget as HTMLTextAreaElement).value].length)} />
        </label>
      )}
      {model.inputs.includes('aspect_ratio') && model.aspect_ratios.length > 0 && (
        <Choice name="aspect_ratio" label="Aspect ratio" values={model.aspect_ratios} value={model.default_aspect_ratio} />
      )}
      {model.inputs.includes('resolution') && model.resolutions.length > 0 && (
        <Choice name="resolution" label="Resolution" values={model.resolutions} value={model.default_resolution} />
      )}
      {durations && model.inputs.includes('duration') && (
        <Choice name="duration" label="Duration (seconds)" values={durations} value={model.default_duration} />
      )}
      {model.inputs.includes('count') && (
        <label>
          Count
          <input name="count" type="number" min={1} max={4} value={1} />
        </label>
      )}
      {/* Generation controls: only those some route serving the model here takes (docs/api/generation-controls.md). */}
      {model.controls.includes('seed') && (
        <label>
          Seed (optional)
          <input name="seed" type="number" min={0} max={2147483647} step={1} />
        </label>
      )}
      {model.controls.includes('audio') && (
        <label>
          Audio
          <select name="audio">
            <option value="">model default</option>
            <option value="true">on</option>
            <option value="false">off</option>
          </select>
        </label>
      )}
      {model.inputs.includes('negative_prompt') && (
        <label class="wide">
          Negative prompt (optional)
          <textarea name="negative_prompt" rows={2} />
        </label>
      )}
      <OutputFields model={model} />
      {model.inputs.includes('reuse') && (
        <label>
          Reuse an identical request
          <select name="reuse">
            <option value="">workspace setting</option>
            <option value="true">yes</option>
            <option value="false">no</option>
          </select>
        </label>
      )}
      {model.inputs
        .filter((i) => uploadFieldOf(i))
        .map((i) => (
          <UploadField key={i} name={i} multiple={uploadFieldOf(i) === 'many'} />
        ))}
      <OptionFields inputs={model.inputs} />
      {model.inputs
        .filter((i) => !drawn.has(i) && !uploadFieldOf(i))
        .map((i) => (
          <label key={i} class="wide">
            {i.replace(/_/g, ' ')} (optional)
            {i.endsWith('url') ? <input name={i} type="url" /> : <input name={i} type="text" />}
          </label>
        ))}
    </>
  );
}

function bodyOf(form: HTMLFormElement, model: ModelInfo): Body {
  const body: Body = { model: model.name };
  const events: string[] = [];
  for (const [k, raw] of new FormData(form)) {
    const v = String(raw).trim();
    if (!v) continue;
    if (k === 'webhook_events') events.push(v);
    else if (k === 'tags')
      body[k] = v
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean);
    else if (k === 'metadata') body[k] = metadataOf(v);
    else body[k] = numeric.has(k) ? Number(v) : booleans.has(k) ? v === 'true' : uploadFieldOf(k) === 'many' ? v.split(',') : v;
  }
  if (events.length > 0) body.webhook_events = events;
  return body;
}

export function PlaygroundPage() {
  const models = useLoad(() => client.models.list(), []);
  const projects = useLoad(() => client.projects.list({ limit: 100 }), []);
  const [name, setName] = useState<string | null>(null);
  const [quote, setQuote] = useState<{ price: number; available: number; sufficient: boolean } | null>(null);
  const [refusal, setRefusal] = useState<string | null>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The newest dry run: an older one answering after it (the form changed again meanwhile) shows nothing.
  const latestQuote = useRef(0);
  const usable = useMemo(() => (models.value?.data ?? []).filter((m) => m.served_by !== 'unavailable'), [models.value]);
  const model = usable.find((m) => m.name === name) ?? usable[0] ?? null;
  useEffect(() => {
    setQuote(null);
    setRefusal(null);
  }, [model?.name]);
  if (models.error) return <ErrorNote error={models.error} />;
  if (!model) return <p aria-busy="true">Loading models…</p>;

  const priceOf = async (form: HTMLFormElement): Promise<Body | null> => {
    const body = bodyOf(form, model);
    const seq = ++latestQuote.current;
    const newest = () => seq === latestQuote.current;
    setRefusal(null);
    try {
      const q = await kindApi(kindOfModel[model.kind]).quote(body as never);
      if (newest()) {
        setQuote({ price: q.price, available: q.available, sufficient: q.sufficient });
        if (!q.sufficient) setRefusal(`The balance (${q.available} credits) is below the price (${q.price} credits).`);
      }
      return q.sufficient ? body : null;
    } catch (err) {
      if (newest()) {
        setQuote(null);
        setRefusal(failure(err));
      }
      return null;
    }
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const body = await priceOf(e.currentTarget as HTMLFormElement);
      if (!body) return;
      const created = await kindApi(kindOfModel[model.kind]).generate(body as never);
      setJobId(created.id);
    } catch (err) {
      setRefusal(failure(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <h1>Playground</h1>
      <ErrorNote error={projects.error} />
      <form class="playground" onSubmit={(e) => void submit(e)} onChange={(e) => void priceOf(e.currentTarget as HTMLFormElement)} key={model.name}>
        <label>
          Model
          <select id="model" value={model.name} onChange={(e) => setName((e.currentTarget as HTMLSelectElement).value)}>
            {usable.map((m) => (
              <option key={m.name} value={m.name}>
                {m.name} ({m.kind.replace('_', ' ')})
              </option>
            ))}
          </select>
        </label>
        <label>
          Project
          <select name="project_id">
            {(projects.value?.data ?? []).map((p) => (
              <option key={p.id} value={p.id}>
                {p.name}
              </option>
            ))}
          </select>
        </label>
        <ModelFields model={model} />
        <p class="price" aria-live="polite">
          {quote ? `Price: ${quote.price} credits · available: ${quote.available} credits` : `Price: ${model.price.credits} credits per ${model.price.per}`}
          {model.placeholder ? ' · served by the local renderer (placeholder media)' : ''}
        </p>
        <ErrorNote error={refusal} />
        <button type="submit" disabled={busy}>
          Generate
        </button>
      </form>
      {jobId && (
        <>
          <h2>
            <a href={`#/jobs/${jobId}`}>{jobId}</a>
          </h2>
          <JobProgress id={jobId} key={jobId} />
        </>
      )}
    </>
  );
}
