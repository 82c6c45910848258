// bench/speculative.bench.ts's subtask: waits `config.ms`, the first attempt of each subtask in `config.stragglers`
// `config.slowdown` times longer (a straggler on a slow TaskExecutor, its speculative attempt at speed); returns its
// subtask index whichever attempt runs it; rejects at once when canceled (sleep.mjs's wait).
import sleep from './sleep.mjs';

export default async function straggler(context) {
  const { ms, stragglers = [], slowdown = 10 } = context.config;
  const slow = context.attemptNumber === 0 && stragglers.includes(context.subtaskIndex);
  await sleep({ config: { ms: slow ? ms * slowdown : ms }, signal: context.signal });
  return context.subtaskIndex;
}
