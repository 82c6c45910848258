// A task module: its default export runs once per subtask attempt, on the thread of its slot.
// `context` says which subtask this is; `inputs` holds the outputs of the upstream subtasks,
// by upstream vertex id. What it returns is its output (anything structured-cloneable).
import type { TaskContext } from '../../lib/index.js';

export default async function square(context: TaskContext): Promise<number[]> {
  const { from, to } = context.config as { from: number; to: number };
  const squares: number[] = [];
  for (let n = from + context.subtaskIndex; n <= to; n += context.parallelism) squares.push(n * n);
  return squares;
}
