// Host patterns for provider output URLs. A pattern is an exact host ("v3.fal.media"), a domain's
// subdomains ("*.example.com", any depth), or a host whose labels hold `*` wildcards that match
// within one label only ("dashscope-result-*.oss-*.aliyuncs.com": Alibaba's result buckets, in any
// region, and no one else's bucket on the same cloud).

/** Whether `host` matches one of `patterns`. */
export function hostMatches(host: string, patterns: readonly string[]): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return patterns.some((p) => {
    const q = p.toLowerCase();
    if (q.startsWith('*.') && !q.slice(2).includes('*')) return h.endsWith(q.slice(1)) && h.length > q.length - 1;
    if (!q.includes('*')) return h === q;
    return labelPattern(q).test(h);
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

// Declared with each provider (shared/providers/<name>.ts `outputHosts`).
export type { OutputHosts } from '../../shared/providers/index.js';
