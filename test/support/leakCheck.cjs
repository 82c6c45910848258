/**
 * A root hook: after the last test, nothing the tests started may still be running. It compares the
 * process's active resources (sockets, timers, workers, child processes, message ports) with those at
 * the start and fails the run, naming what is left, if more remain after a grace period (timers, which
 * end by themselves, only warn). Without it a
 * leaked handle shows only as a run that never exits (mocha runs with `exit` so CI still ends).
 */
'use strict';

const GRACE_MS = 5000;

// SLOTWISE_LEAK_TRACE=1 records where each timer and handle was created, to name the leak's origin
// (off by default: tracking every async resource slows the suite).
const traced = new Map();
if (process.env.SLOTWISE_LEAK_TRACE === '1') {
  require('node:async_hooks')
    .createHook({
      init(id, type, _trigger, resource) {
        if (type === 'PROMISE' || type === 'TickObject' || type === 'Immediate') return;
        traced.set(id, { type, resource, stack: new Error().stack.split('\n').slice(3, 15).join('\n') });
      },
      destroy(id) {
        traced.delete(id);
      },
    })
    .enable();
}

/** Where the traced resources still alive were made; only timers when only timers are left. */
function origins(timersOnly) {
  const lines = [];
  for (const { type, resource, stack } of traced.values()) {
    if (timersOnly && type !== 'Timeout') continue;
    if (typeof resource.hasRef === 'function' && !resource.hasRef()) continue;
    // Mocha's and this hook's own: the first frame outside Node's internals is theirs (a test's timer has mocha's
    // frames below its own).
    const maker = stack.split('\n').find((frame) => !frame.includes('(node:') && !frame.includes(' node:'));
    if (maker === undefined || maker.includes('mocha/lib') || maker.includes('leakCheck.cjs')) continue;
    lines.push(`${type}\n${stack}`);
  }
  return lines.length > 0
    ? `\ncreated at:\n${lines.join('\n\n')}`
    : ' (SLOTWISE_LEAK_TRACE=1 names where they were created)';
}

function count() {
  const counts = new Map();
  for (const type of process.getActiveResourcesInfo()) counts.set(type, (counts.get(type) ?? 0) + 1);
  return counts;
}

function extra(baseline) {
  const left = [];
  for (const [type, n] of count()) {
    const more = n - (baseline.get(type) ?? 0);
    if (more > 0) left.push(`${more} × ${type}`);
  }
  return left;
}

let baseline = new Map();

exports.mochaHooks = {
  beforeAll() {
    baseline = count();
  },
  async afterAll() {
    // Mocha arms this hook's own timer (a Timeout) as soon as the hook returns its promise: cleared here, so that it
    // is not counted as the tests'. GRACE_MS bounds the hook instead.
    const hook = this.runnable();
    await Promise.resolve();
    hook.clearTimeout();
    const deadline = Date.now() + GRACE_MS;
    let left = extra(baseline);
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      left = extra(baseline);
    }
    if (left.length === 0) return;
    const running = left.join(', ');
    // A pending timer ends by itself (a deadline not yet due); a socket, port, worker or child does not.
    const timersOnly = left.every((entry) => entry.endsWith('× Timeout'));
    const where = origins(timersOnly);
    const message = `the tests left resources running ${GRACE_MS} ms after the last one: ${running}${where}`;
    if (timersOnly) console.warn(`warning: ${message}`);
    else throw new Error(message);
  },
};
