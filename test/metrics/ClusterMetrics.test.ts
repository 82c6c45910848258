import { expect } from 'chai';
import { Registry } from 'prom-client';
import type { ClusterOverview, SlotOverview, TaskExecutorOverview } from '../../lib/ClusterOverview.js';
import { ConfigurationError } from '../../lib/core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID, type ResourceID } from '../../lib/core/ids.js';
import { ClusterMetrics, ENDED_BEFORE_RETAIN } from '../../lib/metrics/ClusterMetrics.js';
import { resolveMetricsOptions } from '../../lib/metrics/MetricsOptions.js';
import { parsePrometheusText } from '../support/prometheusText.js';

const amounts = {
  cpuCores: 1,
  taskHeapMemory: 1,
  taskOffHeapMemory: 0,
  managedMemory: 0,
  networkMemory: 0,
  extendedResources: {},
};
const slot = (state: SlotOverview['state'], index: number | null): SlotOverview => ({
  index,
  slot: index === null ? 'dynamic' : String(index),
  state,
  jobId: null,
  allocationId: state === 'pending' || state === 'allocated' ? AllocationID.generate() : null,
  resources: amounts,
  resourceProfile: 'p',
  tasks: [],
});
const executor = (resourceId: string, slots: SlotOverview[]): TaskExecutorOverview => ({
  resourceId: resourceId as ResourceID,
  mode: 'thread',
  utilization: 0,
  totalResources: amounts,
  availableResources: amounts,
  available: 'a',
  slots,
  partitions: null,
});

describe('ClusterMetrics', () => {
  const job = JobID.generate();
  let overview: ClusterOverview;
  let now = 0;
  const start = (registry = new Registry(), prefix?: string) =>
    new ClusterMetrics(resolveMetricsOptions({ registry, ...(prefix ? { prefix } : {}) }), {
      overview: () => overview,
      now: () => now,
    });

  beforeEach(() => {
    now = 1_000;
    overview = {
      taskExecutors: [
        executor('te-1', [slot('allocated', 0), slot('free', 1), slot('allocated', null)]),
        executor('te-2', [slot('free', 0), slot('unavailable', 1)]),
      ],
      pendingWorkers: 1,
      pendingRequests: [
        {
          jobId: job,
          missing: 2,
          resources: null,
          profile: 'default slot',
          why: 'waiting for 1 worker to start and register',
          reason: 'waiting-for-workers',
        },
        {
          jobId: job,
          missing: 1,
          resources: null,
          profile: 'default slot',
          why: 'asking the TaskExecutor',
          reason: 'allocating',
        },
      ],
      jobs: [{ jobId: job, name: 'wordcount', status: 'running' }],
    };
  });

  it(
    "exposes Flink's slot, TaskManager and job gauges " + 'as Prometheus text, read from the overview on scrape',
    async () => {
      const metrics = start();
      metrics.onJobEvent(job, 'wordcount', { type: 'status', status: 'running', cause: null, timestamp: 400 });
      const text = parsePrometheusText(await metrics.exposition());
      expect(text.types.get('slotwise_jobmanager_taskSlotsTotal')).to.equal('gauge');
      expect(text.value('slotwise_jobmanager_taskSlotsTotal')).to.equal(5);
      expect(text.value('slotwise_jobmanager_taskSlotsAvailable')).to.equal(2);
      expect(text.value('slotwise_jobmanager_numRegisteredTaskManagers')).to.equal(2);
      expect(text.value('slotwise_jobmanager_numPendingTaskManagers')).to.equal(1);
      expect(text.value('slotwise_jobmanager_numRunningJobs')).to.equal(1);
      expect(text.value('slotwise_jobmanager_job_uptime', { job_id: job, job_name: 'wordcount' })).to.equal(600);
      expect(text.value('slotwise_jobmanager_job_numRestarts', { job_id: job })).to.equal(0);
      expect(text.value('slotwise_task_slots', { state: 'unavailable' })).to.equal(1);
      expect(text.value('slotwise_slot_requests_pending', { reason: 'waiting-for-workers' })).to.equal(2);
      expect(text.value('slotwise_slot_requests_pending', { reason: 'allocating' })).to.equal(1);
      // A change shows at the next scrape.
      overview = { ...overview, taskExecutors: overview.taskExecutors.slice(0, 1), pendingRequests: [] };
      const later = parsePrometheusText(await metrics.exposition());
      expect(later.value('slotwise_jobmanager_taskSlotsTotal')).to.equal(3);
      expect(later.samples.filter((s) => s.name === 'slotwise_slot_requests_pending')).to.deep.equal([]);
    },
  );

  it('feeds the histograms and counters from job events, slot assignments and lost TaskExecutors', async () => {
    const metrics = start();
    const te = 'te-1' as ResourceID;
    const attempt = ExecutionAttemptID.generate();
    const task = (state: 'scheduled' | 'deploying' | 'running' | 'failed', timestamp: number) =>
      metrics.onJobEvent(job, 'wordcount', {
        type: 'task',
        vertexId: 'v',
        subtaskIndex: 0,
        attemptNumber: 0,
        executionAttemptId: attempt,
        state,
        resourceId: state === 'scheduled' ? null : te,
        allocationId: null,
        error: null,
        timestamp,
      });
    task('scheduled', 0);
    metrics.onSlotAssigned(job, {
      vertexId: 'v',
      subtaskIndex: 0,
      attemptNumber: 0,
      resourceId: te,
      allocationId: AllocationID.generate(),
      requestedAt: 0,
      timestamp: 4,
    });
    task('deploying', 5);
    task('running', 25);
    task('failed', 1_025);
    metrics.onJobEvent(job, 'wordcount', {
      type: 'status',
      status: 'restarting',
      cause: 'v#0 failed',
      timestamp: 1_026,
    });
    metrics.onTaskExecutorLost(te, 'heartbeat-timeout');
    const snapshot = await metrics.snapshot();
    expect(snapshot.slotAllocationLatency.count).to.equal(1);
    expect(snapshot.slotAllocationLatency.sum).to.be.closeTo(0.004, 1e-9);
    expect(
      snapshot.slotAllocationLatency.buckets.find((b) => b.le === 0.005)!.count,
      '4 ms falls in the 5 ms bucket',
    ).to.equal(1);
    expect(snapshot.slotAllocationLatency.buckets.find((b) => b.le === 0.0025)!.count).to.equal(0);
    expect(snapshot.subtaskDeployLatency).to.deep.include({ count: 1, sum: 0.025 });
    expect(snapshot.taskWaitTime[te]).to.deep.include({ count: 1, sum: 0.02 });
    expect(snapshot.taskRunTime[te]).to.deep.include({ count: 1, sum: 1 });
    expect(snapshot.subtasksEnded).to.deep.equal({ finished: 0, failed: 1, canceled: 0 });
    expect(snapshot.taskExecutorsLost).to.deep.equal({
      'worker-exited': 0,
      'heartbeat-timeout': 1,
      disconnected: 0,
      rejected: 0,
    });
    expect(snapshot.jobs).to.deep.equal([
      {
        jobId: job,
        jobName: 'wordcount',
        numRestarts: 1,
        uptime: 0,
        numSlowExecutionVertices: 0,
        numEffectiveSpeculativeExecutions: 0,
      },
    ]);
    // The exposition says the same.
    const text = parsePrometheusText(await metrics.exposition());
    expect(text.value('slotwise_task_run_time_seconds_count', { resource_id: te })).to.equal(1);
    expect(text.value('slotwise_subtasks_ended_total', { state: 'failed' })).to.equal(1);
  });

  it('drops the run and wait time series of a TaskExecutor that left the cluster', async () => {
    const metrics = start();
    const attempt = 'a' as ExecutionAttemptID;
    const event = (state: 'deploying' | 'running', timestamp: number) =>
      metrics.onJobEvent(job, 'j', {
        type: 'task',
        vertexId: 'v',
        subtaskIndex: 0,
        attemptNumber: 0,
        executionAttemptId: attempt,
        state,
        resourceId: 'te-2' as ResourceID,
        allocationId: null,
        error: null,
        timestamp,
      });
    metrics.onJobEvent(job, 'j', {
      type: 'task',
      vertexId: 'v',
      subtaskIndex: 0,
      attemptNumber: 0,
      executionAttemptId: attempt,
      state: 'scheduled',
      resourceId: null,
      allocationId: null,
      error: null,
      timestamp: 0,
    });
    event('deploying', 1);
    event('running', 2);
    expect(Object.keys((await metrics.snapshot()).taskWaitTime)).to.deep.equal(['te-2']);
    overview = { ...overview, taskExecutors: overview.taskExecutors.slice(0, 1) };
    expect(Object.keys((await metrics.snapshot()).taskWaitTime)).to.deep.equal([]);
  });

  it("goes into the app's registry beside its own metrics, under a prefix, and leaves it on close", async () => {
    const registry = new Registry();
    registry.registerMetric(
      new (await import('prom-client')).Counter({ name: 'app_requests_total', help: 'the app', registers: [] }),
    );
    const metrics = start(registry, 'shop');
    const text = parsePrometheusText(await registry.metrics());
    expect(text.value('app_requests_total')).to.equal(0);
    expect(text.value('shop_jobmanager_taskSlotsTotal')).to.equal(5);
    metrics.close();
    expect(parsePrometheusText(await registry.metrics()).samples.map((s) => s.name)).to.deep.equal([
      'app_requests_total',
    ]);
  });

  it('refuses a registry another cluster already uses, naming the metric, and registers nothing', () => {
    const registry = new Registry();
    start(registry);
    const before = registry.getMetricsAsArray().length;
    expect(() => start(registry)).to.throw(
      ConfigurationError,
      /already holds slotwise_jobmanager_taskSlotsTotal.*its own registry or its own metrics.prefix/,
    );
    expect(registry.getMetricsAsArray().length).to.equal(before);
    expect(() => start(registry, 'other')).to.not.throw();
  });
});

describe('resolveMetricsOptions', () => {
  it('lets go of ended jobs not listed though nobody scrapes: it reads the listing every 256 job ends', async () => {
    let reads = 0;
    const metrics = new ClusterMetrics(resolveMetricsOptions({ registry: new Registry() }), {
      overview: () => (reads++, { taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] }),
      now: () => 0,
    });
    const end = () => {
      const id = JobID.generate();
      metrics.onJobEvent(id, 'short', { type: 'status', status: 'running', cause: null, timestamp: 0 });
      metrics.onJobEvent(id, 'short', { type: 'status', status: 'finished', cause: null, timestamp: 0 });
    };
    for (let i = 0; i < ENDED_BEFORE_RETAIN - 1; i++) end();
    expect(reads, 'not before').to.equal(0);
    end();
    expect(reads, 'the listing read once: the ended jobs not listed are forgotten').to.equal(1);
    await metrics.close();
  });

  it('reads only the job listing for that when the cluster offers one, not the whole overview', async () => {
    let overviews = 0;
    let listings = 0;
    const metrics = new ClusterMetrics(resolveMetricsOptions({ registry: new Registry() }), {
      overview: () => (overviews++, { taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] }),
      listJobs: () => (listings++, []),
      now: () => 0,
    });
    for (let i = 0; i < ENDED_BEFORE_RETAIN; i++) {
      const id = JobID.generate();
      metrics.onJobEvent(id, 'short', { type: 'status', status: 'running', cause: null, timestamp: 0 });
      metrics.onJobEvent(id, 'short', { type: 'status', status: 'finished', cause: null, timestamp: 0 });
    }
    expect({ overviews, listings }).to.deep.equal({ overviews: 0, listings: 1 });
    await metrics.close();
  });

  it("takes the last heartbeats' partition figures when the TaskExecutors do not answer a scrape in time", async () => {
    const figures = {
      partitions: 3,
      bytes: 300,
      spilledBytes: 100,
      producedBytes: 900,
      consumedBytes: 600,
      spilledTotal: 100,
      readLocally: 0,
      served: 0,
    };
    const overview: ClusterOverview = {
      taskExecutors: [{ ...executor('te-1', []), partitions: figures }],
      pendingWorkers: 0,
      pendingRequests: [],
      jobs: [],
    };
    let answer: ((value: []) => void) | undefined;
    const metrics = new ClusterMetrics(resolveMetricsOptions({ registry: new Registry() }), {
      overview: () => overview,
      now: () => 0,
      // A TaskExecutor stuck: its answer comes only after the scrape.
      taskExecutorMetrics: () => new Promise((resolve) => (answer = resolve)),
      taskExecutorMetricsTimeoutMs: 20,
    });
    const text = parsePrometheusText(await metrics.exposition());
    expect(text.value('slotwise_result_partitions', { resource_id: 'te-1' })).to.equal(3);
    expect(text.value('slotwise_result_partition_bytes', { resource_id: 'te-1', storage: 'disk' })).to.equal(100);
    expect(text.value('slotwise_result_partition_consumed_bytes_total', { resource_id: 'te-1' })).to.equal(600);
    answer?.([]);
    await metrics.close();
  });

  it("counts a job's speculation as Flink does: subtasks speculated for, speculative attempts that won", async () => {
    const job = JobID.generate();
    const overview: ClusterOverview = {
      taskExecutors: [],
      pendingWorkers: 0,
      pendingRequests: [],
      jobs: [{ jobId: job, name: 'speculates', status: 'running' }],
    };
    const metrics = new ClusterMetrics(resolveMetricsOptions({ registry: new Registry() }), {
      overview: () => overview,
      now: () => 0,
    });
    const event = (
      id: ExecutionAttemptID,
      subtaskIndex: number,
      state: 'scheduled' | 'finished' | 'canceled',
      speculative: boolean,
    ) =>
      metrics.onJobEvent(job, 'speculates', {
        type: 'task',
        vertexId: 'work',
        subtaskIndex,
        attemptNumber: speculative ? 1 : 0,
        executionAttemptId: id,
        state,
        resourceId: null,
        allocationId: null,
        error: null,
        timestamp: 0,
        ...(speculative ? { speculative: true as const } : {}),
      });
    const figures = async () => {
      const text = parsePrometheusText(await metrics.exposition());
      return [
        text.value('slotwise_jobmanager_job_numSlowExecutionVertices', { job_id: job }),
        text.value('slotwise_jobmanager_job_numEffectiveSpeculativeExecutions', { job_id: job }),
      ];
    };
    const [a, b, c] = [ExecutionAttemptID.generate(), ExecutionAttemptID.generate(), ExecutionAttemptID.generate()];
    event(a, 3, 'scheduled', true);
    event(b, 5, 'scheduled', true);
    event(c, 5, 'scheduled', true); // a second speculative attempt of subtask 5: still one subtask
    expect(await figures()).to.deep.equal([2, 0]);
    // Subtask 3's speculative attempt finished first (its end is the subtask's: no speculative mark); 5's lost.
    event(a, 3, 'finished', false);
    event(b, 5, 'canceled', true);
    event(c, 5, 'canceled', true);
    expect(await figures()).to.deep.equal([0, 1]);
    await metrics.close();
  });

  it('makes a registry of its own by default, prefix slotwise', () => {
    const resolved = resolveMetricsOptions(undefined);
    expect(resolved.prefix).to.equal('slotwise');
    expect(resolved.registry).to.be.instanceOf(Registry);
  });

  it('refuses what is not a registry, a bad prefix and unknown keys, naming the option', () => {
    expect(() => resolveMetricsOptions({ registry: {} as Registry })).to.throw(
      ConfigurationError,
      /metrics.registry must be a prom-client Registry/,
    );
    expect(() => resolveMetricsOptions({ prefix: '9lives' })).to.throw(
      ConfigurationError,
      /metrics.prefix must start with a letter/,
    );
    expect(() => resolveMetricsOptions({ prefix: 'a-b' })).to.throw(ConfigurationError, /metrics.prefix/);
    expect(() => resolveMetricsOptions({ registy: new Registry() } as never)).to.throw(
      ConfigurationError,
      /unknown metrics option 'registy'; known: registry, prefix/,
    );
    expect(() => resolveMetricsOptions(null as never)).to.throw(ConfigurationError, /metrics must be an object/);
  });
});
