// Azure OpenAI's answers, classed from Microsoft's documentation: the content filter's refusal is a
// 400 whose `error.code` (or `inner_error.code`) is content_filter / ResponsibleAIPolicyViolation
// (https://learn.microsoft.com/azure/ai-services/openai/concepts/content-filter, "Scenario details");
// 429 is a deployment's rate or quota limit per minute, to be retried after Retry-After
// (https://learn.microsoft.com/azure/ai-services/openai/quotas-limits); 401/403 are our key; a 404
// DeploymentNotFound names a deployment that does not exist on the resource: the route's. The rest
// are OpenAI's Images API codes (providers/openai/errors.ts) and the shared HTTP rows.
import { errorTable, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';
import { azureContentFilterCodes } from './contract.js';
import { openaiRows } from '../openai/errors.js';

const contentFilter = 'https://learn.microsoft.com/azure/ai-services/openai/concepts/content-filter';

export const azureErrors: ErrorTable = errorTable([
  { code: azureContentFilterCodes, status: '4xx', class: 'customer', says: "rejected by the provider's content filter", source: contentFilter },
  {
    code: 'DeploymentNotFound',
    class: 'failover',
    reason: 'route',
    says: 'the deployment is not served on this route',
    hint: 'check AZURE_OPENAI_IMAGE_DEPLOYMENT',
  },
  ...openaiRows,
]);

/** Azure's error codes of a body: `error.code`, then `inner_error.code` (or `innererror`). */
function azureCodesOf(text: string): string[] {
  try {
    const err = (JSON.parse(text) as { error?: { code?: unknown; inner_error?: { code?: unknown }; innererror?: { code?: unknown } } } | null)?.error;
    if (!err || typeof err !== 'object') return [];
    const inner = err.inner_error ?? err.innererror;
    return [err.code, inner?.code].filter((c): c is string => typeof c === 'string' && c !== '');
  } catch {
    return [];
  }
}

/** The facts of an Azure answer: a content-filter code found at either level wins. */
export function azureFacts(res: Pick<Response, 'status' | 'headers'>, text: string): ErrorFacts {
  const codes = azureCodesOf(text);
  const code = codes.find((c) => (azureContentFilterCodes as readonly string[]).includes(c)) ?? codes[0];
  return { status: res.status, code, text, headers: res.headers };
}
