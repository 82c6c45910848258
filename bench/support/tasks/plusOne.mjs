// The map of bench/jobs.bench.ts: its one upstream output plus one.
export default function plusOne(_context, inputs) {
  return inputs.source[0] + 1;
}
