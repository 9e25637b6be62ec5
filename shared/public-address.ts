// Which IP addresses a fetch of a client's URL may reach: public unicast only (no private,
// loopback, link-local, carrier-grade NAT, documentation, multicast or reserved range, nor one
// embedded in an IPv6 address), and the loopback test the single test origin needs. Used by the
// guarded fetcher (shared/fetch-remote.ts).
import net from 'node:net';

function parseIPv4(s: string): number | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  let n = 0;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p)) return null;
    const v = Number(p);
    if (v > 255) return null;
    n = n * 256 + v;
  }
  return n;
}

/** Eight 16-bit groups, or null. Accepts an embedded dotted quad in the last 32 bits. */
function parseIPv6(input: string): number[] | null {
  let s = input;
  if (s.includes('%')) return null; // zone ids (fe80::1%eth0) are never public
  const lastColon = s.lastIndexOf(':');
  if (s.slice(lastColon + 1).includes('.')) {
    const q = parseIPv4(s.slice(lastColon + 1));
    if (q === null) return null;
    s = `${s.slice(0, lastColon + 1)}${Math.floor(q / 65536).toString(16)}:${(q % 65536).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const parse = (h: string) => (h === '' ? [] : h.split(':').map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)));
  const head = parse(halves[0]!);
  const rest = halves.length === 2 ? parse(halves[1]!) : [];
  if ([...head, ...rest].some((g) => Number.isNaN(g))) return null;
  const explicit = head.length + rest.length;
  if (halves.length === 1) return explicit === 8 ? head : null;
  if (explicit > 7) return null;
  return [...head, ...new Array<number>(8 - explicit).fill(0), ...rest];
}

const v4 = (a: number, b: number, c: number, d: number) => ((a * 256 + b) * 256 + c) * 256 + d;
const inV4 = (ip: number, base: number, bits: number) => Math.floor(ip / 2 ** (32 - bits)) === Math.floor(base / 2 ** (32 - bits));

const nonPublicV4: Array<[number, number]> = [
  [v4(0, 0, 0, 0), 8], // "this network", unspecified
  [v4(10, 0, 0, 0), 8], // private
  [v4(100, 64, 0, 0), 10], // carrier-grade NAT
  [v4(127, 0, 0, 0), 8], // loopback
  [v4(169, 254, 0, 0), 16], // link-local, cloud metadata (169.254.169.254)
  [v4(172, 16, 0, 0), 12], // private
  [v4(192, 0, 0, 0), 24], // IETF protocol assignments
  [v4(192, 0, 2, 0), 24], // TEST-NET-1
  [v4(192, 88, 99, 0), 24], // 6to4 relay anycast
  [v4(192, 168, 0, 0), 16], // private
  [v4(198, 18, 0, 0), 15], // benchmarking
  [v4(198, 51, 100, 0), 24], // TEST-NET-2
  [v4(203, 0, 113, 0), 24], // TEST-NET-3
  [v4(224, 0, 0, 0), 4], // multicast
  [v4(240, 0, 0, 0), 4], // reserved, incl. broadcast 255.255.255.255
];

function isPublicV4(ip: number): boolean {
  return !nonPublicV4.some(([base, bits]) => inV4(ip, base, bits));
}

function isPublicV6(g: number[]): boolean {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g as [number, number, number, number, number, number, number, number];
  const embedded = g6 * 65536 + g7;
  // IPv4-mapped ::ffff:a.b.c.d — the embedded v4 address decides.
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0xffff) return isPublicV4(embedded);
  // NAT64 well-known prefix 64:ff9b::/96 — the embedded v4 address decides.
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return isPublicV4(embedded);
  // 6to4 2002:AABB:CCDD::/48 embeds a v4 address in groups 1–2.
  if (g0 === 0x2002) return isPublicV4(g1 * 65536 + g2);
  // Only global unicast 2000::/3 is public; this excludes ::, ::1, IPv4-compatible ::/96,
  // 64:ff9b:1::/48, 100::/64, ULA fc00::/7, link-local fe80::/10, site-local fec0::/10, multicast ff00::/8.
  if ((g0 & 0xe000) !== 0x2000) return false;
  if (g0 === 0x2001 && g1 < 0x200) return false; // 2001::/23 IETF protocol assignments (Teredo, benchmarking, ORCHID)
  if (g0 === 0x2001 && g1 === 0x0db8) return false; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return false; // 3fff::/20 documentation
  return true;
}

/**
 * Whether an IP address (v4 or v6, no brackets) is a public unicast address this service may
 * connect to. Anything unparseable is not public.
 */
export function isPublicAddress(ip: string): boolean {
  const s = ip.trim().replace(/^\[|\]$/g, '');
  if (net.isIPv4(s)) {
    const n = parseIPv4(s);
    return n !== null && isPublicV4(n);
  }
  if (net.isIPv6(s)) {
    const g = parseIPv6(s);
    return g !== null && isPublicV6(g);
  }
  return false;
}

export function isLoopbackAddress(ip: string): boolean {
  const s = ip.replace(/^\[|\]$/g, '');
  if (net.isIPv4(s)) return inV4(parseIPv4(s)!, v4(127, 0, 0, 0), 8);
  const g = net.isIPv6(s) ? parseIPv6(s) : null;
  if (!g) return false;
  if (g.slice(0, 7).every((x) => x === 0) && g[7] === 1) return true;
  return g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff && inV4(g[6]! * 65536 + g[7]!, v4(127, 0, 0, 0), 8);
}
