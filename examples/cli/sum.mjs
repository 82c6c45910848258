// sum.mjs — `inputs` holds the outputs of the upstream subtasks connected to it, by vertex id.
export default async function sum(_context, inputs) {
  return inputs.square.flat().reduce((a, b) => a + b, 0);
}
