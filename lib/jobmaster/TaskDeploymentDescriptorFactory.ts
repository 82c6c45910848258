/**
 * What the JobMaster submits to a TaskExecutor to run one attempt in its slot (Flink's TaskDeploymentDescriptorFactory
 * and its TaskDeploymentDescriptor): the attempt and its slot, the vertex's task module and config, and as its inputs
 * the outputs of its producers — per input edge, by producer subtask index — which have all finished by then.
 */
import type { AllocationID, JobID } from '../core/ids.js';
import type { PartitionInputWire, TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { ExecutionAttempts, ExecutionRecord } from './ExecutionAttempts.js';
import type { ExecutionGraph } from './ExecutionGraph.js';
import type { Mutable } from '../core/Mutable.js';

export class TaskDeploymentDescriptorFactory {
  readonly #jobId: JobID;
  readonly #graph: ExecutionGraph;
  readonly #executions: ExecutionAttempts;

  constructor(jobId: JobID, graph: ExecutionGraph, executions: ExecutionAttempts) {
    this.#jobId = jobId;
    this.#graph = graph;
    this.#executions = executions;
  }

  /**
   * The descriptor of the record's current attempt, in the slot of that allocation: per input edge, by producer
   * subtask, the producer's output when it came to the JobMaster, or where to read it (`partitionInputs`) when it
   * stayed on its TaskExecutor — of a hash edge, the parts of this subtask's range of subpartitions, producer by
   * producer —; and, for a producer, what its output must be.
   * `attempt`: another attempt of the subtask than its current one (a speculative one), with the same inputs.
   */
  createDeploymentDescriptor(
    record: ExecutionRecord,
    allocationId: AllocationID,
    attempt: Pick<ExecutionRecord, 'attemptNumber' | 'executionAttemptId'> = record,
  ): TaskDeploymentDescriptor {
    const { jobVertex, id } = record.vertex;
    const inputs: Record<string, unknown[]> = {};
    let partitionInputs: Record<string, (PartitionInputWire | null)[]> | undefined;
    for (const input of this.#graph.inputsOf(record.vertex)) {
      // A hash edge's subpartitions [start, end) of every producer, producer by producer; the others' one output each.
      const hash = input.edge.pattern === 'hash';
      const [start, end] = input.subpartitions;
      const span = end - start;
      const producers = input.producers;
      const values: unknown[] = new Array(producers.length * span);
      let refs: (PartitionInputWire | null)[] | undefined;
      for (let i = 0; i < producers.length; i++) {
        const producer = this.#executions.of(producers[i]!);
        const partition = producer.partition;
        for (let subpartition = start; subpartition < end; subpartition++) {
          const at = i * span + subpartition - start;
          if (partition === null) {
            values[at] = hash ? (producer.output as unknown[] | undefined)?.[subpartition] : producer.output;
            continue;
          }
          refs ??= new Array<PartitionInputWire | null>(values.length).fill(null);
          refs[at] = {
            partitionId: partition.partitionId,
            resourceId: partition.resourceId,
            subpartition,
            bytes: partition.bytes[subpartition] ?? 0,
          };
        }
      }
      inputs[input.edge.from] = values;
      if (refs !== undefined) (partitionInputs ??= {})[input.edge.from] = refs;
    }
    const consumer = this.#graph.jobGraph.outputsOf(jobVertex.id)[0];
    // One literal, the optional fields added when there are any: spreads made temporary objects and a descriptor of
    // another shape per subtask, and every subtask of a large job has one made as its slot comes.
    const descriptor: Mutable<TaskDeploymentDescriptor> = {
      jobId: this.#jobId,
      jobName: this.#graph.jobGraph.name,
      vertexId: jobVertex.id,
      vertexName: jobVertex.id,
      subtaskIndex: id.subtaskIndex,
      parallelism: record.vertex.parallelism,
      attemptNumber: attempt.attemptNumber,
      executionAttemptId: attempt.executionAttemptId,
      allocationId,
      taskModule: jobVertex.taskModule,
      inputs,
      config: jobVertex.config,
    };
    if (partitionInputs !== undefined) descriptor.partitionInputs = partitionInputs;
    // A hash edge is its producer's only output edge (JobGraph's rule).
    if (consumer !== undefined)
      descriptor.producesPartition = { subpartitions: this.#graph.subpartitionsOf(jobVertex.id) };
    return descriptor;
  }
}
