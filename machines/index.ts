/**
 * Every statechart of slotwise, by name. `npm run machines` writes each one's config as JSON for
 * the Stately visualizer; the runtime provides their effects with `machine.provide(...)`.
 */
import { jobStatusMachine } from './jobStatus.machine.js';
import { leaderElectionMachine } from './leaderElection.machine.js';
import { resourceSlotMachine } from './resourceSlot.machine.js';
import { slotManagerMachine } from './slotManager.machine.js';
import { taskSlotMachine } from './taskSlot.machine.js';
import { taskSlotTableMachine } from './taskSlotTable.machine.js';
import { workerLifecycleMachine } from './workerLifecycle.machine.js';

export {
  jobStatusMachine,
  leaderElectionMachine,
  resourceSlotMachine,
  slotManagerMachine,
  taskSlotMachine,
  taskSlotTableMachine,
  workerLifecycleMachine,
};

export const machines = {
  taskSlot: taskSlotMachine,
  taskSlotTable: taskSlotTableMachine,
  resourceSlot: resourceSlotMachine,
  slotManager: slotManagerMachine,
  jobStatus: jobStatusMachine,
  leaderElection: leaderElectionMachine,
  workerLifecycle: workerLifecycleMachine,
} as const;
