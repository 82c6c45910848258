/**
 * A session cluster's task code at its JobManager (Flink's BlobServer): uploads checked against
 * their SHA-256 and stored content-addressed in the cluster's object store (BlobStore) and in the
 * JobManager's own cache on disk (for its task module checker); a task module given as a local path
 * bundled and stored first; and what a TaskExecutor is told to run — code in the cache by its hash.
 */
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IllegalArgumentError } from '../core/errors.js';
import { fileStamp } from '../fileStamp.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import { checkSha256, sha256Hex, type BlobStore } from './BlobStore.js';
import type { StoredTaskCode, TaskCodeUpload } from '../rest/RestTarget.js';
import { bundleTaskModule, type BundledTaskModule } from './bundleTaskModule.js';
import { cachedHash, localPath, taskCodeRef, type TaskCodeCache } from './TaskCodeCache.js';

export type { StoredTaskCode, TaskCodeUpload } from '../rest/RestTarget.js';

/** How many task modules given by path the JobManager remembers the bundle of (the oldest go first). */
const BUNDLES_KEPT = 256;

/** A module bundled before: what it was stored as, and each of the files it was made of as it was then. */
interface KnownBundle {
  readonly taskModule: string;
  readonly files: ReadonlyArray<readonly [path: string, stamp: string]>;
}

export class ClusterTaskCode {
  readonly #cache: TaskCodeCache;
  readonly #blobs: BlobStore;
  readonly #bundle: (path: string) => Promise<BundledTaskModule>;
  /** By the module's path, in the order they were bundled. */
  readonly #bundles = new Map<string, KnownBundle>();

  /** `bundle`: how a module given by path is bundled (bundleTaskModule; a test counts the calls). */
  constructor(
    cache: TaskCodeCache,
    blobs: BlobStore,
    bundle: (path: string) => Promise<BundledTaskModule> = bundleTaskModule,
  ) {
    this.#cache = cache;
    this.#blobs = blobs;
    this.#bundle = bundle;
  }

  /** Validates and stores one uploaded task module (content-addressed; the same code again is a no-op). */
  async store(upload: TaskCodeUpload): Promise<StoredTaskCode> {
    if (typeof upload !== 'object' || upload === null)
      throw new IllegalArgumentError('invalid-type', 'storeTaskCode takes { name, code, sha256 }', {
        argument: 'upload',
      });
    if (typeof upload.name !== 'string' || upload.name === '')
      throw new IllegalArgumentError(
        'invalid-value',
        "upload.name must be a non-empty string (the module's file name)",
        { argument: 'upload.name' },
      );
    if (typeof upload.code !== 'string')
      throw new IllegalArgumentError('invalid-type', `upload.code of ${upload.name} must be the module's source text`, {
        argument: 'upload.code',
      });
    const sha256 = checkSha256(upload.sha256, 'upload.sha256');
    const bytes = Buffer.from(upload.code, 'utf8');
    const actual = sha256Hex(bytes);
    if (actual !== sha256) {
      throw new IllegalArgumentError(
        'invalid-value',
        `upload.sha256 of ${upload.name} is ${sha256}, but its code hashes to ${actual}: refused`,
        { argument: 'upload.sha256', value: sha256, actual },
      );
    }
    await this.#blobs.putCode(bytes);
    const path = this.#cache.write(sha256, bytes);
    return { sha256, taskModule: pathToFileURL(path).href };
  }

  /** What a TaskExecutor is told to run: code in our cache by its hash, any other path as it is. */
  wireName(taskModule: string): string {
    const hash = cachedHash(taskModule);
    return hash !== undefined && dirname(taskModule) === this.#cache.dir ? taskCodeRef(hash) : taskModule;
  }

  async withStoredCode(spec: JobGraphSpec): Promise<JobGraphSpec> {
    const vertices = (spec as { vertices?: unknown } | null)?.vertices;
    if (!Array.isArray(vertices)) return spec; // JobGraph.create says what is wrong
    const stored = new Map<string, string>();
    const mapped = [];
    for (const vertex of vertices) {
      const path = localPath((vertex as { taskModule?: unknown } | null)?.taskModule);
      if (path === undefined || (cachedHash(path) !== undefined && dirname(path) === this.#cache.dir)) {
        mapped.push(vertex);
        continue;
      }
      let taskModule = stored.get(path);
      if (taskModule === undefined) {
        taskModule = await this.#bundled(path);
        stored.set(path, taskModule);
      }
      mapped.push({ ...vertex, taskModule });
    }
    return { ...spec, vertices: mapped };
  }

  /**
   * The stored bundle of the module at `path`: the one made before while none of the files it was made of changed
   * (fileStamp.ts), else a new one. A job submitted again and again costs a stat per file, not a bundling (esbuild,
   * ~10 ms). A bundle is remembered only when none of its files was modified within
   * RECENT_EDIT_NS before the bundling began: one edited while esbuild read it (or on a file system with coarse
   * times) is bundled again at the next submit.
   */
  async #bundled(path: string): Promise<string> {
    const known = this.#bundles.get(path);
    if (known?.files.every(([file, stamp]) => fileStamp(file)?.stamp === stamp)) return known.taskModule;
    const began = BigInt(Date.now()) * 1_000_000n;
    const bundle = await this.#bundle(path);
    const { taskModule } = await this.store(bundle);
    this.#bundles.delete(path);
    const files: Array<readonly [string, string]> = [];
    for (const file of bundle.inputs) {
      const stamp = fileStamp(file);
      if (stamp === null || stamp.mtimeNs > began - RECENT_EDIT_NS) return taskModule;
      files.push([file, stamp.stamp]);
    }
    this.#bundles.set(path, { taskModule, files });
    if (this.#bundles.size > BUNDLES_KEPT) this.#bundles.delete(this.#bundles.keys().next().value!);
    return taskModule;
  }
}

/** How recent an edit keeps a bundle from being remembered (file systems that keep whole seconds included). */
const RECENT_EDIT_NS = 2_000_000_000n;
