/** Test doubles and builders shared by the slot sharing tests (pure: no threads, no timers of their own). */
import { AllocationID, ResourceID } from '../../lib/core/ids.js';
import type { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { ExecutionGraph } from '../../lib/jobmaster/ExecutionGraph.js';
import { JobGraph, type JobEdgeSpec, type JobGraphSpec, type JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';
import type {
  PhysicalSlot,
  PhysicalSlotListener,
  PhysicalSlotProvider,
  PhysicalSlotRequest,
} from '../../lib/jobmaster/slotsharing/SharedSlot.js';
import { LocalInputPreferredSlotSharingStrategy } from '../../lib/jobmaster/slotsharing/SlotSharingStrategy.js';

const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);

export const vertex = (id: string, parallelism: number, extra: Partial<JobVertexSpec> = {}): JobVertexSpec => ({
  id,
  taskModule: OK,
  parallelism,
  ...extra,
});
export const edge = (from: string, to: string, pattern: JobEdgeSpec['pattern'] = 'pointwise'): JobEdgeSpec => ({
  from,
  to,
  pattern,
});

/** A graph, its execution graph and its slot sharing strategy. */
export function jobOf(vertices: JobVertexSpec[], edges: JobEdgeSpec[] = [], extra: Partial<JobGraphSpec> = {}) {
  const graph = new ExecutionGraph(JobGraph.create({ name: 'test', vertices, edges, ...extra }));
  return { graph, strategy: new LocalInputPreferredSlotSharingStrategy(graph) };
}

interface Pending {
  readonly request: PhysicalSlotRequest;
  readonly resolve: (slot: PhysicalSlot) => void;
  readonly reject: (cause: Error) => void;
}

/** A physical slot request's outcome as a promise (for tests that await one). */
export function physicalSlotOf(
  provider: Pick<PhysicalSlotProvider, 'requestPhysicalSlot'>,
  request: PhysicalSlotRequest,
): Promise<PhysicalSlot> {
  return new Promise((resolve, reject) => provider.requestPhysicalSlot(request, SETTLE, { resolve, reject }));
}

const SETTLE: PhysicalSlotListener<Omit<Pending, 'request'>> = {
  physicalSlotReady: ({ resolve }, slot) => resolve(slot),
  physicalSlotFailed: ({ reject }, cause) => reject(cause),
};

/**
 * A PhysicalSlotProvider whose requests wait until the test fulfils or fails them; it records
 * every call. `rejectOnCancel` (default true) fails a canceled request, as a slot pool does. Its listeners hear
 * in a microtask, as the contract says.
 */
export class TestingPhysicalSlotProvider implements PhysicalSlotProvider {
  readonly requests: PhysicalSlotRequest[] = [];
  readonly canceled: Array<{ requestId: string; cause: Error }> = [];
  readonly released: Array<{ slot: PhysicalSlot; cause: Error }> = [];
  readonly #pending = new Map<string, Pending>();
  rejectOnCancel = true;
  /** Runs inside releaseSlot, e.g. to re-enter the allocator as a pool handing the slot on would. */
  onRelease: ((slot: PhysicalSlot) => void) | undefined;

  requestPhysicalSlot<T>(request: PhysicalSlotRequest, listener: PhysicalSlotListener<T>, token: T): void {
    this.requests.push(request);
    this.#pending.set(request.requestId, {
      request,
      resolve: (slot) => queueMicrotask(() => listener.physicalSlotReady(token, slot)),
      reject: (cause) => queueMicrotask(() => listener.physicalSlotFailed(token, cause)),
    });
  }

  cancelSlotRequest(requestId: string, cause: Error): void {
    this.canceled.push({ requestId, cause });
    if (this.rejectOnCancel) this.#take(requestId)?.reject(cause);
  }

  releaseSlot(slot: PhysicalSlot, cause: Error): void {
    this.released.push({ slot, cause });
    this.onRelease?.(slot);
  }

  /** Request ids still waiting. */
  get pendingRequestIds(): string[] {
    return [...this.#pending.keys()];
  }

  /** Fulfils a waiting request with a new slot of its profile (or `profile`); returns the slot. */
  fulfil(requestId: string, profile?: ResourceProfile): PhysicalSlot {
    const pending = this.#take(requestId, true)!;
    const slot: PhysicalSlot = {
      allocationId: AllocationID.generate(),
      resourceId: ResourceID.parse('taskexecutor-1'),
      resourceProfile: profile ?? pending.request.resourceProfile,
    };
    pending.resolve(slot);
    return slot;
  }

  fail(requestId: string, cause: Error): void {
    this.#take(requestId, true)!.reject(cause);
  }

  #take(requestId: string, required = false): Pending | undefined {
    const pending = this.#pending.get(requestId);
    if (pending === undefined && required)
      throw new Error(`no waiting request ${requestId}; waiting: ${this.pendingRequestIds.join(', ')}`);
    this.#pending.delete(requestId);
    return pending;
  }
}

/** Lets promise continuations run. */
export async function settle(rounds = 10): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** The promise's outcome, without an unhandled rejection. */
export async function outcome<T>(promise: Promise<T>): Promise<{ ok: true; value: T } | { ok: false; error: Error }> {
  return promise.then(
    (value) => ({ ok: true as const, value }),
    (error: Error) => ({ ok: false as const, error }),
  );
}

/** The error the promise rejects with; throws if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<Error> {
  const result = await outcome(promise);
  if (result.ok) throw new Error('expected the promise to reject, it resolved');
  return result.error;
}

/** Whether the promise has settled yet (after letting continuations run). */
export async function isSettled(promise: Promise<unknown>): Promise<boolean> {
  let settled = false;
  promise.then(
    () => (settled = true),
    () => (settled = true),
  );
  await settle();
  return settled;
}
