// A REST client of a session cluster, as an application in another process runs one (bench/restJobs.bench.ts):
// N jobs of parallelism 1 one at a time, each POST /jobs with its task module's code, then GET /jobs/:id/result
// until it is no longer IN_PROGRESS, waiting 10 ms before asking again, doubling up to 2 s (Flink's
// RestClusterClient polls a job's result the same way). Plain JavaScript and Node's fetch: nothing of ours loads
// here. Prints one JSON line: each job's ms, the GETs it took, and this process's CPU.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [url, count, codePath] = process.argv.slice(2);
const code = readFileSync(codePath, 'utf8');
const sha256 = createHash('sha256').update(code).digest('hex');
const body = JSON.stringify({
  job: { name: 'p=1 over REST', vertices: [{ id: 'v', taskModule: 'subtaskIndex', parallelism: 1 }] },
  taskCode: [{ name: 'subtaskIndex', code, sha256 }],
});

let gets = 0;
/** Every request is bounded: a JobManager that stops answering fails the benchmark instead of hanging it. */
const REQUEST_TIMEOUT_MS = 30_000;

async function runJob() {
  const posted = await fetch(`${url}/jobs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  if (posted.status !== 202) throw new Error(`POST /jobs: ${posted.status} ${await posted.text()}`);
  const { jobid } = await posted.json();
  for (let wait = 10; ; wait = Math.min(wait * 2, 2_000)) {
    gets++;
    const answer = await fetch(`${url}/jobs/${jobid}/result`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const result = await answer.json();
    if (answer.status !== 200) throw new Error(`GET /jobs/${jobid}/result: ${answer.status}`);
    if (result.status?.id === 'IN_PROGRESS') {
      await new Promise((resolve) => setTimeout(resolve, wait));
      continue;
    }
    const ended = result['job-execution-result'];
    if (ended?.status !== 'finished' || ended.outputs?.v?.[0] !== 0)
      throw new Error(`job ${jobid}: ${JSON.stringify(result).slice(0, 300)}`);
    return;
  }
}

const latencies = [];
const cpu = process.cpuUsage();
for (let i = 0; i < Number(count); i++) {
  const started = performance.now();
  await runJob();
  latencies.push(performance.now() - started);
}
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ latencies, gets, cpuMs: (used.user + used.system) / 1000 }));
