import { expect } from 'chai';
import { type ExecutionAttemptID, JobID, type ResourceID } from '../../lib/core/ids.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { JobTimings, NO_LONGER_RUNNING } from '../../lib/metrics/JobTimings.js';

const job = JobID.generate();
const te = 'taskexecutor-1' as ResourceID;
const status = (s: Extract<JobEvent, { type: 'status' }>['status'], timestamp: number): JobEvent => ({
  type: 'status',
  status: s,
  cause: null,
  timestamp,
});
/** A job's figures without speculation: its restarts and uptime. */
const figures = (restarts: number, uptimeMs: number) => ({
  restarts,
  uptimeMs,
  slowSubtasks: 0,
  effectiveSpeculations: 0,
});
const task = (
  attempt: string,
  state: Extract<JobEvent, { type: 'task' }>['state'],
  timestamp: number,
  resourceId: ResourceID | null = te,
): JobEvent => ({
  type: 'task',
  vertexId: 'v',
  subtaskIndex: 0,
  attemptNumber: 0,
  executionAttemptId: attempt as ExecutionAttemptID,
  state,
  resourceId,
  allocationId: null,
  error: null,
  timestamp,
});

describe('JobTimings (what the metrics keep of a job)', () => {
  it(
    'measures deploy latency (scheduled → running), wait ' + 'time (deploying → running) and run time (running → end)',
    () => {
      const t = new JobTimings();
      expect(t.record(job, 'j', task('a', 'scheduled', 100, null))).to.equal(null);
      expect(t.record(job, 'j', task('a', 'deploying', 130))).to.equal(null);
      expect(t.record(job, 'j', task('a', 'initializing', 135))).to.equal(null);
      expect(t.record(job, 'j', task('a', 'running', 150))).to.deep.equal({
        resourceId: te,
        deployLatencyMs: 50,
        waitTimeMs: 20,
      });
      expect(t.record(job, 'j', task('a', 'finished', 400))).to.deep.equal({
        resourceId: te,
        ended: 'finished',
        runTimeMs: 250,
      });
    },
  );

  it('measures from timestamps of the epoch, and ends an attempt canceled while it waited without a run time', () => {
    const t = new JobTimings();
    const t0 = 1_765_000_000_000;
    t.record(job, 'j', status('running', t0));
    t.record(job, 'j', task('a', 'scheduled', t0 + 5, null));
    t.record(job, 'j', task('b', 'scheduled', t0 + 7, null));
    expect(t.record(job, 'j', task('a', 'running', t0 + 12))).to.deep.equal({ resourceId: te, deployLatencyMs: 7 });
    expect(t.record(job, 'j', task('b', 'canceled', t0 + 20, null))).to.deep.equal({
      resourceId: null,
      ended: 'canceled',
    });
  });

  it('keeps the first scheduling of an attempt that is scheduled again for another slot', () => {
    const t = new JobTimings();
    t.record(job, 'j', task('a', 'scheduled', 100, null));
    t.record(job, 'j', task('a', 'scheduled', 300, null));
    // Never deployed as far as the metrics saw: no wait time, only the deploy latency from the first scheduling.
    expect(t.record(job, 'j', task('a', 'running', 350))).to.deep.equal({ resourceId: te, deployLatencyMs: 250 });
  });

  it('counts an attempt canceled before it ran as ended, without a run time', () => {
    const t = new JobTimings();
    t.record(job, 'j', task('a', 'scheduled', 100, null));
    expect(t.record(job, 'j', task('a', 'canceled', 120, null))).to.deep.equal({ resourceId: null, ended: 'canceled' });
  });

  it(
    "gives Flink's uptime: 0 before running, ms since running, " +
      '0 again while restarting, -1 once ended; and counts restarts',
    () => {
      const t = new JobTimings();
      t.record(job, 'j', status('created', 0));
      expect(t.figures(job, 10)).to.deep.equal(figures(0, 0));
      t.record(job, 'j', status('running', 100));
      expect(t.figures(job, 350)).to.deep.equal(figures(0, 250));
      t.record(job, 'j', status('restarting', 400));
      expect(t.figures(job, 450)).to.deep.equal(figures(1, 0));
      t.record(job, 'j', status('running', 500));
      expect(t.figures(job, 600)).to.deep.equal(figures(1, 100));
      t.record(job, 'j', status('finished', 700));
      expect(t.figures(job, 800)).to.deep.equal(figures(1, NO_LONGER_RUNNING));
    },
  );

  it('forgets the jobs the Dispatcher no longer lists', () => {
    const t = new JobTimings();
    t.record(job, 'j', status('running', 0));
    t.retain(new Set());
    expect(t.figures(job, 1)).to.equal(undefined);
  });
});
