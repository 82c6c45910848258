// A consumer of bench/data.bench.ts: how many bytes it received from every producer.
export default (_context, inputs) => {
  let total = 0;
  for (const values of Object.values(inputs)) for (const value of values) total += value.byteLength;
  return total;
};
