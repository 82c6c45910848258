/**
 * What the JobMaster submits to a TaskExecutor to run one attempt in its slot (Flink's TaskDeploymentDescriptorFactory
 * and its TaskDeploymentDescriptor): the attempt and its slot, the vertex's task module and config, and as its inputs
 * the outputs of its producers — per input edge, by producer subtask index — which have all finished by then.
 */
import type { AllocationID, JobID } from '../core/ids.js';
import type { TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { ExecutionAttempts, ExecutionRecord } from './ExecutionAttempts.js';
import type { ExecutionGraph } from './ExecutionGraph.js';

export class TaskDeploymentDescriptorFactory {
  readonly #jobId: JobID;
  readonly #graph: ExecutionGraph;
  readonly #executions: ExecutionAttempts;

  constructor(jobId: JobID, graph: ExecutionGraph, executions: ExecutionAttempts) {
    this.#jobId = jobId;
    this.#graph = graph;
    this.#executions = executions;
  }

  /** The descriptor of the record's current attempt, in the slot of that allocation. */
  createDeploymentDescriptor(record: ExecutionRecord, allocationId: AllocationID): TaskDeploymentDescriptor {
    const inputs: Record<string, unknown[]> = {};
    for (const input of this.#graph.inputsOf(record.vertex))
      inputs[input.edge.from] = input.producers.map((p) => this.#executions.of(p).output);
    const { jobVertex, id } = record.vertex;
    return {
      jobId: this.#jobId,
      jobName: this.#graph.jobGraph.name,
      vertexId: jobVertex.id,
      vertexName: jobVertex.id,
      subtaskIndex: id.subtaskIndex,
      parallelism: jobVertex.parallelism,
      attemptNumber: record.attemptNumber,
      executionAttemptId: record.executionAttemptId,
      allocationId,
      taskModule: jobVertex.taskModule,
      inputs,
      config: jobVertex.config,
    };
  }
}
