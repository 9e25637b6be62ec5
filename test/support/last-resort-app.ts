// A small Express app with the gateway's request scope and last-resort handler, run as its own
// process by test/unit/last-resort.test.ts: one route throws from its request stream's listener
// (an error one request owns), another from a timer no request owns. Prints its port, then logs.
import express from 'express';
import { pino } from 'pino';
import type { AddressInfo } from 'node:net';
import { createLastResort, scopeRequest } from '../../api/last-resort.js';
import { errorMiddleware } from '../../api/errors.js';

const logger = pino({ base: null });
const handle = createLastResort({ logger, onFatal: () => setImmediate(() => process.exit(70)) });
process.on('uncaughtException', (err, origin) => handle(err, origin));
process.on('unhandledRejection', (reason) => handle(reason, 'unhandledRejection'));

const app = express();
app.use(scopeRequest);
app.post('/throw-in-stream', (req) => {
  req.on('end', () => {
    throw new Error('thrown by a request stream listener');
  });
  req.resume();
});
// A bearer in the path, and in the error text: the log line may carry neither.
app.post('/media/uploads/:token', (req) => {
  req.on('end', () => {
    throw new Error(`could not read uploads/ws_1/upl_1/${req.params.token}.png`);
  });
  req.resume();
});
app.post('/reject-in-request', () => {
  void Promise.reject(new Error('a rejection no one awaited'));
});
app.get('/throw-outside', (_req, res) => {
  setTimeout(() => {
    throw new Error('thrown by a timer');
  }, 10).unref();
  res.json({ ok: true });
});
app.get('/ok', (_req, res) => res.json({ pid: process.pid }));
app.use(errorMiddleware(logger));

const server = app.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`);
});
