/**
 * What the metrics keep of each job from the events its JobMaster already emits: its restarts, since
 * when it runs without interruption, and per subtask attempt when it was scheduled, deployed and
 * started. Turns task events into the durations the histograms take; holds nothing of an attempt
 * once it ended, nor of a job once it ended (beyond its restarts and end).
 */
import { msSince } from '../core/clock.js';
import type { ExecutionAttemptID, JobID, ResourceID } from '../core/ids.js';
import type { JobEvent } from '../jobmaster/JobMaster.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';

/** Flink's uptime gauge for a job that ended (its NO_LONGER_RUNNING). */
export const NO_LONGER_RUNNING = -1;

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

interface AttemptTimes {
  readonly scheduledAt: number;
  deployingAt: number | null;
  runningAt: number | null;
}

interface JobRecord {
  readonly name: string;
  status: JobStatus;
  restarts: number;
  /** The last switch to running, or null while not running. */
  runningSince: number | null;
  /**
   * Per attempt not ended: while it only waits for its slot, when it was scheduled as ms after `epoch` — a small
   * integer V8 keeps in the map entry itself, where a timestamp would be a heap number and an object beside it for
   * each of a large job's 100,000 waiting subtasks —; its times once it deploys.
   */
  readonly attempts: Map<ExecutionAttemptID, number | AttemptTimes>;
  /** The job's first event's timestamp: what the waiting attempts' times count from. */
  readonly epoch: number;
  /** Speculative attempts not ended yet, and their subtask (`vertexId#subtaskIndex`); none until one is scheduled. */
  speculating: Map<ExecutionAttemptID, string> | null;
  /** Speculative attempts that finished first (Flink's numEffectiveSpeculativeExecutions). */
  effectiveSpeculations: number;
}

/** What the metrics show of a job. */
export interface JobFigures {
  readonly restarts: number;
  readonly uptimeMs: number;
  /** Subtasks a speculative attempt runs for now: found slow (Flink's numSlowExecutionVertices, as it speculates). */
  readonly slowSubtasks: number;
  readonly effectiveSpeculations: number;
}

/** What a task event measured (ms), for the histograms. */
export interface TaskDurations {
  /** scheduled → running: the subtask deploy latency. */
  readonly deployLatencyMs?: number;
  /** deploying → running, on `resourceId`: how long the task waited at its TaskExecutor (piscina's waitTime). */
  readonly waitTimeMs?: number;
  /** running → its end, on `resourceId` (piscina's runTime). */
  readonly runTimeMs?: number;
  readonly resourceId: ResourceID | null;
  /** The attempt ended in this state. */
  readonly ended?: 'finished' | 'failed' | 'canceled';
}

export class JobTimings {
  readonly #jobs = new Map<JobID, JobRecord>();

  /** Applies a job event; for a task event, returns what it measured. */
  record(jobId: JobID, jobName: string, event: JobEvent): TaskDurations | null {
    let job = this.#jobs.get(jobId);
    if (job === undefined) {
      job = {
        name: jobName,
        status: 'created',
        restarts: 0,
        runningSince: null,
        attempts: new Map(),
        epoch: event.timestamp,
        speculating: null,
        effectiveSpeculations: 0,
      };
      this.#jobs.set(jobId, job);
    }
    if (event.type === 'status') {
      if (event.status === 'restarting') job.restarts++;
      job.status = event.status;
      job.runningSince = event.status === 'running' ? event.timestamp : null;
      if (ENDED.has(event.status)) {
        job.attempts.clear();
        job.speculating = null;
      }
      return null;
    }
    if (event.type !== 'task') return null;
    const { executionAttemptId: id, state, timestamp, resourceId } = event;
    if (event.speculative === true && state === 'scheduled')
      (job.speculating ??= new Map()).set(id, `${event.vertexId}#${event.subtaskIndex}`);
    // The first to finish of a speculative attempt and its subtask's: its end is the subtask's (no speculative mark).
    else if (ENDED.has(state) && job.speculating?.delete(id) === true && state === 'finished')
      job.effectiveSpeculations++;
    const entry = job.attempts.get(id);
    if (state === 'scheduled') {
      // A subtask scheduled again for another slot keeps its first time: the wait its user sees.
      if (entry === undefined) job.attempts.set(id, msSince(job.epoch, timestamp));
      return null;
    }
    if (entry === undefined)
      return ENDED.has(state) ? { resourceId, ended: state as TaskDurations['ended'] & string } : null;
    if (ENDED.has(state)) {
      job.attempts.delete(id);
      const runningAt = typeof entry === 'number' ? null : entry.runningAt;
      return {
        resourceId,
        ended: state as 'finished' | 'failed' | 'canceled',
        ...(runningAt === null ? {} : { runTimeMs: timestamp - runningAt }),
      };
    }
    if (state !== 'deploying' && state !== 'running') return null;
    // Its times become an object once it deploys: few attempts deploy or run at a time.
    let times = entry;
    if (typeof times === 'number')
      job.attempts.set(id, (times = { scheduledAt: job.epoch + times, deployingAt: null, runningAt: null }));
    if (state === 'deploying') {
      times.deployingAt = timestamp;
      return null;
    }
    times.runningAt = timestamp;
    return {
      resourceId,
      deployLatencyMs: timestamp - times.scheduledAt,
      ...(times.deployingAt === null ? {} : { waitTimeMs: timestamp - times.deployingAt }),
    };
  }

  /** Restarts so far, and Flink's uptime: ms running without interruption, 0 while not running, -1 once ended. */
  figures(jobId: JobID, now: number): JobFigures | undefined {
    const job = this.#jobs.get(jobId);
    if (job === undefined) return undefined;
    const uptimeMs = ENDED.has(job.status)
      ? NO_LONGER_RUNNING
      : job.runningSince === null
        ? 0
        : Math.max(0, now - job.runningSince);
    const slowSubtasks = job.speculating === null ? 0 : new Set(job.speculating.values()).size;
    return { restarts: job.restarts, uptimeMs, slowSubtasks, effectiveSpeculations: job.effectiveSpeculations };
  }

  /** Forgets the jobs not in `listed` (the Dispatcher let them go). */
  retain(listed: ReadonlySet<JobID>): void {
    for (const jobId of this.#jobs.keys()) if (!listed.has(jobId)) this.#jobs.delete(jobId);
  }
}
