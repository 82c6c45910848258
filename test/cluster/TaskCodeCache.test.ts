import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sha256Hex } from '../../lib/cluster/BlobStore.js';
import { cachedHash, taskCodeHash, taskCodeRef, TaskCodeCache } from '../../lib/cluster/TaskCodeCache.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { rejection } from '../rpc/support/transports.js';

describe('TaskCodeCache', () => {
  let dir: string;
  const code = Buffer.from('export default () => 42;\n');
  const hash = sha256Hex(code);

  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'slotwise-code-test-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('fetches code it has not got once, verifies it, and serves the cached file after', async () => {
    const cache = new TaskCodeCache(dir);
    let fetches = 0;
    const fetch = async () => (fetches++, code);
    const [a, b] = await Promise.all([cache.resolve(hash, fetch), cache.resolve(hash, fetch)]);
    expect(a)
      .to.equal(b)
      .and.to.equal(join(dir, `sha256-${hash}.mjs`));
    expect(readFileSync(a).equals(code)).to.equal(true);
    expect(fetches).to.equal(1);
    // Another process on the same directory finds it on disk.
    expect(await new TaskCodeCache(dir).resolve(hash, () => Promise.reject(new Error('no fetch expected')))).to.equal(
      a,
    );
  });

  it('refuses fetched bytes that do not hash to their name, and fetches again next time', async () => {
    const cache = new TaskCodeCache(dir);
    const error = await rejection(cache.resolve(hash, async () => Buffer.from('export default () => "evil";\n')));
    expect(error.message).to.contain(`does not hash to sha256-${hash}`);
    expect(await cache.resolve(hash, async () => code)).to.equal(join(dir, `sha256-${hash}.mjs`));
  });

  it('replaces a cached file whose bytes were altered on disk', async () => {
    writeFileSync(join(dir, `sha256-${hash}.mjs`), 'tampered');
    const path = await new TaskCodeCache(dir).resolve(hash, async () => code);
    expect(readFileSync(path).equals(code)).to.equal(true);
  });

  it('writes code it holds once: the same code stored again leaves the file as it is', async () => {
    const cache = new TaskCodeCache(dir);
    const path = cache.write(hash, code);
    const first = statSync(path, { bigint: true });
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(cache.write(hash, code)).to.equal(path);
    const second = statSync(path, { bigint: true });
    // The JobManager's task module checker knows a module by its inode and modification time: a file written anew
    // would be checked again, on a thread booted for it, at every submit of the same code.
    expect([second.ino, second.mtimeNs]).to.deep.equal([first.ino, first.mtimeNs]);
    expect(await cache.resolve(hash, () => Promise.reject(new Error('no fetch expected')))).to.equal(path);
  });

  it('writes code it holds again once its file was removed or replaced', () => {
    const cache = new TaskCodeCache(dir);
    const path = cache.write(hash, code);
    rmSync(path);
    expect(cache.write(hash, code)).to.equal(path);
    expect(readFileSync(path).equals(code)).to.equal(true);
    writeFileSync(path, 'tampered');
    cache.write(hash, code);
    expect(readFileSync(path).equals(code)).to.equal(true);
  });

  it('names code by hash on the wire and tells those names from paths', () => {
    expect(taskCodeRef(hash)).to.equal(`slotwise-code:sha256-${hash}`);
    expect(taskCodeHash(taskCodeRef(hash))).to.equal(hash);
    expect(taskCodeHash('/srv/tasks/count.mjs')).to.equal(undefined);
    expect(cachedHash(join(dir, `sha256-${hash}.mjs`))).to.equal(hash);
    expect(() => taskCodeRef('abc')).to.throw(IllegalArgumentError, /64 lowercase hex digits/);
  });
});
