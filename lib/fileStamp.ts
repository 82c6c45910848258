/**
 * What tells a file from the same file changed or replaced, without reading it: its device, inode, size and
 * modification time (ns), as one comparable string. The JobManager's task module checker, its task code cache and its
 * bundles of task modules given by path each remember files this way. A synchronous stat: the callers make one per
 * file on the path of every submit, and fs/promises' stat is two cross-thread wake-ups (to libuv's pool and back).
 */
import { statSync } from 'node:fs';

export interface FileStamp {
  /** `dev:ino:size:mtimeNs`: equal for the same file unchanged. */
  readonly stamp: string;
  readonly mtimeNs: bigint;
}

/** The stamp of the regular file at `path`, or null when there is none (missing, unreadable, not a file). */
export function fileStamp(path: string): FileStamp | null {
  try {
    const file = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (file === undefined || !file.isFile()) return null;
    return { stamp: `${file.dev}:${file.ino}:${file.size}:${file.mtimeNs}`, mtimeNs: file.mtimeNs };
  } catch {
    return null;
  }
}
