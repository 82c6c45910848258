/**
 * The names of a cluster's metrics under a prefix. Flink's metrics keep Flink's names, scoped as
 * Flink's Prometheus reporter scopes them (`flink_jobmanager_taskSlotsTotal`,
 * `flink_jobmanager_job_numRestarts`); ours follow Prometheus' own conventions (snake case, units
 * in the name, `_total` on counters).
 */
export interface MetricNames {
  readonly taskSlotsTotal: string;
  readonly taskSlotsAvailable: string;
  readonly numRegisteredTaskManagers: string;
  readonly numPendingTaskManagers: string;
  readonly numRunningJobs: string;
  readonly jobNumRestarts: string;
  readonly jobNumSlowExecutionVertices: string;
  readonly jobNumEffectiveSpeculativeExecutions: string;
  readonly jobUptime: string;
  readonly taskSlots: string;
  readonly slotRequestsPending: string;
  readonly slotAllocationLatency: string;
  readonly subtaskDeployLatency: string;
  readonly subtasksEnded: string;
  readonly taskRunTime: string;
  readonly taskWaitTime: string;
  readonly taskExecutorsLost: string;
  readonly resultPartitions: string;
  readonly resultPartitionBytes: string;
  readonly resultPartitionProduced: string;
  readonly resultPartitionConsumed: string;
  readonly resultPartitionSpilled: string;
}

export function metricNames(prefix: string): MetricNames {
  const jm = `${prefix}_jobmanager`;
  return {
    taskSlotsTotal: `${jm}_taskSlotsTotal`,
    taskSlotsAvailable: `${jm}_taskSlotsAvailable`,
    numRegisteredTaskManagers: `${jm}_numRegisteredTaskManagers`,
    numPendingTaskManagers: `${jm}_numPendingTaskManagers`,
    numRunningJobs: `${jm}_numRunningJobs`,
    jobNumRestarts: `${jm}_job_numRestarts`,
    jobNumSlowExecutionVertices: `${jm}_job_numSlowExecutionVertices`,
    jobNumEffectiveSpeculativeExecutions: `${jm}_job_numEffectiveSpeculativeExecutions`,
    jobUptime: `${jm}_job_uptime`,
    taskSlots: `${prefix}_task_slots`,
    slotRequestsPending: `${prefix}_slot_requests_pending`,
    slotAllocationLatency: `${prefix}_slot_allocation_latency_seconds`,
    subtaskDeployLatency: `${prefix}_subtask_deploy_latency_seconds`,
    subtasksEnded: `${prefix}_subtasks_ended_total`,
    taskRunTime: `${prefix}_task_run_time_seconds`,
    taskWaitTime: `${prefix}_task_wait_time_seconds`,
    taskExecutorsLost: `${prefix}_task_executors_lost_total`,
    resultPartitions: `${prefix}_result_partitions`,
    resultPartitionBytes: `${prefix}_result_partition_bytes`,
    resultPartitionProduced: `${prefix}_result_partition_produced_bytes_total`,
    resultPartitionConsumed: `${prefix}_result_partition_consumed_bytes_total`,
    resultPartitionSpilled: `${prefix}_result_partition_spilled_bytes_total`,
  };
}
