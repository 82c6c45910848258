/**
 * Task code on disk, by its SHA-256 (Flink's BlobCache): `<dir>/sha256-<hex>.mjs`. A TaskManager
 * fetches code it has not got from the cluster's BlobStore, verifies its hash, writes it (to a
 * temporary name first, so a half-written file is never run) and runs it from there; later runs
 * and later tasks of the same code load the cached file. The JobManager keeps the code it was
 * given here too, for its task module checker.
 *
 * On the wire to a TaskExecutor a module in the BlobStore is named `slotwise-code:sha256-<hex>`.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileStamp } from '../fileStamp.js';
import { checkSha256, sha256Hex } from './BlobStore.js';

export const TASK_CODE_SCHEME = 'slotwise-code:sha256-';

/** The wire name of the code with hash `sha256`. */
export const taskCodeRef = (sha256: string): string => `${TASK_CODE_SCHEME}${checkSha256(sha256, 'sha256')}`;

/** The hash a wire name refers to, or undefined when `taskModule` is a plain path or file: URL. */
export function taskCodeHash(taskModule: string): string | undefined {
  return taskModule.startsWith(TASK_CODE_SCHEME)
    ? checkSha256(taskModule.slice(TASK_CODE_SCHEME.length), 'the hash of a task code reference')
    : undefined;
}

/** The hash of a cached file's path (`…/sha256-<hex>.mjs`), or undefined for any other path. */
export function cachedHash(path: string): string | undefined {
  return /^sha256-([0-9a-f]{64})\.mjs$/.exec(basename(path))?.[1];
}

export class TaskCodeCache {
  readonly dir: string;
  /** Per hash, the file once verified (one fetch and one check per process, however many tasks ask). */
  readonly #ready = new Map<string, Promise<string>>();
  /**
   * Per hash whose file this process wrote or verified, that file's stamp then (fileStamp.ts): one that still has it
   * needs no writing.
   */
  readonly #onDisk = new Map<string, string>();

  constructor(dir: string) {
    this.dir = dir;
    mkdirSync(dir, { recursive: true });
  }

  pathFor(sha256: string): string {
    return join(this.dir, `sha256-${checkSha256(sha256, 'sha256')}.mjs`);
  }

  /**
   * Writes code we hold (its hash checked) and returns its path. Code this process wrote or verified before is not
   * written again while its file is as it left it (one stat): the same hash is the same text, and a file written anew
   * is another file to whoever keys on it (the JobManager's task module checker checks it again, booting a thread).
   * A file removed or replaced meanwhile is written again.
   */
  write(sha256: string, bytes: Uint8Array): string {
    const path = this.pathFor(sha256);
    if (sha256Hex(bytes) !== sha256) throw new Error(`task code does not hash to sha256-${sha256}`);
    const known = this.#onDisk.get(sha256);
    if (known !== undefined && known === fileStamp(path)?.stamp) return path;
    const temporary = `${path}.${process.pid}.${Math.random().toString(16).slice(2)}.tmp`;
    writeFileSync(temporary, bytes);
    renameSync(temporary, path);
    this.#remember(sha256, path);
    this.#ready.set(sha256, Promise.resolve(path));
    return path;
  }

  #remember(sha256: string, path: string): void {
    const file = fileStamp(path);
    if (file === null) this.#onDisk.delete(sha256);
    else this.#onDisk.set(sha256, file.stamp);
  }

  /** The path of the code `sha256`: cached on disk (verified), or fetched with `fetch` and cached. */
  resolve(sha256: string, fetch: (sha256: string) => Promise<Uint8Array>): Promise<string> {
    let ready = this.#ready.get(sha256);
    if (ready === undefined) {
      ready = this.#load(sha256, fetch);
      this.#ready.set(sha256, ready);
      // A failed fetch is tried again by the next task that needs it.
      ready.catch(() => this.#ready.delete(sha256));
    }
    return ready;
  }

  async #load(sha256: string, fetch: (sha256: string) => Promise<Uint8Array>): Promise<string> {
    const path = this.pathFor(sha256);
    const onDisk = await readFile(path).catch(() => undefined);
    if (onDisk !== undefined && sha256Hex(onDisk) === sha256) {
      this.#remember(sha256, path);
      return path;
    }
    return this.write(sha256, await fetch(sha256));
  }
}

/** The absolute path a task module names, or undefined when it names none (JobGraph refuses it then). */
export function localPath(taskModule: unknown): string | undefined {
  try {
    if (taskModule instanceof URL || (typeof taskModule === 'string' && taskModule.startsWith('file:')))
      return fileURLToPath(taskModule);
  } catch {
    return undefined;
  }
  return typeof taskModule === 'string' && isAbsolute(taskModule) ? taskModule : undefined;
}
