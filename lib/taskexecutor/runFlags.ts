/**
 * The values of a run's started flag, a slot in a SharedArrayBuffer that the pool and the pool's
 * thread both change with Atomics: queued (set by the pool), started (claimed by the thread),
 * canceled before it started (claimed by the pool). Its own module: SlotTaskPool reads them
 * without loading the thread's code (taskWorker.ts).
 */
export const RUN_QUEUED = 0;
export const RUN_STARTED = 1;
export const RUN_CANCELED = 2;
