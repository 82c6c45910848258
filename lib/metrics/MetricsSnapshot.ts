/**
 * `cluster.metrics()`: the cluster's metrics as plain numbers, read from the same registry the
 * Prometheus text comes from (so the two never disagree). Durations in seconds, as exposed.
 */
import type { MetricObjectWithValues, MetricValue, MetricValueWithName } from 'prom-client';
import type { MetricNames } from './metricNames.js';
import type { Mutable } from '../core/Mutable.js';

export interface HistogramSnapshot {
  readonly count: number;
  /** Sum of the observed values (seconds). */
  readonly sum: number;
  /** Cumulative counts: how many observations were ≤ `le` seconds (the last `le` is Infinity). */
  readonly buckets: ReadonlyArray<{ readonly le: number; readonly count: number }>;
}

export interface JobMetrics {
  readonly jobId: string;
  readonly jobName: string;
  readonly numRestarts: number;
  readonly uptime: number;
  readonly numSlowExecutionVertices: number;
  readonly numEffectiveSpeculativeExecutions: number;
}

export interface MetricsSnapshot {
  readonly taskSlotsTotal: number;
  readonly taskSlotsAvailable: number;
  readonly numRegisteredTaskManagers: number;
  readonly numPendingTaskManagers: number;
  readonly numRunningJobs: number;
  /** Slots by state (free, unavailable, pending, allocated). */
  readonly taskSlots: Readonly<Record<string, number>>;
  /**
   * Per listed job: its restarts, Flink's uptime (ms; 0 while not running, -1 once ended), and its speculative
   * execution's figures (subtasks a speculative attempt runs for now, speculative attempts that won).
   */
  readonly jobs: ReadonlyArray<JobMetrics>;
  /** Slots requests wait for, by the kind of reason. */
  readonly slotRequestsPending: Readonly<Record<string, number>>;
  readonly slotAllocationLatency: HistogramSnapshot;
  readonly subtaskDeployLatency: HistogramSnapshot;
  /** Subtask attempts ended, by state: finished, failed, canceled. */
  readonly subtasksEnded: Readonly<Record<string, number>>;
  /** Per TaskExecutor (ResourceID). */
  readonly taskRunTime: Readonly<Record<string, HistogramSnapshot>>;
  readonly taskWaitTime: Readonly<Record<string, HistogramSnapshot>>;
  /** Registered TaskExecutors lost, by cause. */
  readonly taskExecutorsLost: Readonly<Record<string, number>>;
  /** Per TaskExecutor (ResourceID) with partitions: held now, bytes in memory and on disk, bytes since it started. */
  readonly resultPartitions: Readonly<Record<string, ResultPartitionFigures>>;
}

export interface ResultPartitionFigures {
  readonly partitions: number;
  readonly memoryBytes: number;
  readonly diskBytes: number;
  readonly producedBytes: number;
  readonly consumedBytes: number;
  readonly spilledBytes: number;
}

type Values = MetricObjectWithValues<MetricValue<string> | MetricValueWithName<string>>;

export function toMetricsSnapshot(names: MetricNames, metrics: readonly Values[]): MetricsSnapshot {
  const byName = new Map(metrics.map((m) => [m.name, m.values] as const));
  const values = (name: string) => byName.get(name) ?? [];
  const single = (name: string) => values(name)[0]?.value ?? 0;
  const byLabel = (name: string, label: string) =>
    Object.fromEntries(values(name).map((v) => [String(v.labels[label]), v.value]));
  const jobs = new Map<string, Mutable<JobMetrics>>();
  const job = (v: MetricValue<string>) => {
    const jobId = String(v.labels['job_id']);
    let entry = jobs.get(jobId);
    if (entry === undefined)
      jobs.set(
        jobId,
        (entry = {
          jobId,
          jobName: String(v.labels['job_name']),
          numRestarts: 0,
          uptime: 0,
          numSlowExecutionVertices: 0,
          numEffectiveSpeculativeExecutions: 0,
        }),
      );
    return entry;
  };
  for (const v of values(names.jobNumRestarts)) job(v).numRestarts = v.value;
  for (const v of values(names.jobUptime)) job(v).uptime = v.value;
  for (const v of values(names.jobNumSlowExecutionVertices)) job(v).numSlowExecutionVertices = v.value;
  for (const v of values(names.jobNumEffectiveSpeculativeExecutions))
    job(v).numEffectiveSpeculativeExecutions = v.value;
  return {
    taskSlotsTotal: single(names.taskSlotsTotal),
    taskSlotsAvailable: single(names.taskSlotsAvailable),
    numRegisteredTaskManagers: single(names.numRegisteredTaskManagers),
    numPendingTaskManagers: single(names.numPendingTaskManagers),
    numRunningJobs: single(names.numRunningJobs),
    taskSlots: byLabel(names.taskSlots, 'state'),
    jobs: [...jobs.values()],
    slotRequestsPending: byLabel(names.slotRequestsPending, 'reason'),
    slotAllocationLatency: histograms(values(names.slotAllocationLatency), null)[''] ?? EMPTY,
    subtaskDeployLatency: histograms(values(names.subtaskDeployLatency), null)[''] ?? EMPTY,
    subtasksEnded: byLabel(names.subtasksEnded, 'state'),
    taskRunTime: histograms(values(names.taskRunTime), 'resource_id'),
    taskWaitTime: histograms(values(names.taskWaitTime), 'resource_id'),
    taskExecutorsLost: byLabel(names.taskExecutorsLost, 'cause'),
    resultPartitions: resultPartitions(names, values),
  };
}

function resultPartitions(
  names: MetricNames,
  values: (name: string) => ReadonlyArray<MetricValue<string> | MetricValueWithName<string>>,
): Record<string, ResultPartitionFigures> {
  const out: Record<string, Mutable<ResultPartitionFigures>> = {};
  const of = (v: MetricValue<string>) =>
    (out[String(v.labels['resource_id'])] ??= {
      partitions: 0,
      memoryBytes: 0,
      diskBytes: 0,
      producedBytes: 0,
      consumedBytes: 0,
      spilledBytes: 0,
    });
  for (const v of values(names.resultPartitions)) of(v).partitions = v.value;
  for (const v of values(names.resultPartitionBytes))
    of(v)[v.labels['storage'] === 'disk' ? 'diskBytes' : 'memoryBytes'] = v.value;
  for (const v of values(names.resultPartitionProduced)) of(v).producedBytes = v.value;
  for (const v of values(names.resultPartitionConsumed)) of(v).consumedBytes = v.value;
  for (const v of values(names.resultPartitionSpilled)) of(v).spilledBytes = v.value;
  return out;
}

const EMPTY: HistogramSnapshot = { count: 0, sum: 0, buckets: [] };

/** A histogram's series by the value of `label` ('' for an unlabelled one). */
function histograms(
  values: ReadonlyArray<MetricValue<string> | MetricValueWithName<string>>,
  label: string | null,
): Record<string, HistogramSnapshot> {
  const out: Record<string, { count: number; sum: number; buckets: Array<{ le: number; count: number }> }> = {};
  for (const v of values) {
    const key = label === null ? '' : String(v.labels[label]);
    const series = (out[key] ??= { count: 0, sum: 0, buckets: [] });
    const metricName = ('metricName' in v ? v.metricName : undefined) ?? '';
    if (metricName.endsWith('_bucket'))
      series.buckets.push({ le: v.labels['le'] === '+Inf' ? Infinity : Number(v.labels['le']), count: v.value });
    else if (metricName.endsWith('_sum')) series.sum = v.value;
    else if (metricName.endsWith('_count')) series.count = v.value;
  }
  return out;
}
