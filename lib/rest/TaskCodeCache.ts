/**
 * TaskCodeCache: uploaded task modules on disk, content-addressed (Flink's BlobServer, local). Each
 * module is stored once as `<dir>/<sha256>.mjs`, after its bytes were hashed and found to match the
 * SHA-256 the client sent; a stored file whose bytes no longer match (a truncated write, a tamper)
 * is written again. Files are written to a temporary name and renamed, so a concurrent reader (the
 * task module checker, a task thread) never sees half a module.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { IllegalArgumentError } from '../core/errors.js';
import type { StoredTaskCode, TaskCodeUpload } from './RestTarget.js';

const SHA256 = /^[0-9a-f]{64}$/;
/** 64 MiB: a bundle beyond this is almost certainly a mistake (data baked into code). */
export const MAX_TASK_CODE_BYTES = 64 * 1024 * 1024;

export interface TaskCodeCacheOptions {
  /** Default: `<os tmpdir>/slotwise-task-code`. */
  readonly dir?: string;
}

/** The lowercase hex SHA-256 of a text's UTF-8 bytes. */
export function sha256Hex(text: string | Uint8Array): string {
  return createHash('sha256').update(text).digest('hex');
}

export class TaskCodeCache {
  readonly dir: string;
  #made: Promise<unknown> | null = null;
  /** Writes under way, by hash: two uploads of the same code share one write. */
  readonly #writing = new Map<string, Promise<StoredTaskCode>>();

  constructor(options: TaskCodeCacheOptions = {}) {
    if (typeof options !== 'object' || options === null)
      throw new IllegalArgumentError(
        'invalid-type',
        `TaskCodeCache options must be an object { dir? }, got ${options === null ? 'null' : typeof options}`,
        { argument: 'options' },
      );
    const { dir = join(tmpdir(), 'slotwise-task-code') } = options;
    if (typeof dir !== 'string' || dir.length === 0)
      throw new IllegalArgumentError(
        'invalid-type',
        `TaskCodeCache options.dir must be a non-empty path, got ${JSON.stringify(dir)}`,
        { argument: 'options.dir' },
      );
    this.dir = dir;
  }

  /** Checks the upload and stores it; resolves with the `file:` URL to put in a vertex's `taskModule`. */
  async store(upload: TaskCodeUpload): Promise<StoredTaskCode> {
    const { code, sha256 } = checkUpload(upload);
    const bytes = Buffer.from(code, 'utf8');
    const actual = sha256Hex(bytes);
    if (actual !== sha256) {
      throw new IllegalArgumentError(
        'invalid-value',
        `task code '${upload.name}' hashes to sha256 ${actual}, not ` +
          `the ${sha256} sent with it: the upload was changed or cut short`,
        {
          argument: 'sha256',
          name: upload.name,
          expected: sha256,
          actual,
        },
      );
    }
    const pending = this.#writing.get(sha256);
    if (pending !== undefined) return pending;
    const write = this.#write(sha256, bytes).finally(() => this.#writing.delete(sha256));
    this.#writing.set(sha256, write);
    return write;
  }

  /** Where the module of this hash is (or would be) stored. */
  pathOf(sha256: string): string {
    return join(this.dir, `${sha256}.mjs`);
  }

  async #write(sha256: string, bytes: Buffer): Promise<StoredTaskCode> {
    const path = this.pathOf(sha256);
    const stored = { sha256, taskModule: pathToFileURL(path).href };
    if (await this.#holds(path, sha256)) return stored;
    this.#made ??= mkdir(this.dir, { recursive: true });
    await this.#made;
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    await writeFile(temporary, bytes);
    await rename(temporary, path);
    return stored;
  }

  /** Whether the file at `path` exists with exactly the bytes of this hash. */
  async #holds(path: string, sha256: string): Promise<boolean> {
    try {
      return sha256Hex(await readFile(path)) === sha256;
    } catch {
      return false;
    }
  }
}

function checkUpload(upload: TaskCodeUpload): TaskCodeUpload {
  if (typeof upload !== 'object' || upload === null)
    throw new IllegalArgumentError(
      'invalid-type',
      `task code must be an object { name, code, sha256 }, got ${upload === null ? 'null' : typeof upload}`,
      { argument: 'upload' },
    );
  const { name, code, sha256 } = upload;
  if (typeof name !== 'string' || name.length === 0 || name.length > 256)
    throw new IllegalArgumentError(
      'invalid-value',
      `task code name must be a string of 1 to 256 characters, got ${JSON.stringify(name)}`,
      { argument: 'name' },
    );
  if (typeof code !== 'string')
    throw new IllegalArgumentError(
      'invalid-type',
      `task code '${name}': code must be the module's source text, got ${typeof code}`,
      { argument: 'code', name },
    );
  if (Buffer.byteLength(code, 'utf8') > MAX_TASK_CODE_BYTES)
    throw new IllegalArgumentError('out-of-range', `task code '${name}' is larger than ${MAX_TASK_CODE_BYTES} bytes`, {
      argument: 'code',
      name,
    });
  if (typeof sha256 !== 'string' || !SHA256.test(sha256))
    throw new IllegalArgumentError(
      'invalid-value',
      `task code '${name}': sha256 must be 64 lowercase hex characters, got ${JSON.stringify(sha256)}`,
      { argument: 'sha256', name },
    );
  return upload;
}
