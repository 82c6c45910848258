/**
 * A session cluster's task code at its JobManager (Flink's BlobServer): uploads checked against
 * their SHA-256 and stored content-addressed in the cluster's object store (BlobStore) and in the
 * JobManager's own cache on disk (for its task module checker); a task module given as a local path
 * bundled and stored first; and what a TaskExecutor is told to run — code in the cache by its hash.
 */
import { dirname } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IllegalArgumentError } from '../core/errors.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import { checkSha256, sha256Hex, type BlobStore } from './BlobStore.js';
import type { StoredTaskCode, TaskCodeUpload } from '../rest/RestTarget.js';
import { bundleTaskModule } from './bundleTaskModule.js';
import { cachedHash, localPath, taskCodeRef, type TaskCodeCache } from './TaskCodeCache.js';

export type { StoredTaskCode, TaskCodeUpload } from '../rest/RestTarget.js';

export class ClusterTaskCode {
  readonly #cache: TaskCodeCache;
  readonly #blobs: BlobStore;

  constructor(cache: TaskCodeCache, blobs: BlobStore) {
    this.#cache = cache;
    this.#blobs = blobs;
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
        const bundle = await bundleTaskModule(path);
        taskModule = (await this.store(bundle)).taskModule;
        stored.set(path, taskModule);
      }
      mapped.push({ ...vertex, taskModule });
    }
    return { ...spec, vertices: mapped };
  }
}
