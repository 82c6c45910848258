/**
 * Tokenize: splits its source's lines into words and partitions them by word over the counters
 * (the all-to-all edge): output[k] holds the words counter k counts.
 */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';
import { partitionOf, tokenize } from '../text.js';

export default async function tokenizeTask(context: TaskContext, inputs: { source: string[][] }): Promise<string[][]> {
  const counters = (context.config as { counters: number }).counters;
  const partitions: string[][] = Array.from({ length: counters }, () => []);
  for (const lines of inputs.source) {
    for (const line of lines) for (const word of tokenize(line)) partitions[partitionOf(word, counters)]!.push(word);
    if (context.signal.aborted) throw new Error('canceled');
  }
  return partitions;
}
