// The job's transition table (jobs/transitions.ts) against the rules the service applies
// (jobs/rules.ts): every move the service can make is in the table, a terminal status has no way
// out but an operator's revival, and the SQL fence of each move is exactly the table's sources.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { jobStatuses, type JobStatus } from '../../shared/job-model.js';
import { canMove, claimOf, completionClaimOf, fromStatuses, inFlightStatuses, mayFail, revivals, terminalStatuses, transitions } from '../../jobs/index.js';

/** Every row shape the rules tell apart: each status, held by this run / another / none, failed by a cancel or not. */
function rows() {
  const out: { status: JobStatus; status_run_id: string | null; error: { code: string; message: string } | null }[] = [];
  for (const status of jobStatuses) {
    for (const status_run_id of ['run-a', 'run-b', null]) {
      for (const code of [null, 'canceled', 'generation_failed']) out.push({ status, status_run_id, error: code ? { code, message: code } : null });
    }
  }
  return out;
}

describe('the job transition table', () => {
  test('every move the service makes is allowed by the table', () => {
    for (const row of rows()) {
      const claim = claimOf(row as never, 'run-a');
      if (typeof claim === 'string') assert.ok(canMove(row.status, 'generating'), `claim ${claim} of a ${row.status} job`);
      const completion = completionClaimOf(row as never, 'run-a');
      if (typeof completion === 'string') {
        // A run completes a job it holds; a job it does not hold yet it claims first, then completes.
        const path: JobStatus[] = completion === 'ours' ? [row.status, 'completed'] : [row.status, 'generating', 'completed'];
        for (let i = 1; i < path.length; i++) assert.ok(canMove(path[i - 1]!, path[i]!), `completion of a ${row.status} job: ${path.join(' → ')}`);
      }
      for (const runId of ['run-a', null]) if (mayFail(row, runId)) assert.ok(canMove(row.status, 'failed'), `failing a ${row.status} job`);
    }
  });

  test('the rules refuse what the table refuses', () => {
    for (const row of rows()) {
      if (!canMove(row.status, 'generating')) assert.equal(typeof claimOf(row as never, 'run-a'), 'object', `claim of a ${row.status} job`);
      if (!canMove(row.status, 'failed')) assert.equal(mayFail(row, 'run-a'), false, `failing a ${row.status} job`);
    }
  });

  test('a terminal status has no way out but an operator revival, completed none at all', () => {
    assert.deepEqual([...terminalStatuses].sort(), ['completed', 'failed']);
    assert.deepEqual([...inFlightStatuses].sort(), ['generating', 'pending']);
    assert.deepEqual(transitions.completed, []);
    for (const from of terminalStatuses) {
      for (const to of jobStatuses) {
        if (canMove(from, to))
          assert.ok(
            revivals.some((r) => r.from === from && r.to === to),
            `${from} → ${to} is not a revival`,
          );
      }
    }
    // A job failed by a cancel is never revived; a completed one never moves.
    assert.deepEqual(claimOf({ status: 'failed', status_run_id: 'run-b', error: { code: 'canceled', message: 'x' } }, 'run-a'), { refused: 'it was canceled' });
    assert.deepEqual(claimOf({ status: 'completed', status_run_id: 'run-b', error: null }, 'run-a'), { refused: 'completed is final' });
  });

  test("each move's SQL fence is exactly the statuses the table moves from", () => {
    for (const to of jobStatuses) {
      assert.deepEqual(
        fromStatuses(to),
        jobStatuses.filter((from) => canMove(from, to)),
        `fence of → ${to}`,
      );
    }
    // The fences the repositories' UPDATEs repeat, as the design states them.
    assert.deepEqual(
      { generating: fromStatuses('generating'), completed: fromStatuses('completed'), failed: fromStatuses('failed'), pending: fromStatuses('pending') },
      {
        generating: ['pending', 'generating', 'failed'],
        completed: ['generating'],
        failed: ['pending', 'generating'],
        pending: [],
      },
    );
  });
});
