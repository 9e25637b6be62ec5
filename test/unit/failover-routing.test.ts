// Failover's pure parts: which routes a job may move across (shared/routing.ts, from the catalog,
// the keys present, PROVIDER_ROUTES and PROVIDER_FAILOVER), and the circuit breaker's rules
// (db/provider-circuits.ts nextCircuit).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { failoverRoutesFor, liveProviderFor, parseRouteOrder, resolveJobRoute } from '../../shared/routing.js';
import { routeFor } from '../../shared/catalog.js';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { nextCircuit, type CircuitPolicy } from '../../db/provider-circuits.js';
import type { CircuitRow } from '../../db/repos/provider-circuits.js';
import { liveKeys } from '../support/provider-keys.js';

const keys = liveKeys({ FAL_KEY: 'f', XAI_API_KEY: 'x' });
const grok = routeFor('grok-video')!;

describe('failover routes', () => {
  test('grok-video with both keys: fal, then xAI, stored with the job', () => {
    assert.deepEqual(failoverRoutesFor(keys, grok), [
      { provider: 'fal', provider_model_id: 'xai/grok-imagine-video/text-to-video' },
      { provider: 'xai', provider_model_id: 'grok-imagine-video' },
    ]);
    assert.deepEqual(
      resolveJobRoute(keys, grok)?.routes?.map((r) => r.provider),
      ['fal', 'xai'],
    );
  });

  test('one live route, failover off, or the local renderer: no routes stored', () => {
    assert.equal(failoverRoutesFor({ ...keys, XAI_API_KEY: undefined }, grok), undefined);
    assert.equal(failoverRoutesFor({ ...keys, PROVIDER_FAILOVER: false }, grok), undefined);
    assert.equal(resolveJobRoute({ ...keys, PROVIDERS_MODE: 'local' }, grok)?.routes, undefined);
    assert.equal(failoverRoutesFor(keys, routeFor('veo-3.1')!), undefined, 'veo-3.1 has one route here');
  });

  test('PROVIDER_ROUTES reorders a model, and one provider listed keeps it on that route', () => {
    assert.deepEqual(
      failoverRoutesFor({ ...keys, PROVIDER_ROUTES: 'grok-video=xai,fal' }, grok)?.map((r) => r.provider),
      ['xai', 'fal'],
    );
    assert.equal(liveProviderFor({ ...keys, PROVIDER_ROUTES: 'grok-video=xai,fal' }, grok), 'xai');
    assert.equal(failoverRoutesFor({ ...keys, PROVIDER_ROUTES: 'grok-video=xai' }, grok), undefined);
    assert.equal(liveProviderFor({ ...keys, PROVIDER_ROUTES: 'grok-video=xai' }, grok), 'xai');
  });

  test('a PROVIDER_ROUTES entry that is not a model with those routes is refused at start, naming the entry', () => {
    assert.throws(() => parseRouteOrder('grok-video=openai'), /grok-video=openai/);
    assert.throws(() => parseRouteOrder('no-such-model=fal'), /no-such-model=fal/);
    const env = {
      DATABASE_URL: 'postgres://m@127.0.0.1/m',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      S3_ENDPOINT: 'http://127.0.0.1:9000',
      S3_ACCESS_KEY: 'a',
      S3_SECRET_KEY: 'b',
    };
    assert.throws(
      () => loadConfig({ ...env, PROVIDER_ROUTES: 'veo-3.1=xai' }),
      (err: Error) => err instanceof ConfigError && /PROVIDER_ROUTES/.test(err.message),
    );
    assert.doesNotThrow(() => loadConfig({ ...env, PROVIDER_ROUTES: 'grok-video=xai,fal; veo-3.1=fal' }));
  });
});

describe('circuit breaker rules', () => {
  const policy: CircuitPolicy = { windowMs: 60_000, minAttempts: 4, failurePercent: 50, openMs: 30_000, trialMs: 600_000 };
  const t0 = new Date('2026-01-01T00:00:00Z');
  const at = (s: number) => new Date(t0.getTime() + s * 1000);
  const closed: CircuitRow = {
    provider: 'fal',
    model: 'grok-video',
    state: 'closed',
    window_started_at: t0,
    attempts: 0,
    failures: 0,
    opened_at: null,
    trial_at: null,
    trial_token: null,
    last_error: null,
  };
  const run = (row: CircuitRow, outcomes: boolean[], now: Date) =>
    outcomes.reduce((r, ok) => nextCircuit(r, { ok, error: ok ? undefined : 'HTTP 503' }, policy, now), row);

  test('opens once enough attempts in the window failed over at the rate', () => {
    assert.equal(run(closed, [false, false, false], at(1)).state, 'closed', 'fewer attempts than the minimum');
    const open = run(closed, [true, false, true, false], at(1));
    assert.equal(open.state, 'open');
    assert.deepEqual(open.opened_at, at(1));
    assert.equal(open.last_error, 'HTTP 503');
    assert.equal(run(closed, [true, true, true, false], at(1)).state, 'closed', 'a quarter failed: under the rate');
  });

  test('a new window forgets older attempts', () => {
    const old = run(closed, [false, false, false], at(1));
    const later = nextCircuit(old, { ok: false }, policy, at(120));
    assert.deepEqual([later.state, later.attempts, later.failures], ['closed', 1, 1]);
  });

  test('half-open: the trial completing closes it, the trial failing opens it again', () => {
    const trial: CircuitRow = { ...closed, state: 'half_open', attempts: 6, failures: 6, opened_at: at(0), trial_at: at(40), trial_token: 'vid_trial' };
    const ok = nextCircuit(trial, { ok: true, jobId: 'vid_trial' }, policy, at(50));
    assert.deepEqual([ok.state, ok.attempts, ok.failures, ok.opened_at, ok.trial_token], ['closed', 0, 0, null, null]);
    const bad = nextCircuit(trial, { ok: false, jobId: 'vid_trial' }, policy, at(50));
    assert.deepEqual([bad.state, bad.opened_at, bad.trial_at, bad.trial_token], ['open', at(50), null, null]);
  });

  test("half-open: another job's outcome (admitted before it opened) is counted but decides nothing", () => {
    const trial: CircuitRow = { ...closed, state: 'half_open', attempts: 6, failures: 6, opened_at: at(0), trial_at: at(40), trial_token: 'vid_trial' };
    const other = nextCircuit(trial, { ok: true, jobId: 'vid_other' }, policy, at(50));
    assert.deepEqual([other.state, other.trial_token, other.attempts], ['half_open', 'vid_trial', 7]);
    assert.equal(nextCircuit(trial, { ok: true }, policy, at(50)).state, 'half_open', 'an outcome naming no job is no trial');
    assert.equal(nextCircuit(trial, { ok: false, jobId: 'vid_other' }, policy, at(50)).state, 'half_open');
  });

  test('while open, late outcomes of jobs admitted before do not close it', () => {
    const open: CircuitRow = { ...closed, state: 'open', attempts: 4, failures: 4, opened_at: at(0) };
    assert.equal(nextCircuit(open, { ok: true }, policy, at(5)).state, 'open');
  });
});
