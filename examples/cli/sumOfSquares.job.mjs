// sumOfSquares.job.mjs — a job file, beside the quick start's square.mjs and sum.mjs
export default {
  name: 'sum of squares',
  vertices: [
    {
      id: 'square',
      taskModule: new URL('./square.mjs', import.meta.url),
      parallelism: 4,
      config: { from: 1, to: 100 },
    },
    { id: 'sum', taskModule: './sum.mjs', parallelism: 1 },
  ],
  edges: [{ from: 'square', to: 'sum', pattern: 'all-to-all' }],
};
