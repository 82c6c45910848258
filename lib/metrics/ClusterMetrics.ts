/**
 * A cluster's metrics in a prom-client Registry: Flink's names where Flink has them (as its
 * Prometheus reporter spells them, `<prefix>_jobmanager_taskSlotsTotal`), ours beside them.
 *
 * Cheap by construction: the gauges are read on scrape from the cluster's overview (once per
 * scrape, however many gauges read it), the histograms and counters are fed from what the runtime
 * already tells — each job's events, its slot assignments, the ResourceManager's lost
 * TaskExecutors — on the main thread, off the SlotManager's matching path. Nothing here runs
 * unless a job event happens or somebody scrapes. The result partition figures are the
 * TaskExecutors' own (`taskExecutorMetrics()`), asked once per scrape; when they have not all answered
 * within a second, the scrape takes what their last heartbeats told (the overview's) instead, so a
 * stuck TaskExecutor never holds a scrape for rpc.ask.timeout.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ClusterOverview } from '../ClusterOverview.js';
import { ConfigurationError } from '../core/errors.js';
import type { JobID, ResourceID } from '../core/ids.js';
import type { JobObserver } from '../dispatcher/Dispatcher.js';
import type { JobEvent } from '../jobmaster/JobMaster.js';
import type { SlotAssignment } from '../jobmaster/SlotAssignment.js';
import type { TaskExecutorLossCause } from '../resourcemanager/ResourceManager.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';
import { JobTimings, type JobFigures } from './JobTimings.js';
import { metricNames, type MetricNames } from './metricNames.js';
import type { ResolvedMetricsOptions } from './MetricsOptions.js';
import { toMetricsSnapshot, type MetricsSnapshot } from './MetricsSnapshot.js';

/** Where the gauges read the cluster: a MiniCluster's overview(), or a JobManager's. */
export interface ClusterMetricsSource {
  overview(): ClusterOverview;
  /**
   * The jobs the cluster lists, without the rest of the overview: what ended jobs' figures are kept for between
   * scrapes (absent: read from the overview, which walks every listed job's subtasks).
   */
  listJobs?(): readonly { readonly jobId: JobID }[];
  /** Clock ms, for job uptimes (the clock the JobMasters stamp their events with). */
  now(): number;
  /** Each TaskExecutor's own figures, asked now (its result partitions); absent: no partition metrics. */
  taskExecutorMetrics?(): Promise<readonly TaskExecutorMetricsWire[]>;
  /** How long a scrape waits for those before it takes the figures of the last heartbeats (default 1 s). */
  readonly taskExecutorMetricsTimeoutMs?: number;
}

/** A scrape's wait for the TaskExecutors' own figures, past which their last heartbeats' are taken. */
const ASK_TIMEOUT_MS = 1_000;

type PartitionFigures = NonNullable<TaskExecutorMetricsWire['partitions']>;
/** A TaskExecutor's partition figures, as it answered or as its last heartbeat told. */
type PartitionsOf = Pick<TaskExecutorMetricsWire, 'resourceId' | 'partitions'>;

/** Latency buckets in seconds: sub-millisecond matches to a five-minute slot request timeout. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const LOSS_CAUSES: readonly TaskExecutorLossCause[] = [
  'worker-exited',
  'heartbeat-timeout',
  'disconnected',
  'rejected',
];
const SLOT_STATES = ['free', 'unavailable', 'pending', 'allocated'] as const;
const ENDED = ['finished', 'failed', 'canceled'];
/** Jobs that end before the metrics read the overview of their own accord (see onJobEvent). */
export const ENDED_BEFORE_RETAIN = 256;

export class ClusterMetrics implements JobObserver {
  readonly registry: Registry;
  readonly names: MetricNames;
  readonly #source: ClusterMetricsSource;
  readonly #timings = new JobTimings();
  readonly #owned: string[] = [];
  readonly #allocationLatency: Histogram;
  readonly #deployLatency: Histogram;
  readonly #subtasksEnded: Counter<'state'>;
  readonly #runTime: Histogram<'resource_id'>;
  readonly #waitTime: Histogram<'resource_id'>;
  readonly #lost: Counter<'cause'>;
  /**
   * Each TaskExecutor's run and wait time observers (prom-client's labels(), bound once), so those that left the
   * cluster can be dropped.
   */
  readonly #executorSeries = new Map<ResourceID, { readonly run: Observer; readonly wait: Observer }>();
  #overview: ClusterOverview | null = null;
  #closed = false;
  #asked: Promise<readonly PartitionsOf[]> | null = null;
  /** Jobs ended since the overview was last read (which drops the figures of the jobs no longer listed). */
  #endedSinceRead = 0;

  constructor(options: ResolvedMetricsOptions, source: ClusterMetricsSource) {
    this.registry = options.registry;
    this.#source = source;
    const n = (this.names = metricNames(options.prefix));
    const taken = Object.values(n).find((name) => this.registry.getSingleMetric(name) !== undefined);
    if (taken !== undefined) {
      throw new ConfigurationError(
        'invalid-value',
        `metrics.registry already holds ${taken}: another cluster uses ` +
          `it; give each cluster its own registry or its own metrics.prefix`,
        { option: 'metrics.registry' },
      );
    }
    const registers = [this.registry];
    const metrics = this;
    const gauge = (name: string, help: string, read: (o: ClusterOverview) => number) =>
      this.#own(
        new Gauge({
          name,
          help,
          registers,
          collect() {
            this.set(read(metrics.#read()));
          },
        }),
      );
    gauge(
      n.taskSlotsTotal,
      'Slots of the registered TaskExecutors: every static slot and every live dynamic slot (Flink: taskSlotsTotal).',
      (o) => o.taskExecutors.reduce((sum, te) => sum + te.slots.length, 0),
    );
    gauge(n.taskSlotsAvailable, 'Free slots a request can take now (Flink: taskSlotsAvailable).', (o) =>
      countSlots(o, 'free'),
    );
    gauge(
      n.numRegisteredTaskManagers,
      'TaskExecutors registered with their slots (Flink: numRegisteredTaskManagers).',
      (o) => o.taskExecutors.length,
    );
    gauge(
      n.numPendingTaskManagers,
      'Workers asked for and not registered yet (Flink: numPendingTaskManagers).',
      (o) => o.pendingWorkers,
    );
    gauge(
      n.numRunningJobs,
      'Jobs not ended yet (Flink: numRunningJobs).',
      (o) => o.jobs.filter((job) => !ENDED.includes(job.status)).length,
    );
    this.#own(
      new Gauge({
        name: n.taskSlots,
        help:
          'Slots by state: free, unavailable (a free static slot ' +
          'whose resources dynamic slots took), pending, allocated.',
        labelNames: ['state'],
        registers,
        collect() {
          const o = metrics.#read();
          for (const state of SLOT_STATES) this.set({ state }, countSlots(o, state));
        },
      }),
    );
    this.#own(
      new Gauge({
        name: n.slotRequestsPending,
        help: 'Slots that requests wait for, by the reason they wait (a WaitReason kind, allocating, unchecked).',
        labelNames: ['reason'],
        registers,
        collect() {
          this.reset();
          for (const r of metrics.#read().pendingRequests) this.inc({ reason: r.reason }, r.missing);
        },
      }),
    );
    const jobGauge = (name: string, help: string, figure: keyof JobFigures) =>
      this.#own(
        new Gauge({
          name,
          help,
          labelNames: ['job_id', 'job_name'],
          registers,
          collect() {
            this.reset();
            const now = metrics.#source.now();
            for (const job of metrics.#read().jobs) {
              const figures = metrics.#timings.figures(job.jobId, now);
              if (figures !== undefined) this.set({ job_id: job.jobId, job_name: job.name }, figures[figure]);
            }
          },
        }),
      );
    const perExecutor = async (write: (resourceId: string, figures: PartitionFigures) => void) => {
      for (const { resourceId, partitions } of await metrics.#partitions())
        if (partitions !== null) write(resourceId, partitions);
    };
    this.#own(
      new Gauge({
        name: n.resultPartitions,
        help: 'Result partitions a TaskExecutor keeps now.',
        labelNames: ['resource_id'],
        registers,
        async collect() {
          this.reset();
          await perExecutor((id, f) => this.set({ resource_id: id }, f.partitions));
        },
      }),
    );
    this.#own(
      new Gauge({
        name: n.resultPartitionBytes,
        help: 'Bytes of the result partitions a TaskExecutor keeps now, in memory and spilled to disk.',
        labelNames: ['resource_id', 'storage'],
        registers,
        async collect() {
          this.reset();
          await perExecutor((id, f) => {
            this.set({ resource_id: id, storage: 'memory' }, f.bytes - f.spilledBytes);
            this.set({ resource_id: id, storage: 'disk' }, f.spilledBytes);
          });
        },
      }),
    );
    const total = (name: string, help: string, figure: 'producedBytes' | 'consumedBytes' | 'spilledTotal') =>
      this.#own(
        new Counter({
          name,
          help,
          labelNames: ['resource_id'],
          registers,
          async collect() {
            this.reset();
            await perExecutor((id, f) => this.inc({ resource_id: id }, f[figure]));
          },
        }),
      );
    total(
      n.resultPartitionProduced,
      'Bytes of result partitions a TaskExecutor kept since it started.',
      'producedBytes',
    );
    total(n.resultPartitionConsumed, 'Bytes of subpartitions its consumers read since it started.', 'consumedBytes');
    total(n.resultPartitionSpilled, 'Bytes of result partitions it spilled to disk since it started.', 'spilledTotal');
    jobGauge(n.jobNumRestarts, 'Restarts of the job so far (Flink: job numRestarts).', 'restarts');
    jobGauge(
      n.jobNumSlowExecutionVertices,
      'Subtasks found slow that a speculative attempt runs for now (Flink: numSlowExecutionVertices).',
      'slowSubtasks',
    );
    jobGauge(
      n.jobNumEffectiveSpeculativeExecutions,
      'Speculative attempts that finished before their subtask’s original (Flink: numEffectiveSpeculativeExecutions).',
      'effectiveSpeculations',
    );
    jobGauge(
      n.jobUptime,
      'ms the job has been running without interruption; 0 while not running, -1 once ended (Flink: job uptime).',
      'uptimeMs',
    );
    this.#allocationLatency = this.#own(
      new Histogram({
        name: n.slotAllocationLatency,
        help: "Seconds from a subtask's slot request to its slot being there.",
        buckets: LATENCY_BUCKETS,
        registers,
      }),
    );
    this.#deployLatency = this.#own(
      new Histogram({
        name: n.subtaskDeployLatency,
        help: 'Seconds from a subtask attempt being scheduled to its running.',
        buckets: LATENCY_BUCKETS,
        registers,
      }),
    );
    this.#subtasksEnded = this.#own(
      new Counter({
        name: n.subtasksEnded,
        help: 'Subtask attempts that ended, by how: finished, failed, canceled.',
        labelNames: ['state'],
        registers,
      }),
    );
    for (const state of ENDED) this.#subtasksEnded.inc({ state }, 0);
    this.#runTime = this.#own(
      new Histogram({
        name: n.taskRunTime,
        help:
          "Seconds a task attempt ran, per TaskExecutor (piscina's " +
          'runTime); a TaskExecutor that left is dropped at the next scrape.',
        labelNames: ['resource_id'],
        buckets: LATENCY_BUCKETS,
        registers,
        collect: () => this.#dropGoneExecutors(),
      }),
    );
    this.#waitTime = this.#own(
      new Histogram({
        name: n.taskWaitTime,
        help:
          'Seconds a task attempt waited at its TaskExecutor, ' +
          "from its deployment to its running (piscina's waitTime).",
        labelNames: ['resource_id'],
        buckets: LATENCY_BUCKETS,
        registers,
        collect: () => this.#dropGoneExecutors(),
      }),
    );
    this.#lost = this.#own(
      new Counter({
        name: n.taskExecutorsLost,
        help: 'Registered TaskExecutors lost, by cause: worker-exited, heartbeat-timeout, disconnected, rejected.',
        labelNames: ['cause'],
        registers,
      }),
    );
    for (const cause of LOSS_CAUSES) this.#lost.inc({ cause }, 0);
  }

  onJobEvent(jobId: JobID, jobName: string, event: JobEvent): void {
    if (this.#closed) return;
    const measured = this.#timings.record(jobId, jobName, event);
    // Ended jobs' figures are dropped once the Dispatcher no longer lists them, at a scrape — and, should nobody
    // scrape, every ENDED_BEFORE_RETAIN job ends (an hour's soak without a scrape kept every job's record).
    if (event.type === 'status' && ENDED.includes(event.status) && ++this.#endedSinceRead >= ENDED_BEFORE_RETAIN) {
      this.#endedSinceRead = 0;
      if (this.#source.listJobs === undefined) this.#read();
      else this.#timings.retain(new Set(this.#source.listJobs().map((job) => job.jobId)));
    }
    if (measured === null) return;
    if (measured.deployLatencyMs !== undefined) this.#deployLatency.observe(measured.deployLatencyMs / 1000);
    if (measured.ended !== undefined) this.#subtasksEnded.inc({ state: measured.ended });
    const resourceId = measured.resourceId;
    if (resourceId === null || (measured.waitTimeMs === undefined && measured.runTimeMs === undefined)) return;
    let series = this.#executorSeries.get(resourceId);
    if (series === undefined)
      this.#executorSeries.set(
        resourceId,
        (series = { run: this.#runTime.labels(resourceId), wait: this.#waitTime.labels(resourceId) }),
      );
    if (measured.waitTimeMs !== undefined) series.wait.observe(measured.waitTimeMs / 1000);
    if (measured.runTimeMs !== undefined) series.run.observe(measured.runTimeMs / 1000);
  }

  onSlotAssigned(_jobId: JobID, assignment: SlotAssignment): void {
    if (!this.#closed) this.#allocationLatency.observe((assignment.timestamp - assignment.requestedAt) / 1000);
  }

  onTaskExecutorLost(_resourceId: ResourceID, cause: TaskExecutorLossCause): void {
    if (!this.#closed) this.#lost.inc({ cause });
  }

  /** The registry's Prometheus text (the app's own metrics too, when it passed its registry). */
  exposition(): Promise<string> {
    this.#overview = null;
    return this.registry.metrics();
  }

  /** This cluster's metrics now, as plain numbers. */
  async snapshot(): Promise<MetricsSnapshot> {
    this.#overview = null;
    const json = await Promise.all(this.#owned.map((name) => this.registry.getSingleMetric(name)!.get()));
    return toMetricsSnapshot(this.names, json);
  }

  /** Takes this cluster's metrics out of the registry (an app's registry outlives the cluster). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const name of this.#owned) this.registry.removeSingleMetric(name);
  }

  #own<M extends object>(metric: M): M {
    this.#owned.push((metric as unknown as { name: string }).name);
    return metric;
  }

  /**
   * A TaskExecutor that left the cluster: its run and wait time series go (they would grow with every worker ever
   * started).
   */
  #dropGoneExecutors(): void {
    const live = new Set(this.#read().taskExecutors.map((te) => te.resourceId));
    for (const resourceId of this.#executorSeries.keys()) {
      if (live.has(resourceId)) continue;
      this.#executorSeries.delete(resourceId);
      this.#runTime.remove({ resource_id: resourceId });
      this.#waitTime.remove({ resource_id: resourceId });
    }
  }

  /** The TaskExecutors' figures, asked once for all the gauges of a scrape (they collect at once); none unasked. */
  #partitions(): Promise<readonly PartitionsOf[]> {
    const ask = this.#source.taskExecutorMetrics;
    if (ask === undefined || this.#closed) return Promise.resolve([]);
    if (this.#asked === null) {
      // What the TaskExecutors' last heartbeats told: taken when they do not answer in time, or fail to.
      const heartbeats = () =>
        this.#read().taskExecutors.map(({ resourceId, partitions }) => ({ resourceId, partitions }));
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<readonly PartitionsOf[]>((resolve) => {
        timer = setTimeout(() => resolve(heartbeats()), this.#source.taskExecutorMetricsTimeoutMs ?? ASK_TIMEOUT_MS);
        timer.unref?.();
      });
      this.#asked = Promise.race([ask.call(this.#source).catch(heartbeats), late]);
      void this.#asked.then(() => {
        clearTimeout(timer);
        this.#asked = null;
      });
    }
    return this.#asked;
  }

  /**
   * The overview, built once per scrape: every gauge of one scrape is collected in the same turn (a
   * scrape of the app's registry), or after exposition()/snapshot() asked for a fresh one.
   */
  #read(): ClusterOverview {
    if (this.#overview === null) {
      this.#endedSinceRead = 0;
      this.#overview = this.#source.overview();
      this.#timings.retain(new Set(this.#overview.jobs.map((job) => job.jobId)));
      setImmediate(() => (this.#overview = null));
    }
    return this.#overview;
  }
}

interface Observer {
  observe(value: number): void;
}

function countSlots(o: ClusterOverview, state: (typeof SLOT_STATES)[number]): number {
  let n = 0;
  for (const te of o.taskExecutors) for (const slot of te.slots) if (slot.state === state) n++;
  return n;
}
