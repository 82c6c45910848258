// The sink of bench/jobs.bench.ts: the sum of every upstream output.
export default function sum(_context, inputs) {
  let total = 0;
  for (const value of inputs.map) total += value;
  return total;
}
