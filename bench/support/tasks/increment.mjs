// The trivial task of bench/tasks.bench.ts as a TaskExecutor runs it: its input plus one.
export default function increment(_context, inputs) {
  return inputs + 1;
}
