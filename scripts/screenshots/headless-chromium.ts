// How our scripts and tests start headless Chromium (Debian's `chromium`; CHROMIUM_PATH overrides):
// one list of flags, so every caller is as quiet and as contained as the others. Host names resolve
// to nothing, so only loopback addresses are reachable, and the browser fetches nothing of its own
// (no component updates, sync or background requests).

/** The browser binary. */
export const chromiumPath = (): string => process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The flags every headless Chromium of ours starts with; `extra` follow them (a profile dir, a window size, a mode). */
export function headlessChromiumArgs(extra: string[] = []): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-dev-shm-usage',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--disable-extensions',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ...extra,
  ];
}
