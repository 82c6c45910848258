/**
 * Tokenize: splits its source's lines into words and partitions them by word over the counters (the hash edge):
 * output[k] holds the words of subpartition k, which one counter reads.
 */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';
import { partitionOf, tokenize } from '../text.js';

export default async function tokenizeTask(context: TaskContext, inputs: { source: string[][] }): Promise<string[][]> {
  const subpartitions = context.subpartitions ?? 1;
  const partitions: string[][] = Array.from({ length: subpartitions }, () => []);
  for (const lines of inputs.source) {
    for (const line of lines)
      for (const word of tokenize(line)) partitions[partitionOf(word, subpartitions)]!.push(word);
    if (context.signal.aborted) throw new Error('canceled');
  }
  return partitions;
}
