// square.mjs — a task module: its default export runs once per subtask attempt, on its slot's thread.
export default async function square(context) {
  const { from, to } = context.config;
  const squares = [];
  for (let n = from + context.subtaskIndex; n <= to; n += context.parallelism) squares.push(n * n);
  return squares;
}
