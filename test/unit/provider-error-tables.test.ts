// Each adapter's error table, one case per error type and status its provider documents (the
// sources are named in providers/<name>/errors.ts): a Response-like answer in, the class out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classify, errorOfRow, type ErrorClass, type ErrorFacts, type ErrorTable } from '../../activities/providers/error-table.js';
import { falErrors, falFacts, falInfrastructureErrorTypes } from '../../providers/fal/errors.js';
import { googleErrors, googleFacts, googleRetryDelayMs } from '../../providers/google/errors.js';
import { alibabaErrors, alibabaFacts } from '../../providers/alibaba/errors.js';
import { byteplusErrors, byteplusFacts } from '../../providers/byteplus/errors.js';
import { openaiErrors, openaiFacts } from '../../providers/openai/errors.js';
import { azureErrors, azureFacts } from '../../providers/azure/errors.js';
import { xaiErrors, xaiFacts } from '../../providers/xai/errors.js';
import { elevenlabsErrors, elevenlabsFacts } from '../../providers/elevenlabs/errors.js';

/** What a case expects: the class, and for failover rows the reason, for retry rows whether the request ended. */
type Expect = ErrorClass | 'failover:account' | 'failover:route' | 'retry:ended';

const answer = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  res: { status, headers: new Headers(headers) },
  text: typeof body === 'string' ? body : JSON.stringify(body),
});

function check(name: string, table: ErrorTable, facts: ErrorFacts, want: Expect): void {
  const row = classify(table, facts);
  const err = errorOfRow(row, facts, { provider: 'P', what: 'call' });
  const got: Expect =
    row.class === 'failover' ? (err.route ? 'failover:route' : 'failover:account') : row.class === 'retry' && err.ended ? 'retry:ended' : row.class;
  assert.equal(got, want, `${name}: ${err.message}`);
  // The classes map onto ProviderError as the job reads it.
  assert.equal(err.retryable, row.class === 'retry', name);
  assert.equal(err.failsOverNow, row.class === 'failover', name);
}

test('fal: infrastructure error types are retried and end the request; request-level and model errors are final', () => {
  const statusOf: Record<string, number> = {
    request_timeout: 504,
    startup_timeout: 504,
    runner_scheduling_failure: 503,
    runner_connection_timeout: 503,
    runner_disconnected: 503,
    runner_connection_refused: 503,
    runner_connection_error: 503,
    runner_incomplete_response: 502,
    runner_server_error: 500,
    internal_error: 500,
  };
  for (const type of falInfrastructureErrorTypes) {
    const body = answer(statusOf[type]!, { detail: 'failed', error_type: type });
    check(`${type} in the body`, falErrors, falFacts(body.res, body.text, 'check'), 'retry:ended');
    const marked = answer(statusOf[type]!, { detail: 'failed' }, { 'x-fal-error-type': type });
    check(`${type} in the header`, falErrors, falFacts(marked.res, marked.text, 'check'), 'retry:ended');
    // On a COMPLETED status (no HTTP error): the same class.
    check(`${type} on a COMPLETED status`, falErrors, { code: type, call: 'check' }, 'retry:ended');
  }
  const cases: [string, ReturnType<typeof answer>, 'submit' | 'check', Expect][] = [
    ['client_disconnected 499', answer(499, { detail: 'x', error_type: 'client_disconnected' }), 'check', 'final'],
    ['client_cancelled 499', answer(499, { detail: 'x', error_type: 'client_cancelled' }), 'check', 'final'],
    ['bad_request 400', answer(400, { detail: 'x', error_type: 'bad_request' }), 'check', 'customer'],
    [
      'content_policy_violation 422',
      answer(422, { detail: [{ loc: ['body', 'prompt'], msg: 'flagged', type: 'content_policy_violation' }] }),
      'check',
      'customer',
    ],
    ['image_too_large 422', answer(422, { detail: [{ loc: ['body', 'image_url'], msg: 'too large', type: 'image_too_large' }] }), 'submit', 'customer'],
    ['422 validation on submit', answer(422, { detail: [{ loc: ['body', 'duration'], msg: 'bad', type: 'enum' }] }), 'submit', 'customer'],
    ['X-Fal-Retryable: true', answer(500, { detail: [{ msg: 'x', type: 'internal_server_error' }] }, { 'x-fal-retryable': 'true' }), 'check', 'retry:ended'],
    ['plain 500 on the result', answer(500, { detail: 'CUDA out of memory' }), 'check', 'retry:ended'],
    ['unmarked 502 (the edge)', answer(502, '<html>Bad Gateway</html>'), 'check', 'retry'],
    ['unmarked 503 (the edge)', answer(503, { detail: 'Service Unavailable' }), 'check', 'retry'],
    ['unmarked 504 (the edge)', answer(504, { detail: 'Gateway Timeout' }), 'check', 'retry'],
    ['429 even when typed', answer(429, { detail: 'Too many requests', error_type: 'rate_limited' }), 'check', 'retry'],
    ['401 our key', answer(401, { detail: 'No user found for Key ID and Secret' }), 'submit', 'failover:account'],
    ['403 our key', answer(403, { detail: 'Forbidden' }), 'submit', 'failover:account'],
    ['404 endpoint gone on submit', answer(404, { detail: "Application 'fal-ai/x' not found" }), 'submit', 'failover:route'],
    ['404 request gone on a check', answer(404, { detail: 'Request not found' }), 'check', 'retry:ended'],
  ];
  for (const [name, a, call, want] of cases) check(`fal ${name}`, falErrors, falFacts(a.res, a.text, call), want);
});

const gErr = (code: number, status: string, message: string, details?: unknown[]) => ({ error: { code, message, status, ...(details ? { details } : {}) } });

test('Google: a missing model and a precondition fail over, never the customer; per-minute 429 retried after RetryInfo; a daily quota is the account', () => {
  const perMinute = gErr(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.', [
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [{ quotaMetric: 'generativelanguage.googleapis.com/generate_requests_per_model', quotaId: 'GenerateRequestsPerMinutePerProjectPerModel' }],
    },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '17s' },
  ]);
  const perDay = gErr(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.', [
    {
      '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
      violations: [
        { quotaMetric: 'generativelanguage.googleapis.com/generate_requests_per_model_per_day', quotaId: 'GenerateRequestsPerDayPerProjectPerModel' },
      ],
    },
    { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: '40s' },
  ]);
  const cases: [string, ReturnType<typeof answer>, 'submit' | 'check', Expect][] = [
    ['400 INVALID_ARGUMENT', answer(400, gErr(400, 'INVALID_ARGUMENT', 'parameters.resolution: 4k is not supported')), 'submit', 'customer'],
    ['400 FAILED_PRECONDITION', answer(400, gErr(400, 'FAILED_PRECONDITION', 'User location is not supported for the API use.')), 'submit', 'failover:route'],
    ['403 PERMISSION_DENIED', answer(403, gErr(403, 'PERMISSION_DENIED', 'Method doesn’t allow unregistered callers.')), 'submit', 'failover:account'],
    ['401 UNAUTHENTICATED', answer(401, gErr(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.')), 'submit', 'failover:account'],
    ['402 prepay credits used up', answer(402, gErr(402, 'RESOURCE_EXHAUSTED', 'Your prepayment credits are depleted.')), 'submit', 'failover:account'],
    [
      '404 NOT_FOUND model',
      answer(404, gErr(404, 'NOT_FOUND', 'models/veo-3.1-generate-preview is not found for API version v1beta')),
      'submit',
      'failover:route',
    ],
    ['404 NOT_FOUND operation', answer(404, gErr(404, 'NOT_FOUND', 'Operation not found')), 'check', 'retry:ended'],
    ['429 per minute', answer(429, perMinute), 'submit', 'retry'],
    ['429 without details', answer(429, gErr(429, 'RESOURCE_EXHAUSTED', 'Resource has been exhausted (e.g. check rate limits).')), 'submit', 'retry'],
    ['429 per day', answer(429, perDay), 'submit', 'failover:account'],
    [
      '429 plan and billing, no wait given',
      answer(429, gErr(429, 'RESOURCE_EXHAUSTED', 'You exceeded your current quota, please check your plan and billing details.')),
      'submit',
      'failover:account',
    ],
    ['500 INTERNAL', answer(500, gErr(500, 'INTERNAL', 'Internal error encountered.')), 'check', 'retry'],
    ['503 UNAVAILABLE', answer(503, gErr(503, 'UNAVAILABLE', 'The model is overloaded.')), 'submit', 'retry'],
    ['504 DEADLINE_EXCEEDED', answer(504, gErr(504, 'DEADLINE_EXCEEDED', 'Deadline exceeded.')), 'check', 'retry'],
  ];
  for (const [name, a, call, want] of cases) check(`Google ${name}`, googleErrors, googleFacts(a.res, a.text, call), want);
  assert.equal(googleRetryDelayMs(JSON.stringify(perMinute)), 17_000, "the 429's RetryInfo is the wait");
  // Operation errors: google.rpc.Code names.
  for (const [code, want] of [
    ['INVALID_ARGUMENT', 'customer'],
    ['FAILED_PRECONDITION', 'failover:route'],
    ['NOT_FOUND', 'failover:route'],
    ['PERMISSION_DENIED', 'failover:account'],
    ['INTERNAL', 'retry'],
    ['UNAVAILABLE', 'retry'],
    ['DEADLINE_EXCEEDED', 'retry'],
  ] as const)
    check(`Google operation ${code}`, googleErrors, { code, reason: 'x', call: 'check' }, want);
});

test('Alibaba (DashScope): AllocationQuota is the account, ModelNotFound the route, rate limits retried, moderation and parameters the customer', () => {
  const ds = (status: number, code: string) => answer(status, { request_id: 'r', code, message: 'm' });
  const cases: [ReturnType<typeof answer>, Expect][] = [
    [ds(400, 'InvalidParameter'), 'customer'],
    [ds(400, 'DataInspectionFailed'), 'customer'],
    [ds(400, 'data_inspection_failed'), 'customer'],
    [ds(400, 'Arrearage'), 'failover:account'],
    [ds(401, 'InvalidApiKey'), 'failover:account'],
    [ds(403, 'AccessDenied'), 'failover:account'],
    [ds(403, 'AccessDenied.Unpurchased'), 'failover:account'],
    [ds(404, 'ModelNotFound'), 'failover:route'],
    [ds(429, 'Throttling'), 'retry'],
    [ds(429, 'Throttling.RateQuota'), 'retry'],
    [ds(429, 'Throttling.BurstRate'), 'retry'],
    [ds(429, 'Throttling.AllocationQuota'), 'failover:account'],
    [ds(429, 'insufficient_quota'), 'failover:account'],
    [ds(500, 'InternalError'), 'retry'],
    [ds(500, 'InternalError.Algo'), 'retry'],
    [ds(503, 'ServiceUnavailable'), 'retry'],
  ];
  for (const [a, want] of cases) check(`Alibaba ${a.res.status} ${a.text}`, alibabaErrors, alibabaFacts(a.res, a.text), want);
  // A FAILED task's code: the same table.
  check('Alibaba task ModelNotFound', alibabaErrors, { code: 'ModelNotFound', reason: 'x' }, 'failover:route');
  check('Alibaba task InternalError', alibabaErrors, { code: 'InternalError', reason: 'x' }, 'retry');
});

test('BytePlus (ModelArk): the public error codes', () => {
  const ark = (status: number, code: string) => answer(status, { error: { code, message: 'm', type: 't' } });
  const cases: [ReturnType<typeof answer>, Expect][] = [
    [ark(400, 'MissingParameter'), 'customer'],
    [ark(400, 'InvalidParameter'), 'customer'],
    [ark(400, 'InputTextSensitiveContentDetected'), 'customer'],
    [ark(400, 'InputImageSensitiveContentDetected'), 'customer'],
    [ark(400, 'OutputVideoSensitiveContentDetected'), 'customer'],
    [ark(400, 'InvalidEndpoint.ClosedEndpoint'), 'failover:route'],
    [ark(401, 'AuthenticationError'), 'failover:account'],
    [ark(403, 'AccountOverdueError'), 'failover:account'],
    [ark(403, 'AccessDenied'), 'failover:account'],
    [ark(404, 'InvalidEndpointOrModel.NotFound'), 'failover:route'],
    [ark(404, 'ModelNotOpen'), 'failover:route'],
    [ark(429, 'RateLimitExceeded.EndpointRPMExceeded'), 'retry'],
    [ark(429, 'QuotaExceeded'), 'failover:account'],
    [ark(429, 'ServerOverloaded'), 'retry'],
    [ark(500, 'InternalServiceError'), 'retry'],
  ];
  for (const [a, want] of cases) check(`BytePlus ${a.res.status} ${a.text}`, byteplusErrors, byteplusFacts(a.res, a.text), want);
});

test('OpenAI and Azure OpenAI: the Images API error codes, and the content filter', () => {
  const oa = (status: number, code: string | null, type = 'invalid_request_error') => answer(status, { error: { message: 'm', type, param: null, code } });
  const cases: [ReturnType<typeof answer>, Expect][] = [
    [oa(401, 'invalid_api_key'), 'failover:account'],
    [oa(403, 'unsupported_country_region_territory'), 'failover:route'],
    [oa(404, 'model_not_found'), 'failover:route'],
    [oa(429, 'rate_limit_exceeded', 'requests'), 'retry'],
    [oa(429, 'insufficient_quota', 'insufficient_quota'), 'failover:account'],
    [oa(400, 'moderation_blocked', 'image_generation_user_error'), 'customer'],
    [oa(400, 'billing_hard_limit_reached'), 'failover:account'],
    [oa(400, null), 'customer'],
    [oa(500, null, 'server_error'), 'retry'],
    [oa(503, null, 'server_error'), 'retry'],
  ];
  for (const [a, want] of cases) check(`OpenAI ${a.res.status} ${a.text}`, openaiErrors, openaiFacts(a.res, a.text), want);
  const az = (status: number, code: string, inner?: string) =>
    answer(status, { error: { code, message: 'm', ...(inner ? { inner_error: { code: inner } } : {}) } });
  for (const [a, want] of [
    [az(400, 'content_filter'), 'customer'],
    [az(400, 'BadRequest', 'ResponsibleAIPolicyViolation'), 'customer'],
    [az(401, '401'), 'failover:account'],
    [az(404, 'DeploymentNotFound'), 'failover:route'],
    [az(429, '429'), 'retry'],
    [az(500, 'InternalServerError'), 'retry'],
  ] as const)
    check(`Azure ${a.res.status} ${a.text}`, azureErrors, azureFacts(a.res, a.text), want);
});

test("xAI and ElevenLabs: the documented statuses and ElevenLabs' detail.status", () => {
  const x = (status: number, message: string) => answer(status, { code: 'Client specified an invalid argument', error: message });
  for (const [a, call, want] of [
    [x(400, 'duration: Too big'), 'submit', 'customer'],
    [x(400, 'Incorrect API key provided: xa***. You can obtain an API key from https://console.x.ai.'), 'submit', 'failover:account'],
    [x(401, 'No API key'), 'submit', 'failover:account'],
    [x(403, 'Your team is blocked'), 'submit', 'failover:account'],
    [x(404, 'The model grok-imagine-video does not exist'), 'submit', 'failover:route'],
    [x(404, 'Request not found'), 'check', 'retry:ended'],
    [x(422, 'Failed to deserialize the JSON body'), 'submit', 'customer'],
    [x(429, 'Too many requests'), 'submit', 'retry'],
    [x(500, 'Internal error'), 'check', 'retry'],
  ] as const)
    check(`xAI ${a.res.status} ${a.text}`, xaiErrors, xaiFacts(a.res, a.text, call), want);
  const el = (status: number, s: string) => answer(status, { detail: { status: s, message: 'm' } });
  for (const [a, want] of [
    [el(400, 'max_character_limit_exceeded'), 'customer'],
    [el(401, 'invalid_api_key'), 'failover:account'],
    [el(401, 'quota_exceeded'), 'failover:account'],
    [el(404, 'voice_not_found'), 'final'],
    [el(422, 'invalid_voice_settings'), 'customer'],
    [el(429, 'too_many_concurrent_requests'), 'retry'],
    [el(429, 'system_busy'), 'retry'],
    [el(500, 'internal_error'), 'retry'],
  ] as const)
    check(`ElevenLabs ${a.res.status} ${a.text}`, elevenlabsErrors, elevenlabsFacts(a.res, a.text), want);
});
