// The OpenAPI schema of a 402 answer: insufficient_credits, or budget_exceeded with the refusing
// budget's fields beside the error (api/routes/jobs/router.ts budgetRefusal, docs/api/budgets.md).

export const paymentRequiredErrorSchema = {
  allOf: [
    { $ref: '#/components/schemas/Error' },
    {
      type: 'object',
      properties: {
        error: { type: 'object', properties: { code: { enum: ['insufficient_credits', 'budget_exceeded'] } } },
        scope: { type: 'string', enum: ['key', 'project'], description: 'what the refusing budget limits: an API key or a project' },
        scope_id: { type: 'string', description: 'the API key id or project id of the refusing budget' },
        period: { type: 'string', enum: ['day', 'month'], description: "the refusing budget's period (UTC)" },
        limit: { type: 'integer', description: "the refusing budget's limit in credits" },
        remaining: { type: 'integer', minimum: 0, description: 'credits the refusing budget has left in its period' },
        resets_at: { type: 'string', format: 'date-time', description: 'when the period ends and the budget admits again (ISO 8601, UTC)' },
      },
      if: { properties: { error: { properties: { code: { const: 'budget_exceeded' } } } } },
      then: { required: ['scope', 'scope_id', 'period', 'limit', 'remaining', 'resets_at'] },
    },
  ],
};
