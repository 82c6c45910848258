/**
 * The cost of a gateway call (issue 4, "Benchmarks"), by carrier: `connectGateway` over a Link to
 * a worker thread serving EchoGateway on its mailbox — a hot-path call in the batched frames, a
 * control call by comlink on the control channel (docs/runtime.md, Gateways) — against a raw
 * postMessage round trip (an id and a resolver map, nothing else) to the same kind of worker;
 * sequential (one call waits for the last) and 64 in flight (64 calls issued together, all
 * awaited). Then the same at 64 in flight to a child process (fork, serialization 'advanced', IPC
 * channel): raw `send`, frames, comlink.
 *
 * The workers are test/fixtures/echoWorker.ts and echoProcess.ts. Hops between threads are noisy
 * on a 2-vCPU machine, so the tasks run in ROUNDS interleaved rounds; each figure is given as
 * min / median / max over rounds. Figures are per call: a 64-in-flight task's one iteration is 64
 * calls. Target: a hot-path call within 2× a raw round trip at 64 in flight. CPU per call:
 * bench/rpcCpu.ts.
 *
 * Run with `npm run bench -- rpc`. The last line of output is one JSON object with every figure.
 */
import type { ChildProcess } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import type { Worker } from 'node:worker_threads';
import { Bench } from 'tinybench';
import { connectGateway, type Gateway } from '../lib/rpc/connect.js';
import { forkProcess } from '../lib/rpc/forkProcess.js';
import { Link } from '../lib/rpc/Link.js';
import { startWorker } from '../lib/rpc/startWorker.js';
import { portTransport, processTransport } from '../lib/rpc/Transport.js';
import { ECHO_CHANNEL, ECHO_CONTROL, type EchoGateway } from '../test/fixtures/echoWorker.js';
import { printJson, round, runBench, type BenchRow } from './support/report.js';

const ROUNDS = 5;
const IN_FLIGHT = 64;
const WORKER_ENTRY = new URL('../test/fixtures/echoWorker.ts', import.meta.url);
const PROCESS_ENTRY = new URL('../test/fixtures/echoProcess.ts', import.meta.url);
/** About what a control call carries (an AllocationID, a JobID, an index). */
const PAYLOAD = { allocationId: 'alloc-5f0c9a7e2b1d4c3a', jobId: 'job-9e8d7c6b5a4f3e2d', index: 3 };

type Call = (payload: unknown) => Promise<unknown>;

/** The raw baseline: each call one message `{ id, payload }`, answers matched by id. */
function rawCaller(post: (message: unknown) => void, onMessage: (handler: (message: unknown) => void) => void): Call {
  let nextId = 0;
  const pending = new Map<number, (value: unknown) => void>();
  onMessage((message) => {
    const { id, payload } = message as { id: number; payload: unknown };
    const resolve = pending.get(id);
    pending.delete(id);
    resolve?.(payload);
  });
  return (payload) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      post({ id, payload });
    });
}

/** `echo` as a hot-path call (frames), or as a control call (comlink on the control channel). */
function gatewayCaller(link: Link, carrier: 'frames' | 'control'): Call {
  const gateway: Gateway<EchoGateway> = connectGateway<EchoGateway>(link, ECHO_CHANNEL, {
    gateway: 'EchoGateway',
    timeoutMs: 30_000,
    ...(carrier === 'control' ? { control: ECHO_CONTROL } : {}),
  });
  return (payload) => gateway.echo(payload);
}

const sequential = (call: Call) => async () => {
  await call(PAYLOAD);
};

const inFlight = (call: Call) => async () => {
  const calls: Promise<unknown>[] = new Array(IN_FLIGHT);
  for (let i = 0; i < IN_FLIGHT; i++) calls[i] = call(PAYLOAD);
  await Promise.all(calls);
};

function onceMessage(target: Worker | ChildProcess): Promise<void> {
  return new Promise((resolve, reject) => {
    target.once('error', reject);
    target.once('message', () => resolve());
  });
}

// ------------------------------------------------------------------------------ setup

const rawWorker = startWorker(WORKER_ENTRY, { mode: 'raw' });
const gatewayWorker = startWorker(WORKER_ENTRY);
const rawChild = forkProcess(PROCESS_ENTRY, ['raw']);
const gatewayChild = forkProcess(PROCESS_ENTRY);

const threadRaw = rawCaller(
  (m) => rawWorker.postMessage(m),
  (h) => rawWorker.on('message', h),
);
const threadLink = new Link('bench → worker', portTransport(gatewayWorker));
const threadGateway = gatewayCaller(threadLink, 'frames');
// The same worker, the same Link: its control channel.
const threadControl = gatewayCaller(threadLink, 'control');
const processRaw = rawCaller(
  (m) => rawChild.send(m as object),
  (h) => rawChild.on('message', h),
);
const processLink = new Link('bench → process', processTransport(gatewayChild));
const processGateway = gatewayCaller(processLink, 'frames');
const processControl = gatewayCaller(processLink, 'control');

// Everything up (the raw ones answer their first message; the gateways their first call).
const started = performance.now();
const rawWorkerUp = onceMessage(rawWorker);
rawWorker.postMessage({ id: -1, payload: null });
const rawChildUp = onceMessage(rawChild);
rawChild.send({ id: -1, payload: null });
await Promise.all([
  rawWorkerUp,
  rawChildUp,
  threadGateway(PAYLOAD),
  threadControl(PAYLOAD),
  processGateway(PAYLOAD),
  processControl(PAYLOAD),
]);
const startupMs = performance.now() - started;

const TASKS = {
  threadRawSeq: ['thread raw, sequential', sequential(threadRaw), 1],
  threadGatewaySeq: ['thread hot path (frames), sequential', sequential(threadGateway), 1],
  threadControlSeq: ['thread control (comlink), sequential', sequential(threadControl), 1],
  threadRaw64: [`thread raw, ${IN_FLIGHT} in flight`, inFlight(threadRaw), IN_FLIGHT],
  threadGateway64: [`thread hot path (frames), ${IN_FLIGHT} in flight`, inFlight(threadGateway), IN_FLIGHT],
  threadControl64: [`thread control (comlink), ${IN_FLIGHT} in flight`, inFlight(threadControl), IN_FLIGHT],
  processRaw64: [`process raw, ${IN_FLIGHT} in flight`, inFlight(processRaw), IN_FLIGHT],
  processGateway64: [`process hot path (frames), ${IN_FLIGHT} in flight`, inFlight(processGateway), IN_FLIGHT],
  processControl64: [`process control (comlink), ${IN_FLIGHT} in flight`, inFlight(processControl), IN_FLIGHT],
} as const;
type TaskKey = keyof typeof TASKS;

// ------------------------------------------------------------------------------ runs

const perRound = Object.fromEntries(Object.keys(TASKS).map((key) => [key, [] as BenchRow[]])) as Record<
  TaskKey,
  BenchRow[]
>;
for (let round = 0; round < ROUNDS; round++) {
  const bench = new Bench({ name: `rpc round ${round + 1}`, time: 700, warmupTime: 200, iterations: 16 });
  for (const [name, fn] of Object.values(TASKS)) bench.add(name, fn);
  const rows = await runBench(bench);
  (Object.keys(TASKS) as TaskKey[]).forEach((key, i) => perRound[key].push(rows[i]!));
}

const median = (values: number[]) => {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)]!;
};

interface Figure {
  readonly callsPerSec: number;
  readonly microsPerCall: number;
  /** Over rounds: the fastest and slowest round's µs per call. */
  readonly minMicrosPerCall: number;
  readonly maxMicrosPerCall: number;
  /** p99 of one iteration (one call, or 64 together). */
  readonly p99IterationMicros: number;
}

const figures = {} as Record<TaskKey, Figure>;
for (const key of Object.keys(TASKS) as TaskKey[]) {
  const calls = TASKS[key][2];
  const rows = perRound[key];
  const micros = rows.map((r) => r.meanMicros / calls).filter(Number.isFinite);
  figures[key] = {
    callsPerSec: median(rows.map((r) => r.opsPerSec * calls)),
    microsPerCall: median(micros),
    minMicrosPerCall: Math.min(...micros),
    maxMicrosPerCall: Math.max(...micros),
    p99IterationMicros: median(rows.map((r) => r.p99Micros)),
  };
}

console.table(
  (Object.keys(TASKS) as TaskKey[]).map((key) => ({
    task: TASKS[key][0],
    'calls/s (median)': Math.round(figures[key].callsPerSec).toLocaleString('en-US'),
    'µs/call min / median / max': [
      figures[key].minMicrosPerCall,
      figures[key].microsPerCall,
      figures[key].maxMicrosPerCall,
    ]
      .map((value) => round(value))
      .join(' / '),
    'p99 µs/iteration': round(figures[key].p99IterationMicros),
  })),
);

/** How many times slower the gateway is than raw (time per call; > 1 = slower). */
const ratio = (gateway: TaskKey, raw: TaskKey) => figures[gateway].microsPerCall / figures[raw].microsPerCall;
const ratioThreadSeq = ratio('threadGatewaySeq', 'threadRawSeq');
const ratioThread64 = ratio('threadGateway64', 'threadRaw64');
const ratioProcess64 = ratio('processGateway64', 'processRaw64');
const ratioControlSeq = ratio('threadControlSeq', 'threadRawSeq');
const ratioControl64 = ratio('threadControl64', 'threadRaw64');
const ratioControlProcess64 = ratio('processControl64', 'processRaw64');
const ratioControlOverFrames64 = ratio('threadControl64', 'threadGateway64');
console.log(`hot path / raw, thread, sequential:         ${round(ratioThreadSeq)}×`);
console.log(
  `hot path / raw, thread, ${IN_FLIGHT} in flight:       ${round(ratioThread64)}× ` +
    ` (target ≤ 2×: ${ratioThread64 <= 2 ? 'met' : 'MISSED'})`,
);
console.log(`hot path / raw, process, ${IN_FLIGHT} in flight:      ${round(ratioProcess64)}×`);
console.log(`control / raw, thread, sequential:          ${round(ratioControlSeq)}×`);
console.log(`control / raw, thread, ${IN_FLIGHT} in flight:        ${round(ratioControl64)}×`);
console.log(`control / raw, process, ${IN_FLIGHT} in flight:       ${round(ratioControlProcess64)}×`);
console.log(`control / hot path, thread, ${IN_FLIGHT} in flight:   ${round(ratioControlOverFrames64)}×`);

threadLink.close('bench done');
processLink.close('bench done');
rawChild.disconnect();
await Promise.all([rawWorker.terminate(), gatewayWorker.terminate()]);

printJson({
  bench: 'rpc',
  inFlight: IN_FLIGHT,
  rounds: ROUNDS,
  threadRawSeqCallsPerSec: Math.round(figures.threadRawSeq.callsPerSec),
  threadGatewaySeqCallsPerSec: Math.round(figures.threadGatewaySeq.callsPerSec),
  threadRaw64CallsPerSec: Math.round(figures.threadRaw64.callsPerSec),
  threadGateway64CallsPerSec: Math.round(figures.threadGateway64.callsPerSec),
  threadControlSeqCallsPerSec: Math.round(figures.threadControlSeq.callsPerSec),
  threadControl64CallsPerSec: Math.round(figures.threadControl64.callsPerSec),
  processControl64CallsPerSec: Math.round(figures.processControl64.callsPerSec),
  processRaw64CallsPerSec: Math.round(figures.processRaw64.callsPerSec),
  processGateway64CallsPerSec: Math.round(figures.processGateway64.callsPerSec),
  ratioGatewayOverRawThreadSeq: round(ratioThreadSeq),
  ratioGatewayOverRaw64: round(ratioThread64),
  ratioGatewayOverRawProcess64: round(ratioProcess64),
  ratioControlOverRawThreadSeq: round(ratioControlSeq),
  ratioControlOverRaw64: round(ratioControl64),
  ratioControlOverRawProcess64: round(ratioControlProcess64),
  ratioControlOverHotPath64: round(ratioControlOverFrames64),
  microsPerCall: Object.fromEntries(
    (Object.keys(TASKS) as TaskKey[]).map((key) => [
      key,
      {
        min: round(figures[key].minMicrosPerCall),
        median: round(figures[key].microsPerCall),
        max: round(figures[key].maxMicrosPerCall),
      },
    ]),
  ),
  target64: 2,
  targetMet: ratioThread64 <= 2,
  startupMs: Math.round(startupMs),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
