/**
 * Speculative execution (issue 28 item 2): a job of 64 subtasks of 1 s, two of them stragglers (their first attempt
 * 10× slower, 10 s), on one warm MiniCluster of 2 TaskExecutors × 16 slots (thread mode): time from submit to result
 * with speculation (an adaptive-scheduler job; execution.batch.speculative.enabled) against without (the same job
 * under the default scheduler, which never speculates), in ROUNDS interleaved rounds after one warm-up job of each.
 * Target: with ≤ 0.5× without (median).
 *
 * The detector runs with Flink's defaults (check every 1 s, ratio 0.75, multiplier 1.5) but a 1 s lower bound
 * instead of 1 min (a subtask of this job runs 1 s); a slow TaskExecutor is blocked for 2 s, and each run waits
 * until no TaskExecutor is blocked any more and every task thread is back and idle (untilSettled), so that each job
 * finds the whole cluster as the others did. The stragglers are
 * subtasks 0 and 1: first-fit placement puts their first attempts on the same TaskExecutor, which the bench checks
 * from the job events and prints. `npm run bench -- speculative`; the last line is one JSON object with every figure.
 */
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { JobEvent } from '../lib/jobmaster/JobMaster.js';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import { MiniCluster } from '../lib/MiniCluster.js';
import { formatSpread, printJson, round, roundedSpread, spreadOf } from './support/report.js';

const ROUNDS = Number(process.env['SPECULATIVE_ROUNDS'] ?? 3);
const P = 64;
const MS = 1_000;
const STRAGGLERS = [0, 1];
const TASK = fileURLToPath(new URL('./support/tasks/straggler.mjs', import.meta.url));

const job = (scheduler: 'default' | 'adaptive'): JobGraphSpec => ({
  name: `${P} subtasks, ${STRAGGLERS.length} stragglers (${scheduler})`,
  scheduler,
  vertices: [
    { id: 'work', taskModule: TASK, parallelism: P, config: { ms: MS, stragglers: STRAGGLERS, slowdown: 10 } },
  ],
});

const cluster = await MiniCluster.start({
  taskExecutors: 2,
  slotsPerTaskExecutor: 16,
  resources: { cpuCores: 16, taskHeapMemory: '2g' },
  configuration: {
    'jobmanager.scheduler': 'adaptive',
    'execution.batch.speculative.enabled': true,
    'slow-task-detector.execution-time.baseline-lower-bound': '1 s',
    'execution.batch.speculative.block-slow-node-duration': '2 s',
  },
});

/**
 * Until the cluster is as the previous run found it: no TaskExecutor blocked (a speculative run's block has ended)
 * and every task thread back in its TaskExecutor's reserve, idle. A thread given back runs a full collection under
 * --expose-gc (`npm run bench` passes it), 32 of them at once on this machine: a job submitted while they do waits
 * for its threads, and the run right after another (without the wait for a block to end) would pay for it alone.
 */
async function untilSettled(): Promise<void> {
  const slots = 16; // slotsPerTaskExecutor: the spares each TaskExecutor keeps
  for (;;) {
    const blocked = cluster.resourceManager.slotManager.overview().taskManagers.some((t) => t.blocked);
    const metrics = await cluster.taskExecutorMetrics();
    if (
      !blocked &&
      metrics.every((m) => m.taskThreads !== null && m.taskThreads.inUse === 0 && m.taskThreads.spare >= slots)
    )
      return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface Run {
  readonly ms: number;
  readonly speculativeAttempts: number;
  /** Ms from submit to the first speculative attempt scheduled (the detection), and to the last one finishing. */
  readonly detectedMs: number | null;
  readonly speculativeDoneMs: number | null;
  /** Ms from submit to the 48th subtask finished (when the detector may look: baseline-ratio 0.75). */
  readonly ratioReachedMs: number | null;
  /** Where each straggler's first attempt ran. */
  readonly stragglerExecutors: ReadonlySet<string>;
}

async function run(scheduler: 'default' | 'adaptive'): Promise<Run> {
  await untilSettled();
  const started = performance.now();
  const startedAt = Date.now();
  const client = await cluster.submitJob(job(scheduler));
  const events: Array<Extract<JobEvent, { type: 'task' }>> = [];
  client.onEvent((event) => {
    if (event.type === 'task') events.push(event);
  });
  const result = await client.result;
  const ms = performance.now() - started;
  if (result.status !== 'finished')
    throw new Error(`job ${scheduler} ended ${result.status}: ${result.error?.message}`);
  const outputs = result.outputs['work'] as number[];
  if (outputs.length !== P || outputs.some((o, i) => o !== i)) throw new Error(`wrong outputs: ${outputs.join(',')}`);
  const stragglerExecutors = new Set(
    events.flatMap((e) =>
      STRAGGLERS.includes(e.subtaskIndex) && e.attemptNumber === 0 && e.resourceId !== null ? [e.resourceId] : [],
    ),
  );
  const speculative = events.filter((e) => e.speculative);
  const speculativeAttempts = new Set(speculative.map((e) => e.executionAttemptId)).size;
  const since = (e: { timestamp: number } | undefined) => (e === undefined ? null : e.timestamp - startedAt);
  const finished = events.filter((e) => e.state === 'finished');
  return {
    ms,
    speculativeAttempts,
    detectedMs: since(speculative.find((e) => e.state === 'scheduled')),
    speculativeDoneMs: since(finished.filter((e) => e.attemptNumber > 0).at(-1)),
    ratioReachedMs: since(finished[Math.round(P * 0.75) - 1]),
    stragglerExecutors,
  };
}

try {
  const load = loadavg()[0]!;
  const warm = [await run('default'), await run('adaptive')];
  const without: Run[] = [];
  const withSpeculation: Run[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    without.push(await run('default'));
    withSpeculation.push(await run('adaptive'));
    const [plain, last] = [without.at(-1)!, withSpeculation.at(-1)!];
    console.log(
      `round ${r + 1}: without ${round(plain.ms)} ms (48th subtask done at ${plain.ratioReachedMs} ms), ` +
        `with ${round(last.ms)} ms (48th done at ${last.ratioReachedMs} ms, ${last.speculativeAttempts} speculative ` +
        `attempts, scheduled at ${last.detectedMs} ms, the last to win finished at ${last.speculativeDoneMs} ms)`,
    );
  }
  const withoutSpread = spreadOf(without.map((r) => r.ms));
  const withSpread = spreadOf(withSpeculation.map((r) => r.ms));
  const ratio = withSpread.median / withoutSpread.median;
  const pinned = [...warm, ...without, ...withSpeculation].every((r) => r.stragglerExecutors.size === 1);
  console.log(
    `${P} subtasks of ${MS} ms, ${STRAGGLERS.length} stragglers of ${10 * MS} ms ` +
      `(${pinned ? 'both on one TaskExecutor in every run' : 'NOT always on one TaskExecutor'}), ` +
      `ms submit → result (min / median / max of ${ROUNDS} interleaved rounds): ` +
      `without speculation ${formatSpread(withoutSpread)}, with ${formatSpread(withSpread)}; ` +
      `with / without ${round(ratio)} (target ≤ 0.5: ${ratio <= 0.5 ? 'met' : 'not met'}); ` +
      `load ${round(load)} → ${round(loadavg()[0]!)}`,
  );
  printJson({
    rounds: ROUNDS,
    subtasks: P,
    subtaskMs: MS,
    stragglers: STRAGGLERS.length,
    withoutMs: roundedSpread(withoutSpread),
    withMs: roundedSpread(withSpread),
    ratioMedian: round(ratio),
    targetMet: ratio <= 0.5,
    speculativeAttemptsPerRun: withSpeculation.map((r) => r.speculativeAttempts),
    detectedMsPerRun: withSpeculation.map((r) => r.detectedMs),
    speculativeDoneMsPerRun: withSpeculation.map((r) => r.speculativeDoneMs),
    stragglersOnOneExecutor: pinned,
    loadBefore: round(load),
    loadAfter: round(loadavg()[0]!),
  });
} finally {
  await cluster.close();
}
