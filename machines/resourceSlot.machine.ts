/**
 * Slot on the ResourceManager side: the SlotManager's view of one slot of one
 * TaskExecutor — Flink's TaskManagerSlot with its SlotState FREE / PENDING / ALLOCATED.
 *
 *   free ──ASSIGN_PENDING──▶ pending ──COMPLETE_ALLOCATION──▶ allocated
 *   free ◀─FAIL_ALLOCATION── pending
 *   free ◀───────FREE─────── pending
 *   free ────────────────────────ADOPT───────────────────────▶ allocated
 *   free ◀────────────────────────FREE──────────────────────── allocated
 *
 * - ASSIGN_PENDING: the SlotManager picked this free slot for a request and asks the TaskExecutor
 *   (Flink's `assignPendingAllocation`, `checkState(state == FREE)`).
 * - COMPLETE_ALLOCATION: the TaskExecutor acknowledged, or its slot report shows the allocation
 *   (Flink's `markAllocated`, `checkState(state == PENDING)`).
 * - ADOPT: a slot report shows an allocation the SlotManager did not know of (a free slot taken by
 *   a job, e.g. after a ResourceManager failover).
 * - FAIL_ALLOCATION: the TaskExecutor refused, the request timed out or was superseded.
 * - FREE: the job released the slot, the TaskExecutor reported it free, or the executor was lost.
 *
 * Every other (state, event) pair is illegal: the machine ignores it, and the SlotManager's
 * compiled table (`lib/resourcemanager/slotmanager/ResourceSlotTransitions.ts`) throws.
 *
 * No final state: a dynamic slot's record is simply dropped when it returns to free. No context,
 * no guards, no actions, one target per transition — the SlotManager applies this chart to 100,000
 * plain records through a table compiled from this very definition, and the compiler refuses
 * anything it could not reproduce exactly.
 */
import { setup } from 'xstate';

export type ResourceSlotState = 'free' | 'pending' | 'allocated';

export type ResourceSlotEvent =
  | { type: 'ASSIGN_PENDING' }
  | { type: 'COMPLETE_ALLOCATION' }
  | { type: 'ADOPT' }
  | { type: 'FAIL_ALLOCATION' }
  | { type: 'FREE' };

export type ResourceSlotEventType = ResourceSlotEvent['type'];

/** Every state, in declaration order. */
export const RESOURCE_SLOT_STATES: readonly ResourceSlotState[] = Object.freeze([
  'free',
  'pending',
  'allocated',
] as const);

/** Every event type, in declaration order. */
export const RESOURCE_SLOT_EVENTS: readonly ResourceSlotEventType[] = Object.freeze([
  'ASSIGN_PENDING',
  'COMPLETE_ALLOCATION',
  'ADOPT',
  'FAIL_ALLOCATION',
  'FREE',
] as const);

export const resourceSlotMachine = setup({
  types: {
    events: {} as ResourceSlotEvent,
  },
}).createMachine({
  id: 'resourceSlot',
  initial: 'free',
  states: {
    free: {
      description: 'Registered and unallocated: the SlotManager may pick it for a request.',
      on: {
        ASSIGN_PENDING: { target: 'pending' },
        ADOPT: { target: 'allocated' },
      },
    },
    pending: {
      description: 'Picked for a request; waiting for the TaskExecutor to acknowledge.',
      on: {
        COMPLETE_ALLOCATION: { target: 'allocated' },
        FAIL_ALLOCATION: { target: 'free' },
        FREE: { target: 'free' },
      },
    },
    allocated: {
      description: 'Held by a job under an AllocationID.',
      on: {
        FREE: { target: 'free' },
      },
    },
  },
});
