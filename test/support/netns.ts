/**
 * Network namespaces of the test's own, as hosts on a network it can cut: the root namespace's
 * loopback carries the server address (10.<n>.0.1/32, removed afterwards), and each "host" is a namespace with
 * a veth pair to the root namespace (10.<n>.<i>.1 on the root side, 10.<n>.<i>.2 inside, its
 * default route through the root side). `linkDown(i)` / `linkUp(i)` take the root side of host i's
 * pair down and up: a partition of that host alone. `remove()` deletes everything it made. Needs
 * root and iproute2; `netnsOrSkip` skips visibly otherwise.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface TestNetwork {
  /** The address a server in the root namespace listens on, reachable from every host. */
  readonly serverAddress: string;
  /** The namespace name of host `i` (1-based). */
  namespace(i: number): string;
  linkDown(i: number): void;
  linkUp(i: number): void;
  remove(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/** Why namespaces cannot be made here, or undefined when they can. */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'not root';
  if (spawnSync('ip', ['-V'], { stdio: 'ignore' }).status !== 0) return 'iproute2 (ip) is not installed';
  return undefined;
}

export function netnsOrSkip(context: Mocha.Context, suite: string): void {
  const why = netnsUnavailable();
  if (why === undefined) return;
  console.log(`      [skipped] ${suite}: network namespaces need root and iproute2 (${why})`);
  context.skip();
}

/** Makes `hosts` namespaces joined to the root namespace. */
export function createTestNetwork(hosts: number): TestNetwork {
  const tag = randomBytes(2).toString('hex');
  const octet = 200 + (parseInt(tag, 16) % 50);
  const hostSide = (i: number) => `slwh${tag}${i}`;
  const nsSide = (i: number) => `slwn${tag}${i}`;
  const namespace = (i: number) => `slotwise-${tag}-${i}`;
  const made: Array<() => void> = [];
  const remove = () => {
    for (const undo of made.splice(0).reverse()) {
      try {
        undo();
      } catch {
        // Already gone (a namespace takes its end of the pair with it).
      }
    }
  };
  try {
    ip('addr', 'add', `10.${octet}.0.1/32`, 'dev', 'lo');
    made.push(() => ip('addr', 'del', `10.${octet}.0.1/32`, 'dev', 'lo'));
    for (let i = 1; i <= hosts; i++) {
      ip('netns', 'add', namespace(i));
      made.push(() => ip('netns', 'del', namespace(i)));
      ip('link', 'add', hostSide(i), 'type', 'veth', 'peer', 'name', nsSide(i));
      made.push(() => ip('link', 'del', hostSide(i)));
      ip('link', 'set', nsSide(i), 'netns', namespace(i));
      ip('addr', 'add', `10.${octet}.${i}.1/24`, 'dev', hostSide(i));
      ip('link', 'set', hostSide(i), 'up');
      ip('-n', namespace(i), 'addr', 'add', `10.${octet}.${i}.2/24`, 'dev', nsSide(i));
      ip('-n', namespace(i), 'link', 'set', nsSide(i), 'up');
      ip('-n', namespace(i), 'link', 'set', 'lo', 'up');
      ip('-n', namespace(i), 'route', 'add', 'default', 'via', `10.${octet}.${i}.1`);
    }
  } catch (error) {
    remove();
    throw error;
  }
  return {
    serverAddress: `10.${octet}.0.1`,
    namespace,
    linkDown: (i) => void ip('link', 'set', hostSide(i), 'down'),
    linkUp: (i) => void ip('link', 'set', hostSide(i), 'up'),
    remove,
  };
}
