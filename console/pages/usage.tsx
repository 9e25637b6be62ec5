// Usage and money: the balance (GET /v1/balance) and the usage by day (GET /v1/usage) with the
// API's groupings, as a table and a bar per day of net credits, and the range's totals as the API
// sums them (`totals`), not as this page would add up one page of rows.
import { useState } from 'preact/hooks';
import { client } from '../api.js';
import { ErrorNote, useLoad } from '../ui.js';

const groupings = ['', 'model', 'kind', 'project', 'key'] as const;

export function UsagePage() {
  const balance = useLoad(() => client.balance.get(), []);
  const [groupBy, setGroupBy] = useState<(typeof groupings)[number]>('');
  const usage = useLoad(() => client.usage.get({ granularity: 'day', ...(groupBy ? { group_by: groupBy } : {}) }), [groupBy]);
  const b = balance.value?.data;
  const rows = usage.value?.data ?? [];
  const max = Math.max(1, ...rows.map((r) => r.credits.net));
  const totals = usage.value?.totals;
  return (
    <>
      <h1>Usage and balance</h1>
      <ErrorNote error={balance.error ?? usage.error} />
      {b && (
        <dl class="balance" aria-label="Balance">
          <dt>Available</dt>
          <dd data-available={b.available}>{b.available} credits</dd>
          <dt>Held by jobs in flight</dt>
          <dd>{b.held} credits</dd>
          <dt>Spent this month</dt>
          <dd data-spent={b.spent_this_period}>{b.spent_this_period} credits</dd>
          <dt>Refunded this month</dt>
          <dd>{b.refunded_this_period} credits</dd>
        </dl>
      )}
      <h2>By day</h2>
      <label>
        Group by
        <select value={groupBy} onChange={(e) => setGroupBy((e.currentTarget as HTMLSelectElement).value as (typeof groupings)[number])}>
          {groupings.map((g) => (
            <option key={g} value={g}>
              {g || 'nothing'}
            </option>
          ))}
        </select>
      </label>
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Usage by day">
        <table>
          <caption class="sr-only">Credits and jobs by day</caption>
          <thead>
            <tr>
              <th scope="col">Day</th>
              {groupBy && <th scope="col">{groupBy}</th>}
              <th scope="col">Spent</th>
              <th scope="col">Refunded</th>
              <th scope="col">Net</th>
              <th scope="col">Jobs</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i}>
                <td>{r.period_start.slice(0, 10)}</td>
                {groupBy && (
                  <td>{String((r as Record<string, unknown>)[groupBy === 'key' ? 'key_id' : groupBy === 'project' ? 'project_id' : groupBy] ?? '—')}</td>
                )}
                <td data-spent={r.credits.spent}>{r.credits.spent}</td>
                <td>{r.credits.refunded}</td>
                <td>
                  <span class="bar" style={{ width: `${Math.round((r.credits.net / max) * 6)}em` }} aria-hidden="true" /> {r.credits.net}
                </td>
                <td>{r.jobs.created}</td>
              </tr>
            ))}
          </tbody>
          {totals && (
            <tfoot>
              <tr>
                <th scope="row" colSpan={groupBy ? 2 : 1}>
                  This month
                </th>
                <td data-total-spent={totals.credits.spent}>{totals.credits.spent}</td>
                <td data-total-refunded={totals.credits.refunded}>{totals.credits.refunded}</td>
                <td data-total-net={totals.credits.net}>{totals.credits.net}</td>
                <td data-total-jobs={totals.jobs.created}>{totals.jobs.created}</td>
              </tr>
            </tfoot>
          )}
        </table>
      </div>
    </>
  );
}
