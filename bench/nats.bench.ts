/**
 * A gateway call over NATS (issue 13, "Benchmarks"): `connectGateway` to EchoGateway served on its
 * mailbox, over a Link on the NATS transport (lib/rpc/natsTransport.ts: two connections to a real
 * nats-server on loopback, both ends in this process) against the same call over the in-process
 * Link (memoryTransportPair); sequential and 64 in flight, per call, medians of interleaved rounds.
 * The ratio says what the network hop through the server costs over the runtime's own call path.
 * Needs nats-server (apt-get install -y nats-server); without it the bench says so and exits 0.
 *
 * Run with `npm run bench -- nats`. The last line of output is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import { connect } from '@nats-io/transport-node';
import { Bench } from 'tinybench';
import { connectGateway, serveGateway } from '../lib/rpc/connect.js';
import { Link } from '../lib/rpc/Link.js';
import { MainThreadExecutor } from '../lib/rpc/MainThreadExecutor.js';
import { memoryTransportPair } from '../lib/rpc/memoryTransport.js';
import { NatsInbox } from '../lib/rpc/natsTransport.js';
import { ECHO_CHANNEL, echoImplementation, type EchoGateway } from '../test/fixtures/echoWorker.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { printJson, round, runBench, type BenchRow } from './support/report.js';

const ROUNDS = 3;
const IN_FLIGHT = 64;
const PAYLOAD = { allocationId: 'alloc-5f0c9a7e2b1d4c3a', jobId: 'job-9e8d7c6b5a4f3e2d', index: 3 };

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}
const server = await startNatsServer(binary);
const serving = await connect({ servers: server.url });
const calling = await connect({ servers: server.url });
const mailbox = new MainThreadExecutor('EchoGateway');

// Over NATS: the serving inbox opens a Link per peer; the calling side one Link to it.
const servedInbox = new NatsInbox({ connection: serving, subject: 'slotwise.bench.rm', id: 'jobmanager' });
const servedLinks: Link[] = [];
servedInbox.onUnknownPeer((peerId, reply) => {
  const transport = servedInbox.transportTo(peerId, reply);
  const link = new Link(`bench served ${peerId}`, transport);
  serveGateway(link, ECHO_CHANNEL, echoImplementation(mailbox), { mailbox, gateway: 'EchoGateway' });
  servedLinks.push(link);
  return transport;
});
const callingInbox = new NatsInbox({ connection: calling, subject: 'slotwise.bench.te.bench-1', id: 'bench-1' });
const natsLink = new Link('bench over NATS', callingInbox.transportTo('jobmanager', 'slotwise.bench.rm'));
const natsGateway = connectGateway<EchoGateway>(natsLink, ECHO_CHANNEL, { gateway: 'EchoGateway', timeoutMs: 30_000 });

// In process: the same gateway over two Links joined in memory.
const [a, b] = memoryTransportPair();
const servedMemory = new Link('bench served in memory', b);
serveGateway(servedMemory, ECHO_CHANNEL, echoImplementation(mailbox), { mailbox, gateway: 'EchoGateway' });
const memoryLink = new Link('bench in memory', a);
const memoryGateway = connectGateway<EchoGateway>(memoryLink, ECHO_CHANNEL, {
  gateway: 'EchoGateway',
  timeoutMs: 30_000,
});

await Promise.all([natsGateway.echo(PAYLOAD), memoryGateway.echo(PAYLOAD)]);

type Call = () => Promise<unknown>;
const sequential = (call: Call) => async () => void (await call());
const inFlight = (call: Call) => async () => {
  const calls: Promise<unknown>[] = new Array(IN_FLIGHT);
  for (let i = 0; i < IN_FLIGHT; i++) calls[i] = call();
  await Promise.all(calls);
};
const viaNats: Call = () => natsGateway.echo(PAYLOAD);
const inMemory: Call = () => memoryGateway.echo(PAYLOAD);

const TASKS = {
  memorySeq: ['in-process link, sequential', sequential(inMemory), 1],
  natsSeq: ['NATS, sequential', sequential(viaNats), 1],
  memory64: [`in-process link, ${IN_FLIGHT} in flight`, inFlight(inMemory), IN_FLIGHT],
  nats64: [`NATS, ${IN_FLIGHT} in flight`, inFlight(viaNats), IN_FLIGHT],
} as const;
type TaskKey = keyof typeof TASKS;

const perRound: Record<TaskKey, BenchRow[]> = { memorySeq: [], natsSeq: [], memory64: [], nats64: [] };
for (let r = 0; r < ROUNDS; r++) {
  const bench = new Bench({ name: `nats round ${r + 1}`, time: 700, warmupTime: 200, iterations: 16 });
  for (const [name, fn] of Object.values(TASKS)) bench.add(name, fn);
  const rows = await runBench(bench);
  (Object.keys(TASKS) as TaskKey[]).forEach((key, i) => perRound[key].push(rows[i]!));
}

const median = (values: number[]) => {
  const sorted = values.filter(Number.isFinite).sort((x, y) => x - y);
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)]!;
};
const micros = {} as Record<TaskKey, number>;
for (const key of Object.keys(TASKS) as TaskKey[])
  micros[key] = median(perRound[key].map((row) => row.meanMicros / TASKS[key][2]));

console.table(
  (Object.keys(TASKS) as TaskKey[]).map((key) => ({
    task: TASKS[key][0],
    'calls/s': Math.round(1e6 / micros[key]).toLocaleString('en-US'),
    'µs/call': round(micros[key]),
    rounds: perRound[key].map((row) => Math.round(row.opsPerSec * TASKS[key][2])).join(' / '),
  })),
);
const ratioSeq = micros.natsSeq / micros.memorySeq;
const ratio64 = micros.nats64 / micros.memory64;
console.log(`NATS / in-process link, sequential:   ${round(ratioSeq)}×`);
console.log(`NATS / in-process link, ${IN_FLIGHT} in flight: ${round(ratio64)}×`);

natsLink.close('bench done');
memoryLink.close('bench done');
for (const link of servedLinks) link.close('bench done');
callingInbox.close();
servedInbox.close();
mailbox.close();
await Promise.all([serving.close(), calling.close()]);
await server.stop();

printJson({
  bench: 'nats',
  inFlight: IN_FLIGHT,
  rounds: ROUNDS,
  memorySeqCallsPerSec: Math.round(1e6 / micros.memorySeq),
  natsSeqCallsPerSec: Math.round(1e6 / micros.natsSeq),
  memory64CallsPerSec: Math.round(1e6 / micros.memory64),
  nats64CallsPerSec: Math.round(1e6 / micros.nats64),
  ratioNatsOverMemorySeq: round(ratioSeq),
  ratioNatsOverMemory64: round(ratio64),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
