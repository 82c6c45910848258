/**
 * What a TaskManager in mode 'process' and its child (taskManagerProcessMain.ts) say over IPC: types and message keys
 * only.
 */
export const STATUS_MESSAGE = 'slotwiseTaskManagerStatus';
export const CLOSE_MESSAGE = 'slotwiseTaskManagerClose';
/**
 * The parent's first message: the child's TaskManagerOptions (without `logger`). Over IPC, not on the command line:
 * `natsAuth` may hold a password or a token, and any user on the host can read a process's arguments.
 */
export const START_MESSAGE = 'slotwiseTaskManagerStart';

/** The child's TaskExecutor now, sent whenever it changes. */
export interface TaskManagerStatus {
  readonly resourceId: string;
  readonly registered: boolean;
  readonly incarnations: number;
  /** Registrations accepted so far (each one told to the parent's onRegistered listeners). */
  readonly registrations: number;
}
