/**
 * Every statechart of slotwise, by name. `npm run machines` writes each one's config as JSON for
 * the Stately visualizer; the runtime provides their effects with `machine.provide(...)`.
 */
import { resourceSlotMachine } from './resourceSlot.machine.js';
import { slotManagerMachine } from './slotManager.machine.js';
import { taskSlotMachine } from './taskSlot.machine.js';
import { taskSlotTableMachine } from './taskSlotTable.machine.js';

export { resourceSlotMachine, slotManagerMachine, taskSlotMachine, taskSlotTableMachine };

export const machines = {
  taskSlot: taskSlotMachine,
  taskSlotTable: taskSlotTableMachine,
  resourceSlot: resourceSlotMachine,
  slotManager: slotManagerMachine,
} as const;
