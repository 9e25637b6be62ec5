// A deprecated model's answers carry Deprecation (RFC 9745), Sunset (RFC 8594) once a retirement
// date is set, and X-Mediagen-Warning in words (the gateway's docs/api/deprecations.md): the client
// hands them to ClientOptions.onWarning, by default console.warn once per distinct warning.
import type { ModelWarning } from './types.js';

/** The deprecation a 2xx answer announces (Deprecation: `@` and Unix seconds), or null. */
export function modelWarningOf(headers: Headers): ModelWarning | null {
  const deprecation = headers.get('deprecation');
  if (deprecation === null) return null;
  const seconds = /^@(-?\d+)$/.exec(deprecation.trim())?.[1];
  const sunset = headers.get('sunset');
  return {
    message: headers.get('x-mediagen-warning') ?? `the requested model is deprecated (Deprecation: ${deprecation})`,
    deprecatedAt: seconds === undefined ? null : new Date(Number(seconds) * 1000),
    sunset: sunset === null || Number.isNaN(Date.parse(sunset)) ? null : new Date(sunset),
  };
}

/** The default onWarning: each distinct warning once, on console.warn. */
export function warnOnce(): (warning: ModelWarning) => void {
  const seen = new Set<string>();
  return (w) => {
    if (seen.has(w.message)) return;
    seen.add(w.message);
    console.warn(`mediagen: ${w.message}`);
  };
}
