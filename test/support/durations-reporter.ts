// A node --test reporter beside TAP (scripts/test.sh): where a lane's time goes, per test file. Each
// file's line gives its wall time (from when the runner started its process to when it completed, as
// the runner reports them live: its hooks and its waits included, and the other files of its lane
// beside it under concurrency) and the sum of its top-level tests' durations. scripts/test.sh prints
// the slowest of each lane at the end of a run, so a CI log says which suites to make faster.
import type { TestEvent } from 'node:test/reporters';

interface FileTimes {
  started?: number;
  completed?: number;
  testsMs: number;
  failed: number;
}

export default async function* durations(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const files = new Map<string, FileTimes>();
  for await (const event of source) {
    const data = event.data as { file?: string; name?: string; nesting?: number; details?: { duration_ms?: number } } | undefined;
    // Events of the file itself name its built path, its tests' events the source path (source maps).
    const file = data?.file?.replace(/^.*?\/(dist\/)?test\//, 'test/').replace(/\.js$/, '.ts');
    if (!file || !data || data.nesting !== 0) continue;
    const times = files.get(file) ?? { testsMs: 0, failed: 0 };
    files.set(file, times);
    // The file itself (its name is its path, as given to the runner): dequeued when its process starts, complete when it ends.
    if (data.name !== undefined && data.file !== undefined && (data.name === data.file || data.file.endsWith(`/${data.name}`))) {
      if (event.type === 'test:dequeue') times.started ??= Date.now();
      if (event.type === 'test:complete') times.completed = Date.now();
      if (event.type === 'test:fail' && times.failed === 0) times.failed = 1;
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      times.testsMs += data.details?.duration_ms ?? 0;
      if (event.type === 'test:fail') times.failed++;
    }
  }
  for (const [file, t] of files) {
    const wall = t.started !== undefined && t.completed !== undefined ? Math.round((t.completed - t.started) / 1000) : 0;
    yield `${wall}\t${Math.round(t.testsMs / 1000)}\t${t.failed}\t${file}\n`;
  }
}
