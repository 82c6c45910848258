import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { type BlobStore, sha256Hex } from '../../lib/cluster/BlobStore.js';
import { bundleTaskModule } from '../../lib/cluster/bundleTaskModule.js';
import { ClusterTaskCode } from '../../lib/cluster/ClusterTaskCode.js';
import { TaskCodeCache } from '../../lib/cluster/TaskCodeCache.js';
import type { JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';

describe('ClusterTaskCode: task modules a JobManager is given by path', () => {
  let dir: string;
  let task: string;
  let helper: string;
  let bundled: string[];
  let code: ClusterTaskCode;
  /** The object store: code put there by hash (what a TaskManager would fetch). */
  const blobs = { putCode: async (bytes: Uint8Array) => sha256Hex(bytes) } as unknown as BlobStore;
  const spec = (): JobGraphSpec => ({
    name: 'answer',
    vertices: [{ id: 'v', taskModule: pathToFileURL(task).href, parallelism: 1 }],
  });
  const storedModule = (stored: JobGraphSpec) => String(stored.vertices[0]!.taskModule);
  /** Sets a file's times `secondsAgo` in the past. */
  const age = (path: string, secondsAgo: number) => {
    const then = new Date(Date.now() - secondsAgo * 1000);
    utimesSync(path, then, then);
  };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'slotwise-cluster-code-'));
    task = join(dir, 'task.mjs');
    helper = join(dir, 'helper.mjs');
    writeFileSync(task, "import { answer } from './helper.mjs';\nexport default () => answer;\n");
    writeFileSync(helper, 'export const answer = 42;\n');
    bundled = [];
    code = new ClusterTaskCode(new TaskCodeCache(join(dir, 'cache')), blobs, (path) => {
      bundled.push(path);
      return bundleTaskModule(path);
    });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('bundles a module once while none of its files changes, and again once an imported one does', async () => {
    age(task, 60);
    age(helper, 60);
    const first = storedModule(await code.withStoredCode(spec()));
    const again = storedModule(await code.withStoredCode(spec()));
    expect(bundled).to.deep.equal([task]);
    expect(again).to.equal(first);
    expect(readFileSync(fileURLToPath(first), 'utf8')).to.contain('42');

    writeFileSync(helper, 'export const answer = 43;\n');
    age(helper, 30);
    const changed = storedModule(await code.withStoredCode(spec()));
    expect(bundled).to.deep.equal([task, task]);
    expect(changed).to.not.equal(first);
    expect(readFileSync(fileURLToPath(changed), 'utf8')).to.contain('43');
  });

  it('does not remember the bundle of a file edited just before: the next submit bundles it again', async () => {
    age(helper, 60); // the task module itself was written a moment ago
    await code.withStoredCode(spec());
    await code.withStoredCode(spec());
    expect(bundled).to.deep.equal([task, task]);
    age(task, 60);
    await code.withStoredCode(spec());
    await code.withStoredCode(spec());
    expect(bundled, 'remembered once nothing is recent').to.deep.equal([task, task, task]);
  });
});
