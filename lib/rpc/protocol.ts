/**
 * The wire shapes of the gateways: plain, structured-cloneable data only (no class instances, no
 * functions), so the same messages cross a MessagePort to a worker thread and the IPC channel of
 * a child process. Types only; converters live beside the code that sends them.
 */
import type { AllocationID, ExecutionAttemptID, JobID, ResourceID, ResourceManagerId } from '../core/ids.js';
import type { ResourceProfileJSON } from '../core/ResourceProfile.js';
import type { SlotStatusState } from '../core/SlotReport.js';

export interface SlotStatusWire {
  readonly slotNumber: number;
  readonly resourceProfile: ResourceProfileJSON;
  readonly allocationId: AllocationID | null;
  readonly jobId: JobID | null;
  readonly state: SlotStatusState;
}

export interface SlotReportWire {
  readonly resourceId: ResourceID;
  readonly slots: readonly SlotStatusWire[];
}

/**
 * A TaskExecutor's answer to the ResourceManager's heartbeat (Flink's TaskExecutorHeartbeatPayload): its slot report
 * and its result partitions (Flink's ClusterPartitionReport; here their figures), null when it keeps none.
 */
export interface HeartbeatPayloadWire extends SlotReportWire {
  readonly partitions?: PartitionFiguresWire | null;
}

/** A TaskExecutor's result partitions (ResultPartitions.ts' stats). */
export interface PartitionFiguresWire {
  readonly partitions: number;
  /** Bytes of the partitions kept, in memory and spilled. */
  readonly bytes: number;
  /** Of them, spilled to disk now; and every byte ever spilled there. */
  readonly spilledBytes: number;
  readonly spilledTotal: number;
  /** Bytes of every partition kept there so far (produced), and of every subpartition read by consumers there. */
  readonly producedBytes: number;
  readonly consumedBytes: number;
  /** Subpartitions read by consumers: there (the same TaskExecutor), and by other TaskExecutors. */
  readonly readLocally: number;
  readonly served: number;
}

/** What a TaskExecutor says of itself when it registers (Flink's TaskExecutorRegistration). */
export interface TaskExecutorRegistrationWire {
  readonly resourceId: ResourceID;
  readonly host: string;
  readonly totalResourceProfile: ResourceProfileJSON;
  readonly defaultSlotResourceProfile: ResourceProfileJSON;
  readonly numberOfSlots: number;
  /** The pending worker it was started for, if any. */
  readonly pendingWorkerId?: string;
  /** 'thread' or 'process': how it runs, for the overview. */
  readonly mode: 'thread' | 'process';
}

export type RegistrationResponse =
  | {
      readonly kind: 'accepted';
      readonly registrationId: string;
      /** The ResourceManager that accepted it: its slot requests carry this id. */
      readonly resourceManagerId: ResourceManagerId;
      readonly heartbeatIntervalMs: number;
      readonly heartbeatTimeoutMs: number;
    }
  | { readonly kind: 'refused'; readonly reason: string };

/**
 * A JobMaster's answer to a TaskExecutor registering for a job (Flink's JMTMRegistrationSuccess or
 * a failure): a refused one names why (another job's JobMaster, the job ended, the JobMaster cannot
 * reach that TaskExecutor).
 */
export type JobMasterRegistrationResponse =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'refused'; readonly reason: string };

export interface SlotRequestWire {
  /** A static index, or -1 for a dynamic slot. */
  readonly index: number;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly resourceProfile: ResourceProfileJSON;
  /** The JobMaster's address: the TaskExecutor offers the slot there. */
  readonly targetAddress: string;
  /**
   * The ResourceManager asking (Flink's resourceManagerId): a TaskExecutor grants slots only to the one it is
   * registered at.
   */
  readonly resourceManagerId: ResourceManagerId;
}

/** A slot a TaskExecutor offers to a JobMaster (Flink's SlotOffer). */
export interface SlotOfferWire {
  readonly allocationId: AllocationID;
  readonly index: number;
  readonly resourceProfile: ResourceProfileJSON;
}

/** Everything a TaskExecutor needs to run one subtask attempt (Flink's TaskDeploymentDescriptor). */
export interface TaskDeploymentDescriptor {
  readonly jobId: JobID;
  readonly jobName: string;
  readonly vertexId: string;
  readonly vertexName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  readonly executionAttemptId: ExecutionAttemptID;
  readonly allocationId: AllocationID;
  /** An absolute file path or file: URL of a module whose default export is `async (context, inputs) => output`. */
  readonly taskModule: string;
  /**
   * The outputs of the upstream subtasks this one consumes (structured-cloneable), per input edge by producer subtask
   * index: those that came through the JobMaster; one kept in a result partition is undefined here and named in
   * `partitionInputs`.
   */
  readonly inputs: unknown;
  /**
   * Per input edge, by producer subtask index: where to read a producer's output that stayed on its TaskExecutor (null
   * for one given in `inputs`). Absent when every input came through the JobMaster.
   */
  readonly partitionInputs?: Readonly<Record<string, readonly (PartitionInputWire | null)[]>>;
  /**
   * Present when the subtask has consumers: its output is their input. `subpartitions` is the consumer's parallelism
   * of a hash edge (the output must be an array of that many parts, part i for consumer subtask i), null for one
   * output every consumer reads whole.
   */
  readonly producesPartition?: { readonly subpartitions: number | null };
  /** Free-form, structured-cloneable parameters the vertex passes its subtasks. */
  readonly config?: unknown;
}

/**
 * A producer's output kept where it was produced (Flink's ResultPartition, as its ResultPartitionDeploymentDescriptor
 * tells the JobMaster): the producing attempt's id names it, the TaskExecutor holds it, in `bytes.length`
 * subpartitions of `bytes[i]` bytes each (serialized).
 */
export interface ResultPartitionWire {
  readonly partitionId: ExecutionAttemptID;
  readonly resourceId: ResourceID;
  readonly bytes: readonly number[];
}

/** One subpartition a consumer reads (Flink's InputChannelDeploymentDescriptor): whose, where, which part. */
export interface PartitionInputWire {
  readonly partitionId: ExecutionAttemptID;
  readonly resourceId: ResourceID;
  readonly subpartition: number;
  readonly bytes: number;
}

export type ExecutionState = 'deploying' | 'initializing' | 'running' | 'finished' | 'failed' | 'canceled';

/** A task's state change, reported by the TaskExecutor to its JobMaster. */
export interface TaskExecutionStateWire {
  readonly jobId: JobID;
  readonly executionAttemptId: ExecutionAttemptID;
  readonly state: ExecutionState;
  /** With 'finished': what the task returned (a sink's, or any when the TaskExecutor keeps no partitions). */
  readonly output?: unknown;
  /** With 'finished': where its output stays, when its TaskExecutor kept it as a result partition. */
  readonly partition?: ResultPartitionWire;
  /** With 'failed': why (a serialized error: _tag/reason/message/details, or name/message/stack). */
  readonly error?: SerializedError;
  readonly resourceId: ResourceID;
}

export interface SerializedError {
  readonly _tag?: string;
  readonly name: string;
  readonly reason?: string;
  readonly message: string;
  readonly details?: Record<string, unknown>;
  readonly stack?: string;
}

/** What a JobMaster declares (Flink's ResourceRequirements): everything the job needs now. */
export interface ResourceRequirementsWire {
  readonly jobId: JobID;
  readonly targetAddress: string;
  readonly requirements: ReadonlyArray<{
    readonly resourceProfile: ResourceProfileJSON;
    readonly numberOfRequiredSlots: number;
  }>;
}

/**
 * A TaskExecutor a JobMaster found slow (Flink's BlockedNode, per TaskExecutor here): it takes no new slots for
 * `durationMs` from when the ResourceManager hears of it.
 */
export interface BlockedTaskManagerWire {
  readonly resourceId: ResourceID;
  readonly cause: string;
  readonly durationMs: number;
}

/** Figures of one TaskExecutor (TaskExecutorGateway.requestMetrics). */
export interface TaskExecutorMetricsWire {
  readonly resourceId: ResourceID;
  /**
   * Slots by state now: allocated (not active yet), active, releasing. Free static slots are `numberOfSlots` minus the
   * static ones taken.
   */
  readonly slots: {
    readonly numberOfSlots: number;
    readonly allocated: number;
    readonly active: number;
    readonly releasing: number;
  };
  /** Attempts submitted here and not ended yet. */
  readonly runningTasks: number;
  /**
   * Result partitions kept here (ResultPartitions.ts): how many and their bytes now (`spilledBytes` of them on disk),
   * the bytes spilled, produced (kept) and consumed (read by consumers here) since it started, and the subpartitions
   * read so far by consumers here (`readLocally`) and by other TaskExecutors (`served`); null when it keeps none
   * (outputs go to the JobMaster).
   */
  readonly partitions: PartitionFiguresWire | null;
  /** Task threads (TaskThreadReserve): null when this TaskExecutor's runners keep no reserve. */
  readonly taskThreads: {
    /** Threads booted since it started, spares and on-demand ones. */
    readonly started: number;
    /** Slot allocations that took a spare thread (no boot to wait for). */
    readonly servedFromSpare: number;
    /** Slot allocations that booted their own (no spare of their heap limit). */
    readonly bootedOnDemand: number;
    /** Spare threads now. */
    readonly spare: number;
    /** Threads held by allocated slots now. */
    readonly inUse: number;
    /** Of `servedFromSpare`, allocations whose thread had served an earlier allocation (of this job or another). */
    readonly reusedAcrossAllocations: number;
    /** Threads given back that retired instead (max jobs, heap after the job, something left running). */
    readonly retired: number;
    /**
     * Each spare thread that has served an allocation: how many it served, and its heap in use (bytes) when the last
     * ended (after a full collection when the process runs with --expose-gc): a job's leftovers show here.
     */
    readonly servedSpares: readonly { readonly allocations: number; readonly heapUsedBytes: number }[];
  } | null;
}

// ------------------------------------------------------------------ gateway calls (connect.ts)
//
// A gateway call on a Link channel is one CallFrame; its answer is one ResultFrame or ErrorFrame
// with the same id, on the same channel the other way. Ids are numbers unique per channel and
// side; nothing else travels (no paths, no GET/SET, no proxies): a call names one method of the
// served gateway and passes its arguments as they are, structured-cloneable.

/** A call of `method` with `args` on the gateway served on the channel. */
export interface CallFrame {
  readonly kind: 'call';
  readonly id: number;
  readonly method: string;
  readonly args: readonly unknown[];
}

/** The call `id` returned `value`. */
export interface ResultFrame {
  readonly kind: 'result';
  readonly id: number;
  readonly value: unknown;
}

/** The call `id` threw (or its promise rejected with) `thrown`. */
export interface ErrorFrame {
  readonly kind: 'error';
  readonly id: number;
  readonly thrown: SerializedThrow;
}

export type AnswerFrame = ResultFrame | ErrorFrame;
export type GatewayFrame = CallFrame | AnswerFrame;

/** An error on the wire: SerializedError, plus Node's `code` when it has one (ERR_WORKER_OUT_OF_MEMORY). */
export type WireError = SerializedError & { readonly code?: string };

/** A thrown value on the wire: an Error as a WireError (revived as its own class), anything else as itself. */
export type SerializedThrow =
  | { readonly isError: true; readonly error: WireError }
  | { readonly isError: false; readonly value: unknown };
