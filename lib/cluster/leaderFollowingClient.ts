/**
 * A JobClient of a JobManager with a job store that follows its job across leaders. While the JobManager that took
 * the job leads, it is the Dispatcher's client. When leadership goes first, the job is not canceled for the cluster
 * (the next leader recovers it), so neither is this client: its events stop, its status stays the last one it had
 * under this leader, and `result` settles with the job's real end — read from the job store where the leader that
 * ran it wrote it, or from this JobManager's own client if it leads again and recovered the job — or, if this
 * JobManager closes first, as canceled with an error saying the job was left to the cluster (Flink's job status
 * SUSPENDED, seen from a client of the JobManager that let go).
 */
import { ClusterError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import type { JobClient } from '../dispatcher/Dispatcher.js';
import { jobErrorOf, type JobEvent, type JobResult } from '../jobmaster/JobResult.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import type { LeaderServices } from './leaderServices.js';

/** How often a client whose leader went looks for its job's end. */
export const FOLLOW_POLL_MS = 1_000;

/** What the JobManager gives its clients to follow a job. */
export interface JobFollowing {
  readonly clusterId: string;
  /** Whether the JobManager is closing (a follower stops looking then). */
  closed(): boolean;
  /** Its current leadership if it leads and serves (jobs recovered), else null. */
  leading(): LeaderServices | null;
  /** The ended job's result in the job store, or null while there is none. */
  storedResult(jobId: JobID): Promise<JobResult | null>;
}

/** `client`, taken by the leadership `services`, following its job past them. */
export function leaderFollowingClient(client: JobClient, services: LeaderServices, f: JobFollowing): JobClient {
  let status: JobStatus = client.status;
  // The status changes it saw while its leader led (after, the Dispatcher's cancel is not the job's).
  client.onEvent((event) => {
    if (event.type === 'status' && !services.suspended) status = event.status;
  });
  let result: Promise<JobResult> | null = null;
  return {
    jobId: client.jobId,
    name: client.name,
    get status() {
      return services.suspended ? status : client.status;
    },
    get result() {
      result ??= followResult(client, services, f);
      return result;
    },
    onEvent: (listener: (event: JobEvent) => void) =>
      client.onEvent((event) => {
        if (!services.suspended) listener(event);
      }),
    cancel: async () => {
      if (!services.suspended) return client.cancel();
      throw new ClusterError(
        'not-leader',
        `job ${client.jobId} runs under another JobManager now (this one no longer leads): cancel it there`,
        { clusterId: f.clusterId, jobId: client.jobId },
      );
    },
  };
}

async function followResult(client: JobClient, services: LeaderServices, f: JobFollowing): Promise<JobResult> {
  const ended = await client.result;
  if (!services.suspended || ended.status !== 'canceled') return ended;
  for (;;) {
    if (f.closed()) return leftToTheCluster(ended, f.clusterId);
    const leader = f.leading();
    const again = leader?.dispatcher.getJob(client.jobId);
    if (leader !== null && again !== undefined) return followResult(again, leader, f);
    const stored = await f.storedResult(client.jobId).catch(() => null);
    if (stored !== null) return stored;
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS).unref());
  }
}

function leftToTheCluster(ended: JobResult, clusterId: string): JobResult {
  const error = new ClusterError(
    'not-leader',
    `job ${ended.jobId} was not canceled: this JobManager stopped leading, then closed, before the job ended ` +
      'under the next leader (ask its REST API, or slotwise list, how it ended)',
    { clusterId, jobId: ended.jobId },
  );
  return { ...ended, error: jobErrorOf(error) };
}
