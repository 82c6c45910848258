// A trivial subtask for bench/jobs.bench.ts: returns its subtask index (plain JavaScript, no tsx).
export default function subtaskIndex(context) {
  return context.subtaskIndex;
}
