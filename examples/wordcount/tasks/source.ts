/** Source: subtask i of p emits lines i, i+p, i+2p, ... (given, or generated from a seed). */
import type { TaskContext } from '../../../lib/taskexecutor/taskWorker.js';
import type { WordCountSource } from '../wordCountJob.js';
import { generateLine } from '../text.js';

export default async function source(context: TaskContext): Promise<string[]> {
  const config = context.config as WordCountSource;
  const total = 'text' in config ? config.text.length : config.lines;
  const lines: string[] = [];
  for (let i = context.subtaskIndex; i < total; i += context.parallelism) {
    lines.push('text' in config ? config.text[i]! : generateLine(config.seed, i));
  }
  return lines;
}
