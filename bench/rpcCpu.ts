/**
 * What a gateway call costs in CPU, thread by thread: a profiling aid beside bench/rpc.bench.ts,
 * not a benchmark (`npm run bench` does not run it). Usage:
 *
 *   node --import tsx bench/rpcCpu.ts [calls] [rounds] [in flight]     (default: 40000 5 64)
 *
 * Calls EchoGateway.echo on a worker thread (test/fixtures/echoWorker.ts), 64 in flight (or as
 * many as asked; 1: one call at a time), in
 * interleaved rounds against a raw postMessage round trip to another such worker and against the
 * same call as a control method (by comlink on the gateway's control channel, to a third worker;
 * docs/runtime.md, Gateways). Prints, per round and as medians, the CPU per call on the calling (main) thread, on
 * the worker's thread and over every thread of the process (V8's platform threads included), from
 * /proc. CPU per call is steadier than calls/s on a shared machine; still compare builds with
 * alternating runs (docs/profiling.md).
 */
import { readdirSync } from 'node:fs';
import type { Worker } from 'node:worker_threads';
import { connectGateway } from '../lib/rpc/connect.js';
import { Link } from '../lib/rpc/Link.js';
import { startWorker } from '../lib/rpc/startWorker.js';
import { portTransport } from '../lib/rpc/Transport.js';
import { ECHO_CHANNEL, ECHO_CONTROL, type EchoGateway } from '../test/fixtures/echoWorker.js';
import { cpuTicks, USER_HZ } from './support/procStat.js';

const WORKER_ENTRY = new URL('../test/fixtures/echoWorker.ts', import.meta.url);
const PAYLOAD = { allocationId: 'alloc-5f0c9a7e2b1d4c3a', jobId: 'job-9e8d7c6b5a4f3e2d', index: 3 };

const calls = Number(process.argv[2] ?? 40_000);
const rounds = Number(process.argv[3] ?? 5);
const IN_FLIGHT = Number(process.argv[4] ?? 64);
if (!Number.isSafeInteger(IN_FLIGHT) || IN_FLIGHT < 1)
  throw new Error(`in flight must be a positive integer, got ${process.argv[4]}`);
if (!Number.isSafeInteger(calls) || calls < IN_FLIGHT)
  throw new Error(`calls must be an integer >= ${IN_FLIGHT}, got ${process.argv[2]}`);
if (!Number.isSafeInteger(rounds) || rounds < 1)
  throw new Error(`rounds must be a positive integer, got ${process.argv[3]}`);

type Call = (payload: unknown) => Promise<unknown>;

function threads(): string[] {
  return readdirSync('/proc/self/task');
}

/** Starts a worker and tells which of this process's threads appeared with it (its JS thread among them). */
async function started(
  entry: URL,
  workerData: unknown,
  up: (worker: Worker) => Promise<unknown>,
): Promise<{ worker: Worker; tids: string[] }> {
  const before = new Set(threads());
  const worker = startWorker(entry, workerData);
  await up(worker);
  return { worker, tids: threads().filter((tid) => !before.has(tid)) };
}

function rawCaller(worker: Worker): Call {
  let nextId = 0;
  const pending = new Map<number, (value: unknown) => void>();
  worker.on('message', (message: { id: number; payload: unknown }) => {
    const resolve = pending.get(message.id);
    pending.delete(message.id);
    resolve?.(message.payload);
  });
  return (payload) =>
    new Promise((resolve) => {
      const id = nextId++;
      pending.set(id, resolve);
      worker.postMessage({ id, payload });
    });
}

const rawWorker = await started(WORKER_ENTRY, { mode: 'raw' }, (worker) => {
  const up = new Promise((resolve) => worker.once('message', resolve));
  worker.postMessage({ id: -1, payload: null });
  return up;
});
const raw = rawCaller(rawWorker.worker);

let gatewayLink!: Link;
let gateway!: Call;
const gatewayWorker = await started(WORKER_ENTRY, undefined, (worker) => {
  gatewayLink = new Link('rpcCpu → worker', portTransport(worker));
  const echo = connectGateway<EchoGateway>(gatewayLink, ECHO_CHANNEL, { gateway: 'EchoGateway', timeoutMs: 30_000 });
  gateway = (payload) => echo.echo(payload);
  return gateway(PAYLOAD);
});

let controlLink!: Link;
let control!: Call;
const controlWorker = await started(WORKER_ENTRY, undefined, (worker) => {
  controlLink = new Link('rpcCpu → control worker', portTransport(worker));
  const echo = connectGateway<EchoGateway>(controlLink, ECHO_CHANNEL, {
    gateway: 'EchoGateway',
    timeoutMs: 30_000,
    control: ECHO_CONTROL,
  });
  control = (payload) => echo.echo(payload);
  return control(PAYLOAD);
});

function drive(call: Call, count: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let next = 0;
    let done = 0;
    const launch = (): void => {
      next++;
      call(PAYLOAD).then(() => {
        if (++done === count) resolve();
        else if (next < count) launch();
      }, reject);
    };
    for (let k = 0; k < Math.min(IN_FLIGHT, count); k++) launch();
  });
}

function ticks(tids: readonly string[]): number {
  let sum = 0;
  for (const tid of tids) sum += cpuTicks(`/proc/self/task/${tid}/stat`) ?? 0;
  return sum;
}

interface Figures {
  readonly main: number;
  readonly worker: number;
  readonly total: number;
}

async function measure(call: Call, workerTids: readonly string[]): Promise<Figures> {
  const all = threads();
  const main = [String(process.pid)];
  const before = { main: ticks(main), worker: ticks(workerTids), total: ticks(all) };
  await drive(call, calls);
  const perCall = (spent: number) => (spent * 1e6) / USER_HZ / calls;
  return {
    main: perCall(ticks(main) - before.main),
    worker: perCall(ticks(workerTids) - before.worker),
    total: perCall(ticks(threads()) - before.total),
  };
}

const variants = {
  gateway: [gateway, gatewayWorker.tids],
  raw: [raw, rawWorker.tids],
  control: [control, controlWorker.tids],
} as const;
type Variant = keyof typeof variants;
const results: Record<Variant, Figures[]> = { gateway: [], raw: [], control: [] };
for (const [call] of Object.values(variants)) await drive(call, 5_000);
for (let round = 0; round < rounds; round++) {
  for (const name of Object.keys(variants) as Variant[]) {
    const [call, tids] = variants[name];
    const figures = await measure(call, tids);
    results[name].push(figures);
    console.log(
      `round ${round + 1} ${name.padEnd(12)} main ${figures.main.toFixed(1)} µs, ` +
        `worker ${figures.worker.toFixed(1)} µs, all threads ${figures.total.toFixed(1)} µs per call`,
    );
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
for (const name of Object.keys(variants) as Variant[]) {
  const rows = results[name];
  console.log(
    `median ${name.padEnd(12)} main ${median(rows.map((r) => r.main)).toFixed(1)} ` +
      `µs, worker ${median(rows.map((r) => r.worker)).toFixed(1)} ` +
      `µs, all threads ${median(rows.map((r) => r.total)).toFixed(1)} ` +
      `µs per call (${calls} calls, ${IN_FLIGHT} in flight)`,
  );
}

gatewayLink.close('done');
controlLink.close('done');
await Promise.all([rawWorker.worker.terminate(), gatewayWorker.worker.terminate(), controlWorker.worker.terminate()]);
