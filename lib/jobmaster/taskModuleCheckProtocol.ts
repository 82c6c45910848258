/**
 * What the task module checker (TaskModuleChecker.ts, main side) and its worker entry
 * (taskModuleCheckerMain.ts, a thread or a child process) say to each other; they share nothing
 * else. The worker reports facts — which module it starts to load, what a loaded module exports,
 * an error nobody caught — and the main side turns them into verdicts, with its own timers.
 */

/**
 * What a checker worker is told when it starts: its workerData, or in a child process the first IPC message under
 * {@link CHECK_REQUEST_MESSAGE}.
 */
export interface TaskModuleCheckRequest {
  /** Absolute paths of the modules to load, one after another, in this order. */
  readonly modules: readonly string[];
}

export const CHECK_REQUEST_MESSAGE = 'slotwiseTaskModuleCheck';

/** What a checker worker reports. */
export type TaskModuleCheckReport =
  /** It starts to load `modules[index]` (the main side's timer for that module starts now). */
  | { readonly type: 'loading'; readonly index: number }
  /** `modules[index]` has loaded: the type of its default export and the names of its other exports. */
  | {
      readonly type: 'loaded';
      readonly index: number;
      readonly defaultExport: string;
      readonly exports: readonly string[];
    }
  /** Loading `modules[index]` failed: its top-level code threw (or it does not parse). */
  | { readonly type: 'failed'; readonly index: number; readonly message: string }
  /** An error nobody caught (a module's stray timer or rejected promise), while or after it loaded. */
  | { readonly type: 'uncaught'; readonly message: string };
