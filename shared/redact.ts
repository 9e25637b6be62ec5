// Bearer-like parts of URLs and object keys never reach a span attribute or a log field: the
// random token of an upload key (`uploads/<workspace>/<upload>/<token>.<ext>`, the incoming twin,
// and /media/ paths of them), the media prefix token of a job (`jobs/<job>/<token>/…`), and the
// value of any query parameter that signs or authorises (X-Amz-Signature, X-Amz-Credential,
// token=…). Whoever holds one of these can read the media, so a trace or log store must not.
export const REDACTED = '[redacted]';

/** Query parameters whose values grant access (presigned S3 URLs, signed CDN links, tokens). */
const bearerParam = /signature|credential|security-token|token|sig$|^sig|key|secret|auth|policy|session|password|^code$/i;

/** The keyed token of a job's media prefix (shared/storage.ts jobMediaPrefix). */
const jobMediaToken = /^[A-Za-z0-9_-]{22}$/;

/** Path segments that carry a token: the last segment under an upload prefix, the third under jobs/. */
function redactSegments(segments: string[]): string[] {
  const out = [...segments];
  for (let i = 0; i < out.length; i++) {
    const s = out[i]!;
    if ((s === 'uploads' || s === 'incoming') && out.length - i >= 4) {
      // <prefix>/<workspace>/<upload id>/<token>.<ext>: keep the extension (it says the type).
      const last = i + 3;
      const ext = /\.[A-Za-z0-9]{1,8}$/.exec(out[last]!)?.[0] ?? '';
      out[last] = REDACTED + ext;
      i = last;
    } else if (s === 'jobs' && out.length - i >= 3 && jobMediaToken.test(out[i + 2]!)) {
      out[i + 2] = REDACTED;
      i += 2;
    }
  }
  return out;
}

/** An object key or URL path with its bearer segments replaced. */
export function redactPath(path: string): string {
  return redactSegments(path.split('/')).join('/');
}

/**
 * A URL (absolute, or a path with a query) with its bearer path segments and the values of its
 * bearer query parameters replaced; anything unparseable is redacted whole.
 */
export function redactUrl(raw: string): string {
  const q = raw.indexOf('?');
  const path = q === -1 ? raw : raw.slice(0, q);
  const query = q === -1 ? '' : raw.slice(q + 1);
  const m = /^([a-z][a-z0-9+.-]*:\/\/[^/]*)(.*)$/i.exec(path);
  const origin = m ? m[1]!.replace(/\/\/[^@/]*@/, `//${REDACTED}@`) : '';
  const rest = m ? m[2]! : path;
  let out = origin + redactPath(rest);
  if (query !== '') {
    out +=
      '?' +
      query
        .split('&')
        .map((pair) => {
          const eq = pair.indexOf('=');
          if (eq === -1) return pair;
          let name: string;
          try {
            name = decodeURIComponent(pair.slice(0, eq));
          } catch {
            return REDACTED;
          }
          return bearerParam.test(name) ? `${pair.slice(0, eq)}=${REDACTED}` : pair;
        })
        .join('&');
  }
  return out;
}

const uploadKeyInText = /\b((?:uploads|incoming)\/[^/\s"'?#]+\/[^/\s"'?#]+\/)[^/\s"'?#&]+?(\.[A-Za-z0-9]{1,8})?(?=$|[\s"'?#&),;\]}])/g;
const jobTokenInText = /\b(jobs\/[^/\s"'?#]+\/)[A-Za-z0-9_-]{22}(?=\/|$|[\s"'?#&])/g;
const bearerQueryInText = /([?&][^=&\s"'#]*(?:signature|credential|security-token|token|secret|policy)[^=&\s"'#]*=)[^&\s"'#]+/gi;

/** Free text (an error message, a stack) with upload tokens, job media tokens and signed query values replaced. */
export function redactText(text: string): string {
  return text.replace(uploadKeyInText, `$1${REDACTED}$2`).replace(jobTokenInText, `$1${REDACTED}`).replace(bearerQueryInText, `$1${REDACTED}`);
}

/** An error as a log field: its name, code, message and stack, each redacted (never its other properties, which may hold a key or URL). */
export function redactedError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: redactText(String(err)) };
  const code = (err as { code?: unknown }).code;
  return {
    type: err.name,
    ...(typeof code === 'string' ? { code } : {}),
    message: redactText(err.message),
    ...(err.stack ? { stack: redactText(err.stack) } : {}),
  };
}
