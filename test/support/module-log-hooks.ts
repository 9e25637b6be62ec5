// Module loader hooks (registered by module-log.ts): appends the URL of every ES module the process
// loads to the file named by MODULE_LOG.
import { appendFileSync } from 'node:fs';

type LoadHook = (url: string, context: unknown, next: (url: string, context: unknown) => Promise<unknown>) => Promise<unknown>;

export const load: LoadHook = async (url, context, next) => {
  if (process.env.MODULE_LOG) appendFileSync(process.env.MODULE_LOG, `${url}\n`);
  return next(url, context);
};
