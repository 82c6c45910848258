/** Sink: merges the counters' disjoint counts into one result, words sorted by count. */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';
import type { WordCountResult } from '../wordCountJob.js';

export default async function sink(
  _context: TaskContext,
  inputs: { count: Record<string, number>[] },
): Promise<WordCountResult> {
  const counts: Record<string, number> = {};
  let totalWords = 0;
  for (const partial of inputs.count) {
    for (const [word, n] of Object.entries(partial)) {
      counts[word] = (counts[word] ?? 0) + n;
      totalWords += n;
    }
  }
  const top = Object.entries(counts).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : 1));
  return { totalWords, distinctWords: top.length, top: top.slice(0, 10), counts };
}
