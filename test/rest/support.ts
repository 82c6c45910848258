/**
 * Shared by the REST and CLI tests: task code as ES module text, and a fetch that returns status, headers and parsed
 * JSON.
 */
import type { RestTarget } from '../../lib/rest/RestTarget.js';
import { sha256Hex } from '../../lib/rest/TaskCodeCache.js';

export const SQUARE = `export default async function square(context) {
  const { to } = context.config;
  const squares = [];
  for (let n = 1 + context.subtaskIndex; n <= to; n += context.parallelism) squares.push(n * n);
  return squares;
}
`;
export const SUM = `export default async function sum(context, inputs) {
  return inputs.square.flat().reduce((a, b) => a + b, 0);
}
`;
/** Waits config.ms, or stops at once when canceled. */
export const SLEEP = `export default async function sleep(context) {
  await new Promise((resolve, reject) => {
    if (context.signal.aborted) return reject(new Error('canceled'));
    const timer = setTimeout(resolve, context.config.ms);
    context.signal.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('canceled')); });
  });
  return context.subtaskIndex;
}
`;

export const upload = (name: string, code: string) => ({ name, code, sha256: sha256Hex(code) });

/** The sum of the squares of 1..to over `parallelism` square subtasks and one sum. */
export function sumOfSquaresBody(to = 100, parallelism = 4) {
  return {
    job: {
      name: 'sum of squares',
      vertices: [
        { id: 'square', taskModule: 'square.mjs', parallelism, config: { to } },
        { id: 'sum', taskModule: 'sum.mjs', parallelism: 1 },
      ],
      edges: [{ from: 'square', to: 'sum', pattern: 'all-to-all' }],
      restartStrategy: { type: 'none' },
    },
    taskCode: [upload('square.mjs', SQUARE), upload('sum.mjs', SUM)],
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read the response's JSON by path
  readonly json: any;
}

/** One request; a JSON body unless `raw` gives the body and its content type. */
export async function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  raw?: { body: string; type: string },
): Promise<Answer> {
  const init: RequestInit = { method, signal: AbortSignal.timeout(30_000) };
  if (raw !== undefined) init.headers = { 'content-type': raw.type };
  else if (body !== undefined) init.headers = { 'content-type': 'application/json' };
  if (raw !== undefined) init.body = raw.body;
  else if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(`${base}${path}`, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}

const refuse = (name: string) => () => Promise.reject(new Error(`${name} was not expected`));

/** A RestTarget of function fields, no cluster: each call not overridden fails saying it was not expected. */
export function testingTarget(overrides: Partial<RestTarget> = {}): RestTarget {
  return {
    storeTaskCode: refuse('storeTaskCode'),
    submitJob: refuse('submitJob'),
    listJobs: refuse('listJobs'),
    jobDetails: refuse('jobDetails'),
    jobResult: refuse('jobResult'),
    jobEvents: refuse('jobEvents'),
    jobExceptions: refuse('jobExceptions'),
    cancelJob: refuse('cancelJob'),
    overview: refuse('overview'),
    ...overrides,
  };
}
