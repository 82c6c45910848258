/**
 * Every statechart of slotwise, by name. `npm run machines` writes each one's config as JSON for
 * the Stately visualizer; the runtime provides their effects with `machine.provide(...)`.
 */
import { taskSlotMachine } from './taskSlot.machine.js';
import { taskSlotTableMachine } from './taskSlotTable.machine.js';

export { taskSlotMachine, taskSlotTableMachine };

export const machines = {
  taskSlot: taskSlotMachine,
  taskSlotTable: taskSlotTableMachine,
} as const;
