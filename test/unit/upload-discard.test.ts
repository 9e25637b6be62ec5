// discardRest (api/uploads/limits.ts) drains what is left of a refused upload for a bounded time,
// then cuts the connection. A request already read to the end must leave no timer behind: on a
// keep-alive connection the socket goes on to carry the next request (an event stream, say), which
// a late cut would kill mid-answer.
import { test, describe, mock, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import type { Request } from 'express';
import { discardRest } from '../../api/uploads/limits.js';

/** A request body stream with a socket whose destroy() is counted. */
function fakeRequest(): { req: Request; body: PassThrough; cuts: () => number } {
  const body = new PassThrough();
  let cuts = 0;
  Object.assign(body, { socket: { destroy: () => void cuts++ } });
  return { req: body as unknown as Request, body, cuts: () => cuts };
}

describe('discardRest', () => {
  afterEach(() => mock.timers.reset());

  test('a request already read to the end leaves its socket alone, however long the connection lives on', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const { req, body, cuts } = fakeRequest();
    body.end(Buffer.from('all of it'));
    body.resume();
    await new Promise((r) => body.once('end', r));
    discardRest(req);
    mock.timers.tick(60_000);
    assert.equal(cuts(), 0);
  });

  test('a request still sending is drained, and cut when it is not done within the bound', () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const { req, body, cuts } = fakeRequest();
    body.write(Buffer.alloc(1024));
    discardRest(req);
    mock.timers.tick(4_999);
    assert.equal(cuts(), 0, 'still within the bound');
    mock.timers.tick(1);
    assert.equal(cuts(), 1, 'cut once the bound passed');
  });

  test('a request that ends while being drained is not cut', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const { req, body, cuts } = fakeRequest();
    body.write(Buffer.alloc(1024));
    discardRest(req);
    body.end(Buffer.alloc(1024));
    await new Promise((r) => body.once('end', r));
    mock.timers.tick(60_000);
    assert.equal(cuts(), 0);
  });
});
