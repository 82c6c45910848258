import { expect } from 'chai';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sha256Hex, TaskCodeCache } from '../../lib/rest/TaskCodeCache.js';

describe('TaskCodeCache', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'slotwise-code-cache-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const code = 'export default async () => "é";\n';

  it('stores code as <sha256>.mjs and answers its file: URL', async () => {
    const stored = await new TaskCodeCache({ dir }).store({ name: 'a.mjs', code, sha256: sha256Hex(code) });
    expect(stored.sha256).to.equal(sha256Hex(Buffer.from(code, 'utf8')));
    expect(fileURLToPath(stored.taskModule)).to.equal(join(dir, `${stored.sha256}.mjs`));
    expect(readFileSync(fileURLToPath(stored.taskModule), 'utf8')).to.equal(code);
  });

  it('stores the same code once, whatever name it comes under, also when uploaded twice at once', async () => {
    const cache = new TaskCodeCache({ dir });
    const sha256 = sha256Hex(code);
    const [a, b] = await Promise.all([
      cache.store({ name: 'a.mjs', code, sha256 }),
      cache.store({ name: 'b.mjs', code, sha256 }),
    ]);
    expect(a).to.deep.equal(b);
    expect(readdirSync(dir)).to.deep.equal([`${sha256}.mjs`]);
  });

  it('refuses code that does not hash to the sha256 sent with it, and writes nothing', async () => {
    const cache = new TaskCodeCache({ dir });
    const error = (await cache
      .store({ name: 'a.mjs', code, sha256: sha256Hex(`${code} `) })
      .catch((e: unknown) => e)) as { _tag: string; reason: string; details: Record<string, unknown> };
    expect(error).to.include({ _tag: 'IllegalArgumentError', reason: 'invalid-value' });
    expect(error.details).to.include({ argument: 'sha256', actual: sha256Hex(code) });
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('rewrites a stored file whose bytes no longer match its hash', async () => {
    const cache = new TaskCodeCache({ dir });
    const sha256 = sha256Hex(code);
    writeFileSync(cache.pathOf(sha256), 'export default 1; // tampered');
    await cache.store({ name: 'a.mjs', code, sha256 });
    expect(readFileSync(cache.pathOf(sha256), 'utf8')).to.equal(code);
  });

  it('refuses malformed uploads, naming the field', async () => {
    const cache = new TaskCodeCache({ dir });
    const refusal = (upload: unknown) =>
      cache.store(upload as never).then(
        () => null,
        (e: { details: { argument: string } }) => e.details.argument,
      );
    expect(await refusal(null)).to.equal('upload');
    expect(await refusal({ name: '', code, sha256: sha256Hex(code) })).to.equal('name');
    expect(await refusal({ name: 'a', code: 3, sha256: sha256Hex(code) })).to.equal('code');
    expect(await refusal({ name: 'a', code, sha256: sha256Hex(code).toUpperCase() })).to.equal('sha256');
    expect(() => new TaskCodeCache({ dir: '' })).to.throw(/options.dir must be a non-empty path/);
  });
});
