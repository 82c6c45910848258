/**
 * The submitter's side of shipping task code: a task module and everything it imports bundled
 * into one ES module (esbuild), named by the SHA-256 of its text — the shape a client uploads
 * (TaskCodeUpload of lib/rest/RestTarget.ts). Node's built-in modules stay imports; TypeScript is
 * compiled on the way.
 */
import { basename } from 'node:path';
import { fileURLToPath } from 'node:url';
import { JobGraphError } from '../core/errors.js';
import { sha256Hex } from './BlobStore.js';

export interface BundledTaskModule {
  /** The module's file name, for messages. */
  readonly name: string;
  /** The bundle's source text. */
  readonly code: string;
  /** Lowercase hex SHA-256 of the UTF-8 bytes of `code`. */
  readonly sha256: string;
}

/**
 * Bundles the module at `taskModule` (an absolute path or file: URL); JobGraphError('invalid-task-module') when it
 * cannot be.
 */
export async function bundleTaskModule(taskModule: string | URL): Promise<BundledTaskModule> {
  const path = taskModule instanceof URL || taskModule.startsWith('file:') ? fileURLToPath(taskModule) : taskModule;
  const { build } = await import('esbuild');
  try {
    const result = await build({
      entryPoints: [path],
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      logLevel: 'silent',
      sourcemap: false,
    });
    const code = result.outputFiles[0]!.text;
    return { name: basename(path), code, sha256: sha256Hex(code) };
  } catch (error) {
    throw new JobGraphError(
      'invalid-task-module',
      `task module ${path} could not be bundled for the ` +
        `cluster: ${error instanceof Error ? error.message.split('\n').slice(0, 3).join(' ') : String(error)}`,
      { taskModule: path },
    );
  }
}
