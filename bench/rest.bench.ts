/**
 * The REST API's cost (issue 13): what going through HTTP (fastify, JSON schemas, Flink-shaped
 * views, Node's fetch on loopback) adds to the same calls made on the MiniCluster in process.
 *
 * - `overview`: `GET /overview` (fetch + parse) vs `cluster.overview()`.
 * - `job`: a 1-subtask trivial job from submit to result: `POST /jobs` (spec + uploaded code, its
 *   SHA-256 checked, content-addressed cache hit after the first) vs `cluster.submitJob`, both then
 *   awaiting the result in process, on the same cluster and module.
 * - `GET /jobs/:id/result` of an ended job (what a polling client pays per poll).
 *
 * Ratios (REST ÷ in process) are the figures; absolutes drift with the machine's load. Run with
 * `npm run bench -- rest`; the last line is one JSON object with every figure.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Bench } from 'tinybench';
import { MiniCluster } from '../lib/MiniCluster.js';
import { miniClusterTarget } from '../lib/rest/miniClusterTarget.js';
import { startRestServer } from '../lib/rest/RestServer.js';
import { sha256Hex } from '../lib/rest/TaskCodeCache.js';
import {
  formatSpread,
  printJson,
  printTable,
  round,
  roundedSpread,
  rowNamed,
  runBench,
  spreadOf,
} from './support/report.js';

const ROUNDS = Number(process.env['REST_ROUNDS'] ?? 5);
const JOBS_PER_ROUND = 10;

const TASK = new URL('./support/tasks/subtaskIndex.mjs', import.meta.url);
const code = readFileSync(TASK, 'utf8');
const body = JSON.stringify({
  job: { name: 'trivial', vertices: [{ id: 'v', taskModule: 'subtaskIndex.mjs', parallelism: 1 }] },
  taskCode: [{ name: 'subtaskIndex.mjs', code, sha256: sha256Hex(code) }],
});

const dir = mkdtempSync(join(tmpdir(), 'slotwise-rest-bench-'));
const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 4 });
const server = await startRestServer({ target: miniClusterTarget(cluster, { taskCodeDir: dir }), port: 0 });
try {
  const ended = (await (
    await fetch(`${server.url}/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
  ).json()) as { jobid: string };
  await cluster.dispatcher.getJob(ended.jobid as never)!.result;
  const bench = new Bench({ time: 1_500, warmup: true, warmupTime: 300 });
  bench.add('overview in process', () => {
    cluster.overview();
  });
  bench.add('GET /overview', async () => {
    const response = await fetch(`${server.url}/overview`);
    if (response.status !== 200) throw new Error(`GET /overview answered ${response.status}`);
    await response.json();
  });
  bench.add('GET /jobs/:id/result (ended job)', async () => {
    const answer = (await (await fetch(`${server.url}/jobs/${ended.jobid}/result`)).json()) as {
      status: { id: string };
    };
    if (answer.status.id !== 'COMPLETED') throw new Error('not completed');
  });
  const rows = await runBench(bench);
  printTable(rows);

  // Jobs in interleaved rounds (in process, then over REST, ROUNDS times): a loaded machine drifts
  // over a run, and back-to-back blocks would charge the drift to one side.
  const inProcess = async () => {
    const job = await cluster.submitJob({
      name: 'trivial',
      vertices: [{ id: 'v', taskModule: fileURLToPath(TASK), parallelism: 1 }],
    });
    if ((await job.result).status !== 'finished') throw new Error('job did not finish');
  };
  const overRest = async () => {
    const submitted = await fetch(`${server.url}/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    const { jobid } = (await submitted.json()) as { jobid: string };
    // Waited for in process, as above: only the submit path differs (a client polling the result
    // would take CPU from the job on a small machine and measure its poll interval).
    if ((await cluster.dispatcher.getJob(jobid as never)!.result).status !== 'finished')
      throw new Error('job did not finish');
  };
  const perJob = async (op: () => Promise<void>) => {
    const started = performance.now();
    for (let i = 0; i < JOBS_PER_ROUND; i++) await op();
    return (performance.now() - started) / JOBS_PER_ROUND;
  };
  const local: number[] = [];
  const rest: number[] = [];
  await perJob(inProcess);
  await perJob(overRest);
  for (let round = 0; round < ROUNDS; round++) {
    local.push(await perJob(inProcess));
    rest.push(await perJob(overRest));
  }
  const localSpread = spreadOf(local);
  const restSpread = spreadOf(rest);
  console.log(
    `a trivial job, submit to result, ms per job (min / median / max of ${ROUNDS} rounds of ${JOBS_PER_ROUND}): ` +
      `in process ${formatSpread(localSpread)}, submitted over REST ${formatSpread(restSpread)}`,
  );
  const mean = (name: string) => rowNamed(rows, name).meanMicros;
  const figures = {
    overviewInProcessMicros: round(mean('overview in process')),
    overviewRestMicros: round(mean('GET /overview')),
    overviewRatio: round(mean('GET /overview') / mean('overview in process')),
    jobInProcessMs: roundedSpread(localSpread),
    jobRestMs: roundedSpread(restSpread),
    jobRatioMedian: round(restSpread.median / localSpread.median),
    resultRestMicros: round(mean('GET /jobs/:id/result (ended job)')),
  };
  console.log(
    `GET /overview ${figures.overviewRatio}× overview() in process; ` +
      `a trivial job submitted over REST ${figures.jobRatioMedian}× ` +
      `(median) the same job submitted in process; GET /jobs/:id/result ${figures.resultRestMicros} µs`,
  );
  printJson(figures);
} finally {
  await server.close();
  await cluster.close();
  rmSync(dir, { recursive: true, force: true });
}
