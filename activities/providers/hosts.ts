// Host patterns for provider output URLs. A pattern is an exact host ("v3.fal.media"), a domain's
// subdomains ("*.example.com", any depth), or a host whose labels hold `*` wildcards that match
// within one label only ("dashscope-result-*.oss-*.aliyuncs.com": Alibaba's result buckets, in any
// region, and no one else's bucket on the same cloud). A pattern may end in a path prefix
// ("storage.googleapis.com/falserverless/"): on a shared storage host, only one bucket's objects are
// a provider's, so the host alone allows nothing and the URL's (normalized) path must start there.

/** Whether `host` matches one of `patterns` that allows a whole host (a pattern with a path prefix never does). */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    if (p.includes('/')) return false;
    const q = p.toLowerCase();
    if (q.startsWith('*.') && !q.slice(2).includes('*')) return h.endsWith(q.slice(1)) && h.length > q.length - 1;
    if (!q.includes('*')) return h === q;
    return labelPattern(q).test(h);
  });
}

/**
 * Whether `url` matches one of `patterns`: a host pattern, or a host with a path prefix that the URL's
 * path starts with. The WHATWG parser has already resolved dot segments (also percent-encoded ones),
 * so "/falserverless/../other" arrives as "/other" and is refused.
 */
export function urlMatches(url: URL, patterns: readonly string[]): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (hostMatches(host, patterns)) return true;
  return patterns.some((p) => {
    const slash = p.indexOf('/');
    if (slash <= 0) return false;
    const prefix = p.slice(slash);
    return prefix.endsWith('/') && hostMatches(host, [p.slice(0, slash)]) && url.pathname.startsWith(prefix);
  });
}

const labelPatterns = new Map<string, RegExp>();
function labelPattern(pattern: string): RegExp {
  let re = labelPatterns.get(pattern);
  if (!re) {
    const source = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\-]/g, '\\$&'))
      .join('[a-z0-9-]+');
    re = new RegExp(`^${source}$`);
    labelPatterns.set(pattern, re);
  }
  return re;
}

// Declared with each provider (providers/<name>/descriptor.ts `outputHosts`).
export type { OutputHosts } from '../../providers/index.js';
