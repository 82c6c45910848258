/**
 * The REST API's view of a cluster (lib/rest/miniClusterTarget.ts's clusterTarget) over a cluster stand-in: a
 * request looks up one job however many the job store keeps, and a job the store drops takes its event log with it.
 */
import { expect } from 'chai';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { JobID } from '../../lib/core/ids.js';
import type { JobClient } from '../../lib/dispatcher/Dispatcher.js';
import type { JobEvent, JobResult } from '../../lib/jobmaster/JobMaster.js';
import { clusterTarget, type TargetCluster } from '../../lib/rest/miniClusterTarget.js';

/** An ended job as the Dispatcher keeps it: its status replayed to each listener, its result settled. */
function endedJob(jobId: JobID): JobClient {
  const result = { jobId, jobName: 'ended', status: 'finished', outputs: {}, error: null, restarts: 0, durationMs: 1 };
  return {
    jobId,
    name: 'ended',
    status: 'finished',
    result: Promise.resolve(result as JobResult),
    onEvent: (listener: (event: JobEvent) => void) => {
      listener({ type: 'status', status: 'finished', cause: null, timestamp: 1 });
      return () => {};
    },
    cancel: async () => {},
  } as unknown as JobClient;
}

/** A cluster whose Dispatcher keeps `jobs` and counts its lookups. */
function standIn(jobs: Map<JobID, JobClient>) {
  const lookups = { count: 0 };
  const cluster: TargetCluster = {
    submitJob: async () => expect.fail('no submit here'),
    listJobs: () => [...jobs.values()].map(({ jobId, name, status }) => ({ jobId, name, status })),
    cancelJob: async () => {},
    overview: () => ({ taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] }),
    dispatcher: {
      getJob: (jobId) => (lookups.count++, jobs.get(jobId)),
      getJobView: () => undefined,
    },
  };
  const target = clusterTarget(cluster, async () => expect.fail('no code here'));
  return { target, lookups };
}

describe('clusterTarget (what the REST API reads of a cluster)', () => {
  it('looks up one job per request, however many ended jobs the job store keeps', async () => {
    const jobs = new Map<JobID, JobClient>();
    for (let i = 0; i < 1_000; i++) {
      const jobId = JobID.generate();
      jobs.set(jobId, endedJob(jobId));
    }
    const { target, lookups } = standIn(jobs);
    const ids = [...jobs.keys()];
    for (const jobId of ids.slice(0, 100)) expect((await target.jobEvents(jobId, 0, 10))?.events).to.have.length(1);
    lookups.count = 0;
    const page = await target.jobEvents(ids[500]!, 0, 10);
    expect(page?.events.map((e) => e.type)).to.deep.equal(['status']);
    expect(lookups.count).to.equal(1);
    expect(await target.jobEvents(JobID.generate(), 0, 10), 'a job the store does not keep').to.equal(undefined);
  });

  it('lets the event log of a job the job store dropped be collected with it', async function () {
    this.timeout(20_000);
    // V8's gc for this test alone (the suite runs without --expose-gc).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const jobs = new Map<JobID, JobClient>();
    const jobId = JobID.generate();
    jobs.set(jobId, endedJob(jobId));
    const { target } = standIn(jobs);
    expect(await target.jobEvents(jobId, 0, 10)).to.not.equal(undefined);
    const dropped = new WeakRef(jobs.get(jobId)!);
    jobs.delete(jobId);
    expect(await target.jobEvents(jobId, 0, 10)).to.equal(undefined);
    for (let turn = 0; turn < 20 && dropped.deref() !== undefined; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(dropped.deref(), 'the job and its log are collected').to.equal(undefined);
  });
});
