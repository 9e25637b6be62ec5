// The console's shell: sign-in, then the pages by hash route (#/playground, #/jobs, #/jobs/<id>,
// #/pipelines, #/pipelines/<id>, #/usage, #/budgets, #/webhooks, #/endpoints, #/keys). Whether the browser is signed in, the API says (GET /v1/balance with the
// session cookie): 401 shows the sign-in form.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { client, isUnauthorized, messageOf, signIn, signOut } from './api.js';
import { JobsPage } from './pages/jobs.js';
import { JobPage } from './pages/job.js';
import { PlaygroundPage } from './pages/playground.js';
import { UsagePage } from './pages/usage.js';
import { WebhooksPage } from './pages/webhooks.js';
import { PipelinePage, PipelinesPage } from './pages/pipelines.js';
import { BudgetsPage } from './pages/budgets.js';
import { EndpointsPage } from './pages/endpoints.js';
import { KeysPage } from './pages/keys.js';
import { ErrorNote } from './ui.js';

const pages = [
  { path: '#/playground', label: 'Playground' },
  { path: '#/jobs', label: 'Jobs' },
  { path: '#/pipelines', label: 'Pipelines' },
  { path: '#/usage', label: 'Usage' },
  { path: '#/budgets', label: 'Budgets' },
  { path: '#/webhooks', label: 'Webhooks' },
  { path: '#/endpoints', label: 'Endpoints' },
  { path: '#/keys', label: 'API keys' },
];

function useHash(): string {
  const [hash, setHash] = useState(location.hash || '#/playground');
  useEffect(() => {
    const on = () => setHash(location.hash || '#/playground');
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function SignIn({ onSignedIn }: { onSignedIn(): void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const input = form.elements.namedItem('api_key') as HTMLInputElement;
    setBusy(true);
    setError(null);
    try {
      await signIn(input.value);
      input.value = '';
      onSignedIn();
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>Sign in to the console</h1>
      <p>Paste a workspace API key. It is exchanged for a browser session and not kept in this page.</p>
      <form onSubmit={submit}>
        <label for="api_key">API key</label>
        <input id="api_key" name="api_key" type="password" autocomplete="off" required placeholder="mg_live_…" />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

function Page({ hash }: { hash: string }) {
  const job = /^#\/jobs\/([A-Za-z0-9_]+)$/.exec(hash);
  if (job) return <JobPage id={job[1]!} />;
  if (hash.startsWith('#/jobs')) return <JobsPage />;
  const pipeline = /^#\/pipelines\/([A-Za-z0-9_]+)$/.exec(hash);
  if (pipeline) return <PipelinePage id={pipeline[1]!} />;
  if (hash.startsWith('#/pipelines')) return <PipelinesPage />;
  if (hash.startsWith('#/usage')) return <UsagePage />;
  if (hash.startsWith('#/budgets')) return <BudgetsPage />;
  if (hash.startsWith('#/webhooks')) return <WebhooksPage />;
  if (hash.startsWith('#/endpoints')) return <EndpointsPage />;
  if (hash.startsWith('#/keys')) return <KeysPage />;
  return <PlaygroundPage />;
}

function App() {
  const hash = useHash();
  const [state, setState] = useState<'checking' | 'out' | 'in'>('checking');
  const [error, setError] = useState<string | null>(null);
  const check = () =>
    client.balance
      .get()
      .then(() => setState('in'))
      .catch((err: unknown) => {
        setState('out');
        if (!isUnauthorized(err)) setError(messageOf(err));
      });
  useEffect(() => {
    void check();
    // A page's API call answered 401 (the session ended, or its key was revoked): back to sign-in.
    const ended = () => setState('out');
    addEventListener('console:signed-out', ended);
    return () => removeEventListener('console:signed-out', ended);
  }, []);
  if (state === 'checking') return <main id="main" aria-busy="true" />;
  if (state === 'out')
    return (
      <>
        <SignIn onSignedIn={() => void check()} />
        <ErrorNote error={error} />
      </>
    );
  const out = async () => {
    await signOut().catch(() => undefined);
    setState('out');
  };
  const current = '#/' + (hash.split('/')[1] ?? '');
  return (
    <>
      <header class="top">
        <span class="brand">Media generation console</span>
        <nav aria-label="Console">
          <ul>
            {pages.map((p) => (
              <li key={p.path}>
                <a href={p.path} aria-current={current === p.path ? 'page' : undefined}>
                  {p.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button type="button" class="secondary" onClick={() => void out()}>
          Sign out
        </button>
      </header>
      <main id="main">
        <Page hash={hash} />
      </main>
    </>
  );
}

render(<App />, document.getElementById('console')!);
