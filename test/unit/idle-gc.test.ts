import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { collectWhenIdle } from '../../api/idle-gc.js';
import { waitFor } from '../support/stack.js';

let server: Server;
let url: string;
let collections = 0;
const realGc = (globalThis as { gc?: () => void }).gc;

before(async () => {
  (globalThis as { gc?: () => void }).gc = () => void collections++;
  server = createServer((_req, res) => res.end('ok'));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});

after(() => {
  (globalThis as { gc?: () => void }).gc = realGc;
  server.close();
});

describe('collectWhenIdle', () => {
  test('collects once per quiet period: after start-up, then only after new requests have gone quiet', async () => {
    const stop = collectWhenIdle(server, 1_000);
    try {
      await waitFor('the start-up collection', () => collections === 2, 10_000, 20);
      // Requests keep the server busy: no collection while they arrive closer than the idle time.
      const busyUntil = Date.now() + 2_000;
      while (Date.now() < busyUntil) {
        await (await fetch(url)).text();
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(collections, 2, 'no collection during traffic');
      await waitFor('the collection after traffic', () => collections === 4, 10_000, 20);
      await new Promise((r) => setTimeout(r, 2_500)); // more idle time without requests
      assert.equal(collections, 4, 'one collection per quiet period');
    } finally {
      stop();
    }
  });
});
