/** Count: counts the words of its partition, from every tokenizer. */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';

export default async function count(
  context: TaskContext,
  inputs: { tokenize: string[][][] },
): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const partitions of inputs.tokenize) {
    for (const word of partitions[context.subtaskIndex] ?? []) counts[word] = (counts[word] ?? 0) + 1;
  }
  return counts;
}
