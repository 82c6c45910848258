import type { TaskContext } from '../../lib/index.js';

export default async function sum(_context: TaskContext, inputs: { square: number[][] }): Promise<number> {
  return inputs.square.flat().reduce((a, b) => a + b, 0);
}
