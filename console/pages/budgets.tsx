// Budgets (GET /v1/budgets): each budget of the workspace's keys and projects, what it allows per
// period, what was spent and is left, and when it resets. Budgets are set with a key or project
// (POST /v1/api-keys with `budget`, the admin CLI); the API has no call that edits one.
import { client } from '../api.js';
import { ErrorNote, useLoad } from '../ui.js';

export function BudgetsPage() {
  const budgets = useLoad(() => client.budgets.list(), []);
  const rows = budgets.value?.data ?? [];
  return (
    <>
      <h1>Budgets</h1>
      <ErrorNote error={budgets.error} />
      {budgets.value && rows.length === 0 && <p>No budgets: spending is bounded by the balance only.</p>}
      <div class="table-wrap" tabIndex={0} role="region" aria-label="Budgets">
        <table>
          <caption class="sr-only">Budgets of keys and projects</caption>
          <thead>
            <tr>
              <th scope="col">Scope</th>
              <th scope="col">Period</th>
              <th scope="col">Limit</th>
              <th scope="col">Spent</th>
              <th scope="col">Left</th>
              <th scope="col">Resets</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((b) => (
              <tr key={b.id} data-budget-id={b.id}>
                <td>
                  {b.scope} {b.scope_id}
                </td>
                <td>{b.period}</td>
                <td data-limit={b.limit}>{b.limit}</td>
                <td data-spent={b.spent}>
                  <meter min={0} max={b.limit} value={b.spent} aria-label={`Spent of ${b.scope} ${b.scope_id}`} /> {b.spent}
                </td>
                <td data-remaining={b.remaining}>{b.remaining}</td>
                <td>{b.resets_at.replace('T', ' ').slice(0, 16)} UTC</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
