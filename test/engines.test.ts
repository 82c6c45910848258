/**
 * The Node versions the package says it runs on, and what it installs: package.json's `engines`, the
 * README's Install section and every package package-lock.json pins agree, so `npm ci` on the oldest
 * stated Node warns of no EBADENGINE; and CI's `npm ci` refuses one (`--engine-strict`) rather than
 * letting a warning scroll by.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');
/** npm's own version ranges (a development dependency of ours). */
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

interface LockEntry {
  readonly version?: string;
  readonly engines?: { readonly node?: string };
  readonly optional?: boolean;
  readonly os?: readonly string[];
}

const pkg = JSON.parse(read('package.json')) as { engines: { node: string } };
const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockEntry> };
/** The oldest Node the package says it runs on. */
const oldest = semver.minVersion(pkg.engines.node)!.version;

describe('the Node versions the package runs on', () => {
  it('package.json states an oldest Node, and the README states the same one', () => {
    expect(pkg.engines.node).to.match(/^>=\s*\d+\.\d+(\.\d+)?$/);
    const [major, minor] = oldest.split('.');
    expect(read('README.md')).to.contain(`Node ≥ ${major}.${minor}.`);
    expect(lock.packages['']!.engines).to.deep.equal(pkg.engines, 'package-lock.json is in step with package.json');
  });

  it(`every package package-lock.json installs runs on the oldest Node package.json states`, () => {
    const refusing = Object.entries(lock.packages)
      .filter(([path]) => path !== '')
      .filter(([, entry]) => entry.engines?.node !== undefined && !semver.satisfies(oldest, entry.engines.node))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, '')}@${entry.version}: node ${entry.engines!.node}`);
    expect(refusing, `packages that want more than Node ${oldest}`).to.deep.equal([]);
  });

  it("CI's npm ci fails on a package whose engines refuse the running Node (--engine-strict)", () => {
    const installs = read('.ci/run')
      .split('\n')
      .filter((line) => /^\s*npm ci\b/.test(line));
    expect(installs).to.have.length.greaterThan(0);
    for (const line of installs) expect(line).to.contain('--engine-strict');
  });
});
