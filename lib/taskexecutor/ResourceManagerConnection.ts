/**
 * A TaskExecutor's connection to its ResourceManager (Flink's TaskExecutorToResourceManagerConnection
 * and, once accepted, EstablishedResourceManagerConnection): registering, retried with exponential
 * backoff (`cluster.registration.initial-timeout` doubling up to `cluster.registration.max-timeout`)
 * until accepted or `taskmanager.registration.timeout` passes; then watching the ResourceManager's
 * heartbeats (its requests are our heartbeats from it) and registering again when it falls silent
 * for `heartbeat.timeout` or disconnects us. It also answers Flink's isConnectedToResourceManager
 * check: slots are only for the ResourceManager we are registered at.
 *
 * It runs on the TaskExecutor's mailbox; the TaskExecutor is told when a registration was accepted
 * and when registering timed out (it shuts down then).
 */
import { describeError, IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { ResourceManagerId, type ResourceID } from '../core/ids.js';
import type { ResolvedOptions } from '../core/options.js';
import type { ResourceManagerGateway } from '../rpc/gateways.js';
import { HeartbeatMonitor } from '../rpc/HeartbeatMonitor.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { RegistrationResponse, TaskExecutorRegistrationWire } from '../rpc/protocol.js';

/** `idle` before the first registration, `closed` once the TaskExecutor shuts down. */
export type ResourceManagerConnectionState = 'idle' | 'registering' | 'registered' | 'closed';

export type AcceptedRegistration = Extract<RegistrationResponse, { kind: 'accepted' }>;

export interface ResourceManagerConnectionOptions {
  readonly resourceId: ResourceID;
  readonly resourceManager: ResourceManagerGateway;
  readonly mailbox: MainThreadExecutor;
  readonly options: ResolvedOptions;
  /** What each registration attempt sends. */
  readonly registration: () => TaskExecutorRegistrationWire;
  /** A registration was accepted (the connection is registered already). */
  readonly onRegistered: (response: AcceptedRegistration) => void;
  /** Registering did not succeed within taskmanager.registration.timeout: `cause` says so. */
  readonly onRegistrationTimeout: (cause: string) => void;
  readonly log: (message: string) => void;
}

export class ResourceManagerConnection {
  readonly #o: ResourceManagerConnectionOptions;
  #state: ResourceManagerConnectionState = 'idle';
  #registrationId: string | null = null;
  /** The ResourceManager we are registered at (null while not registered). */
  #resourceManagerId: ResourceManagerId | null = null;
  #attempt = 0;
  /** Watches the ResourceManager's heartbeats while registered. */
  #heartbeat: HeartbeatMonitor<'ResourceManager'> | null = null;
  #deadline: { cancel(): boolean } | null = null;

  constructor(options: ResourceManagerConnectionOptions) {
    this.#o = options;
  }

  get state(): ResourceManagerConnectionState {
    return this.#state;
  }

  /** The id of the accepted registration (null while not registered). */
  get registrationId(): string | null {
    return this.#registrationId;
  }

  /** (Re)starts registering: any registration there was is forgotten first. */
  register(why: string): void {
    if (this.#state === 'closed') return;
    this.#state = 'registering';
    this.#disconnect();
    this.#attempt = 0;
    this.#deadline?.cancel();
    this.#deadline = this.#o.mailbox.schedule(() => {
      if (this.#state === 'registering')
        this.#o.onRegistrationTimeout(
          `could not register at the ResourceManager within taskmanager.registration.timeout (${why})`,
        );
    }, this.#o.options['taskmanager.registration.timeout']);
    this.#attemptRegistration();
  }

  /** The ResourceManager disconnected us: register again (nothing to do unless registered). */
  disconnected(cause: string): void {
    if (this.#state !== 'registered') return;
    this.#o.log(`the ResourceManager disconnected: ${cause}; registering again`);
    this.register('disconnected by the ResourceManager');
  }

  /** A heartbeat request from the ResourceManager arrived. */
  heartbeatReceived(): void {
    this.#heartbeat?.reportHeartbeat('ResourceManager');
  }

  /** No more registering, no more watching: the TaskExecutor is shutting down. */
  close(): void {
    this.#state = 'closed';
    this.#disconnect();
    this.#deadline?.cancel();
  }

  /**
   * Flink's isConnectedToResourceManager check: throws unless registered at `resourceManagerId`.
   * `lifecycle` names the TaskExecutor's state in the refusal when it is not registered.
   */
  requireRegisteredAt(resourceManagerId: ResourceManagerId | undefined, operation: string, lifecycle: string): void {
    if (this.#state === 'registered' && resourceManagerId === this.#resourceManagerId) return;
    if (!ResourceManagerId.is(resourceManagerId)) {
      throw new IllegalArgumentError(
        'invalid-value',
        `${operation}: resourceManagerId must be the ResourceManagerId ` +
          `of the ResourceManager asking, got ${String(resourceManagerId)}`,
        { argument: 'resourceManagerId' },
      );
    }
    const state = this.#state === 'registered' ? `registered at ResourceManager ${this.#resourceManagerId}` : lifecycle;
    throw new IllegalStateError(
      `TaskExecutor ${this.#o.resourceId} is not connected to ` +
        `ResourceManager ${String(resourceManagerId)} (it is ${state}): ${operation} refused`,
      {
        component: 'TaskExecutor',
        operation,
        state,
        allowed: [`registered at ResourceManager ${String(resourceManagerId)}`],
      },
    );
  }

  #attemptRegistration(): void {
    if (this.#state !== 'registering') return;
    const attempt = ++this.#attempt;
    const { mailbox, options, resourceManager } = this.#o;
    // Flink's RetryingRegistration: an attempt unanswered within its timeout (initial-timeout, doubling up to
    // max-timeout) is given up for the next at once — a message lost on the way (a leader not listening yet) costs
    // 100 ms, not rpc.ask.timeout.
    const timeout = Math.min(
      options['cluster.registration.initial-timeout'] * 2 ** (attempt - 1),
      options['cluster.registration.max-timeout'],
    );
    const unanswered = mailbox.schedule(() => {
      if (this.#state !== 'registering' || attempt !== this.#attempt) return;
      this.#o.log(`registration attempt ${attempt} got no answer within ${timeout} ms; trying again`);
      this.#attemptRegistration();
    }, timeout);
    mailbox.whenComplete(resourceManager.registerTaskExecutor(this.#o.registration()), (response, error) => {
      unanswered.cancel();
      if (this.#state !== 'registering' || attempt !== this.#attempt) return;
      if (response?.kind === 'accepted') {
        this.#accepted(response);
        return;
      }
      const initial = options['cluster.registration.initial-timeout'];
      const delay = Math.min(initial * 2 ** (attempt - 1), options['cluster.registration.max-timeout']);
      const outcome = response?.kind === 'refused' ? `refused: ${response.reason}` : `failed: ${describeError(error)}`;
      this.#o.log(`registration attempt ${attempt} ${outcome}; retrying in ${delay} ms`);
      mailbox.schedule(() => this.#attemptRegistration(), delay);
    });
  }

  #accepted(response: AcceptedRegistration): void {
    this.#deadline?.cancel();
    this.#state = 'registered';
    this.#registrationId = response.registrationId;
    this.#resourceManagerId = response.resourceManagerId;
    this.#monitor(response.heartbeatIntervalMs, response.heartbeatTimeoutMs);
    this.#o.onRegistered(response);
  }

  /**
   * The ResourceManager heartbeats us; silent for heartbeat.timeout while we could look, it is lost
   * (Flink: reconnect). Our own lateness (a blocked event loop) is not held against it.
   */
  #monitor(intervalMs: number, timeoutMs: number): void {
    const monitor = new HeartbeatMonitor<'ResourceManager'>({
      mailbox: this.#o.mailbox,
      intervalMs,
      timeoutMs,
      onTimeout: (_, silentMs) => {
        if (this.#heartbeat !== monitor || this.#state !== 'registered') return;
        this.#o.log(
          `no heartbeat from the ResourceManager for ${silentMs} ` +
            `ms (heartbeat.timeout ${timeoutMs} ms): registering again`,
        );
        this.register('the ResourceManager was lost');
      },
      log: (message) => this.#o.log(message),
    });
    monitor.monitorTarget('ResourceManager');
    monitor.start();
    this.#heartbeat = monitor;
  }

  /** No longer registered: forget the registration, stop watching the ResourceManager. */
  #disconnect(): void {
    this.#registrationId = null;
    this.#resourceManagerId = null;
    this.#heartbeat?.stop();
    this.#heartbeat = null;
  }
}
