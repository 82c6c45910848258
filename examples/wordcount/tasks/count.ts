/** Count: counts the words of its subpartitions, from every tokenizer (a hash edge hands it only those). */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';

export default async function count(
  _context: TaskContext,
  inputs: { tokenize: string[][] },
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const words of inputs.tokenize) for (const word of words) counts[word] = (counts[word] ?? 0) + 1;
  return counts;
}
