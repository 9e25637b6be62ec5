// The CLI's metadata and tags (docs/api/metadata-and-tags.md): `--tag T` and `--metadata k=v`, each
// repeatable, on every generate command (the job's labels) and on `jobs list` (filters: all of them).
import { InvalidArgumentError, type Command } from 'commander';
import { collect } from './cli-support.js';
import type { JobPriority } from './client.js';

/** `k=v` added to the pairs so far; the key before the first `=`. */
export function metadataPair(v: string, prev: Record<string, string> = {}): Record<string, string> {
  const at = v.indexOf('=');
  if (at <= 0) throw new InvalidArgumentError('expected key=value');
  return { ...prev, [v.slice(0, at)]: v.slice(at + 1) };
}

/** The two options, described for their command. */
export const labelOptions = (cmd: Command, tag: string, metadata: string) =>
  cmd.option('--tag <tag>', `${tag} (repeatable)`, collect).option('--metadata <key=value>', `${metadata} (repeatable)`, metadataPair);

/** The create body's label fields of the parsed options (none when not given). */
export const labelFields = (o: { tag?: string[]; metadata?: Record<string, string> }) => ({
  ...(o.tag !== undefined ? { tags: o.tag } : {}),
  ...(o.metadata !== undefined ? { metadata: o.metadata } : {}),
});

/** The create fields every generate command takes: its deadline, reuse, priority and labels. */
export const commonFields = (o: { deadlineSeconds?: number; priority?: JobPriority; tag?: string[]; metadata?: Record<string, string>; reuse?: boolean }) => ({
  ...(o.deadlineSeconds !== undefined ? { deadline_seconds: o.deadlineSeconds } : {}),
  ...(o.reuse !== undefined ? { reuse: o.reuse } : {}),
  ...(o.priority !== undefined ? { priority: o.priority } : {}),
  ...labelFields(o),
});
