/**
 * The session cluster's job store (lib/cluster/JobStore.ts) on a real nats-server with JetStream, its
 * max_payload set to 64 KiB so that an entry too large for one message is cheap to make: a job's graph
 * and result that fit one message are one KV entry each, forgotten without a trace; larger ones go to the
 * object store, and so do entries an earlier version wrote there, which are read as before. Processes
 * that open the same cluster's store at once all open it. Skipped with a line saying so when nats-server
 * is not installed.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import { serialize } from 'node:v8';
import { JobID } from '../../lib/core/ids.js';
import type { JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';
import type { JobResult } from '../../lib/jobmaster/JobResult.js';
import { BlobStore } from '../../lib/cluster/BlobStore.js';
import { JobStore, type StoredJob } from '../../lib/cluster/JobStore.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const CLUSTER = 'store';
const MAX_PAYLOAD = 64 * 1024;

let submitted = 0;
const storedJob = (name: string, inline = ''): StoredJob => ({
  jobId: JobID.generate(),
  // `inline` stands for what makes a graph large (a spec crosses as v8.serialize takes it).
  spec: {
    name,
    vertices: [{ id: 'v', taskModule: `slotwise-code:${'0'.repeat(64)}`, parallelism: 1 }],
    inline,
  } as JobGraphSpec,
  submittedAt: ++submitted,
});

const resultOf = (job: StoredJob, outputs: unknown[] = [1]): JobResult => ({
  jobId: job.jobId,
  jobName: job.spec.name,
  status: 'finished',
  outputs: { v: outputs },
  error: null,
  restarts: 0,
  durationMs: 5,
});

describe('the job store (JetStream KV and object store)', function () {
  this.timeout(30_000);
  let server: NatsServer | undefined;
  let nc: NatsConnection | undefined;
  let store: JobStore;

  before(async function () {
    const binary = natsServerOrSkip(this, 'the job store');
    server = await startNatsServer(binary, { maxPayload: MAX_PAYLOAD });
    nc = await connect({ servers: server.url });
  });

  after(async () => {
    await nc?.close();
    await server?.stop();
  });

  beforeEach(async () => {
    // A store over emptied buckets: each test sees only its own entries.
    const jsm = await jetstreamManager(nc!);
    for await (const stream of jsm.streams.list()) await jsm.streams.purge(stream.config.name);
    store = await JobStore.open(nc!, CLUSTER, 60_000);
  });

  /** How many messages the named stream holds. */
  async function messages(stream: string): Promise<number> {
    const jsm = await jetstreamManager(nc!);
    return (await jsm.streams.info(stream)).state.messages;
  }

  it("keeps a small job's graph and result as one KV message each, and forgets the graph without a trace", async () => {
    const job = storedJob('small');
    await store.putJob(job);
    expect(await messages(`KV_slotwise-${CLUSTER}-jobs`)).to.equal(1);
    expect(await messages(`OBJ_slotwise-${CLUSTER}-jobs`)).to.equal(0);
    expect(await store.jobs(() => expect.fail('nothing to skip'))).to.deep.equal([job]);

    await store.putResult(resultOf(job), 1234);
    // The graph is purged (no delete marker left for good), the result is one message.
    expect(await messages(`KV_slotwise-${CLUSTER}-jobs`)).to.equal(0);
    expect(await messages(`KV_slotwise-${CLUSTER}-results`)).to.equal(1);
    expect(await messages(`OBJ_slotwise-${CLUSTER}-results`)).to.equal(0);
    expect(await store.jobs(() => {})).to.deep.equal([]);
    expect(await store.result(job.jobId)).to.deep.equal(resultOf(job));
    expect(await store.results()).to.deep.equal([
      { jobId: job.jobId, name: 'small', status: 'finished', endedAt: 1234 },
    ]);
    expect(await store.result(JobID.generate())).to.equal(null);
  });

  it('puts a graph or a result too large for one message in the object store, and reads and removes it', async () => {
    const large = storedJob('large', 'x'.repeat(MAX_PAYLOAD));
    const small = storedJob('small');
    await store.putJob(large);
    await store.putJob(small);
    expect(await messages(`KV_slotwise-${CLUSTER}-jobs`)).to.equal(1);
    expect(await messages(`OBJ_slotwise-${CLUSTER}-jobs`)).to.be.above(0);
    const found = await store.jobs(() => expect.fail('nothing to skip'));
    expect(found.map((j) => j.spec.name)).to.deep.equal(['large', 'small']);
    expect(found[0]).to.deep.equal(large);

    const outputs = ['y'.repeat(MAX_PAYLOAD)];
    await store.putResult(resultOf(large, outputs), 2000);
    expect(await store.jobs(() => {})).to.deep.equal([small]);
    expect(await messages(`KV_slotwise-${CLUSTER}-results`)).to.equal(0);
    expect(await store.result(large.jobId)).to.deep.equal(resultOf(large, outputs));
    await store.putResult(resultOf(small), 1000);
    expect(await store.results()).to.deep.equal([
      { jobId: small.jobId, name: 'small', status: 'finished', endedAt: 1000 },
      { jobId: large.jobId, name: 'large', status: 'finished', endedAt: 2000 },
    ]);
  });

  it('reads and removes a job an earlier version stored in the object store', async () => {
    const job = storedJob('older');
    const older = await new Objm(nc!).open(`slotwise-${CLUSTER}-jobs`);
    await older.putBlob({ name: job.jobId }, serialize(job));
    // A new leader's store: it knows of the object only by listing the jobs.
    const leader = await JobStore.open(nc!, CLUSTER, 60_000);
    expect(await leader.jobs(() => expect.fail('nothing to skip'))).to.deep.equal([job]);
    await leader.removeJob(job.jobId);
    expect(await leader.jobs(() => {})).to.deep.equal([]);
    expect(await older.getBlob(job.jobId)).to.equal(null);
  });

  it('opens for each process that opens the cluster at once, also those losing the race to add a stream', async () => {
    // JobManagers and TaskManagers started together: each finds the cluster's streams missing and adds them.
    const more = await Promise.all([connect({ servers: server!.url }), connect({ servers: server!.url })]);
    try {
      for (let cluster = 0; cluster < 10; cluster++) {
        const id = `race-${cluster}`;
        const connections = [nc!, ...more, nc!, ...more];
        const opens: Array<(c: NatsConnection) => Promise<unknown>> = [
          (c) => JobStore.open(c, id, 60_000),
          (c) => BlobStore.open(c, id),
        ];
        for (const open of opens) {
          const opened = await Promise.allSettled(connections.map(open));
          expect(opened.filter((o) => o.status === 'rejected').map((o) => String(o.reason))).to.deep.equal([]);
        }
      }
    } finally {
      await Promise.all(more.map((c) => c.close()));
    }
  });

  it("forgets a job's progress at its end", async () => {
    const job = storedJob('progress');
    await store.appendProgress(job.jobId, [{ vertexId: 'v', subtaskIndex: 0, output: 7, partition: null }]);
    expect(await store.progress(job.jobId)).to.deep.equal([
      { vertexId: 'v', subtaskIndex: 0, output: 7, partition: null },
    ]);
    await store.removeProgress(job.jobId);
    expect(await store.progress(job.jobId)).to.deep.equal([]);
    expect(await messages(`slotwise-${CLUSTER}-progress`)).to.equal(0);
  });
});
