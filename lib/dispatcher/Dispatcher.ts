/**
 * Dispatcher (seed 004): takes jobs, validates their graphs (task modules loaded and checked),
 * starts a JobMaster for each and keeps the registry of jobs; several jobs share the cluster.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { ResolvedOptions } from '../core/options.js';
import type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { ResourceID } from '../core/ids.js';
import { JobGraph, type JobGraphSpec } from '../jobmaster/JobGraph.js';
import { JobMaster, type JobEvent, type JobResult } from '../jobmaster/JobMaster.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import type { InspectionEvent } from 'xstate';

/** What the Dispatcher needs from the cluster around it. */
export interface DispatcherServices {
  readonly options: ResolvedOptions;
  readonly clock?: Clock;
  /** The ResourceManager as a JobMaster calls it (on the ResourceManager's mailbox). */
  readonly resourceManager: Pick<ResourceManagerGateway, 'registerJobMaster' | 'declareRequiredResources' | 'disconnectJobMaster'>;
  /** Makes a JobMaster reachable for TaskExecutors at its address, and withdraws it. */
  readonly serveJobMaster: (address: string, gateway: JobMasterGateway, mailbox: MainThreadExecutor) => void;
  readonly withdrawJobMaster: (address: string) => void;
  readonly taskExecutor: (resourceId: ResourceID) => TaskExecutorGateway | undefined;
  /** Why the job's slot requests wait (for timeout messages). */
  readonly reasonFor: (jobId: JobID) => string;
  readonly inspect?: (event: InspectionEvent) => void;
  readonly log?: (message: string) => void;
}

/** A submitted job, as its submitter sees it. */
export interface JobClient {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
  /** Settles when the job ends (finished, failed or canceled); never rejects. */
  readonly result: Promise<JobResult>;
  /** Status changes and task state changes; returns a function that unsubscribes. */
  onEvent(listener: (event: JobEvent) => void): () => void;
  cancel(): Promise<void>;
}

export interface JobSummary {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
}

export class Dispatcher {
  readonly #s: DispatcherServices;
  readonly #jobs = new Map<JobID, { master: JobMaster; client: JobClient }>();
  #closed = false;

  constructor(services: DispatcherServices) {
    this.#s = services;
  }

  /** Validates the job (its graph, then its task modules) and starts it. */
  async submitJob(job: JobGraphSpec | JobGraph): Promise<JobClient> {
    if (this.#closed) throw new IllegalStateError('the Dispatcher is closed: no new job is taken', { component: 'Dispatcher', operation: 'submitJob', state: 'closed', allowed: ['open'] });
    const graph = job instanceof JobGraph ? job : JobGraph.create(job, this.#s.options);
    await graph.validateTaskModules();
    const jobId = JobID.generate();
    const address = `jobmaster-${jobId}`;
    const listeners = new Set<(event: JobEvent) => void>();
    const master = new JobMaster({
      jobId,
      jobGraph: graph,
      address,
      options: this.#s.options,
      clock: this.#s.clock ?? systemClock,
      resourceManager: this.#s.resourceManager,
      taskExecutor: this.#s.taskExecutor,
      reasonFor: () => this.#s.reasonFor(jobId),
      onEvent: (event) => {
        for (const listener of listeners) listener(event);
      },
      ...(this.#s.inspect ? { inspect: this.#s.inspect } : {}),
      ...(this.#s.log ? { log: (m: string) => this.#s.log!(`[${graph.name}] ${m}`) } : {}),
    });
    this.#s.serveJobMaster(address, master, master.mailbox);
    const client: JobClient = {
      jobId,
      name: graph.name,
      get status() {
        return master.status;
      },
      result: master.result,
      onEvent: (listener) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
      cancel: () => master.cancel(),
    };
    this.#jobs.set(jobId, { master, client });
    void master.result.then(() => {
      // Late messages (final states, freed slots) may still come; withdraw the address a moment later.
      setTimeout(() => this.#s.withdrawJobMaster(address), 1000).unref();
    });
    master.start();
    return client;
  }

  getJob(jobId: JobID): JobClient | undefined {
    return this.#jobs.get(jobId)?.client;
  }

  getJobMaster(jobId: JobID): JobMaster | undefined {
    return this.#jobs.get(jobId)?.master;
  }

  listJobs(): JobSummary[] {
    return [...this.#jobs.values()].map(({ client }) => ({ jobId: client.jobId, name: client.name, status: client.status }));
  }

  async cancelJob(jobId: JobID): Promise<void> {
    const job = this.#jobs.get(jobId);
    if (job === undefined) throw new IllegalArgumentError('invalid-value', `no job ${jobId} in this cluster`, { argument: 'jobId' });
    await job.client.cancel();
  }

  /** Cancels every running job and waits (bounded) for them to end. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const running = [...this.#jobs.values()].filter(({ client }) => !['finished', 'failed', 'canceled'].includes(client.status));
    await Promise.all(running.map(({ client }) => client.cancel()));
    await Promise.race([Promise.all(running.map(({ client }) => client.result)), new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }
}
