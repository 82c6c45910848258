/**
 * MiniCluster.start at the door, option by option: every refusal is a ConfigurationError naming the
 * option the caller set and what is allowed, and a refused start leaves nothing running.
 */
import { expect } from 'chai';
import { createServer } from 'node:net';
import { ConfigurationError } from '../lib/core/errors.js';
import { startRefusal as refusal } from './support/startRefusal.js';

function expectRefused(error: unknown, option: string, message: RegExp): void {
  expect(error, 'the start was not refused').to.be.instanceOf(ConfigurationError);
  expect((error as ConfigurationError).details).to.include({ option });
  expect((error as Error).message).to.match(message);
}

/** A free port on localhost. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('MiniCluster.start options', () => {
  describe('log and logger', () => {
    it("refuses a log that is not a function (log: 'nope')", async () => {
      expectRefused(
        await refusal({ taskExecutors: 0, log: 'nope' as never }),
        'log',
        /log must be a function \(message: string\) => void, got "nope"/,
      );
    });

    it('refuses a logger without the four methods, naming the missing ones', async () => {
      expectRefused(
        await refusal({ taskExecutors: 0, logger: { info() {}, error() {} } as never }),
        'logger',
        /missing: debug, warn/,
      );
      expectRefused(
        await refusal({ taskExecutors: 0, logger: 'pino' as never }),
        'logger',
        /logger must be an object with debug, info, warn, error methods/,
      );
    });

    it('refuses both logger and log', async () => {
      expectRefused(await refusal({ taskExecutors: 0, logger: console, log: () => {} }), 'logger', /pass one of them/);
    });
  });

  describe('startTimeoutMs', () => {
    for (const value of [NaN, 'x', -1, 0, Infinity]) {
      it(`refuses ${typeof value === 'string' ? `'${value}'` : String(value)}`, async () => {
        expectRefused(
          await refusal({ taskExecutors: 0, startTimeoutMs: value as never }),
          'startTimeoutMs',
          /startTimeoutMs must be a finite number of ms > 0, got /,
        );
      });
    }
  });

  describe('configuration', () => {
    for (const [what, value] of [
      ['a number', 42],
      ['a string', 'fast'],
      ['null', null],
      ['an array', [1]],
    ] as const) {
      it(`refuses ${what}`, async () => {
        expectRefused(
          await refusal({ taskExecutors: 0, configuration: value as never }),
          'configuration',
          /configuration must be an object of option name -> value/,
        );
      });
    }

    it(
      'refuses an option that a MiniCluster option sets, ' + 'naming that option (it would be overridden silently)',
      async () => {
        expectRefused(
          await refusal({ taskExecutors: 0, configuration: { 'taskmanager.numberOfTaskSlots': 4 } }),
          "configuration['taskmanager.numberOfTaskSlots']",
          /set by the MiniCluster option slotsPerTaskExecutor/,
        );
        expectRefused(
          await refusal({ taskExecutors: 0, configuration: { 'taskmanager.memory.task.heap.size': '1g' } }),
          "configuration['taskmanager.memory.task.heap.size']",
          /resources.taskHeapMemory/,
        );
      },
    );

    it('refuses a placement policy set two different ways', async () => {
      expectRefused(
        await refusal({
          taskExecutors: 0,
          placementPolicy: 'pack',
          configuration: { 'slotmanager.placement-policy': 'spread' },
        }),
        'placementPolicy',
        /disagree/,
      );
    });
  });

  describe('slotsPerTaskExecutor', () => {
    for (const value of [-1, 0, 1.5, '2']) {
      const refuses = `refuses ${JSON.stringify(value)}`;
      it(`${refuses}, naming slotsPerTaskExecutor (not the cpuCores it would be turned into)`, async () => {
        expectRefused(
          await refusal({ taskExecutors: 0, slotsPerTaskExecutor: value as never }),
          'slotsPerTaskExecutor',
          /slotsPerTaskExecutor \(taskmanager.numberOfTaskSlots\) must be an integer >= 1/,
        );
      });
    }
  });

  it('a start refused for its last option has started nothing: the inspector relay port is still free', async () => {
    const port = await freePort();
    expectRefused(
      await refusal({ taskExecutors: 1, inspect: { stately: { port } }, startTimeoutMs: -1 }),
      'startTimeoutMs',
      /startTimeoutMs/,
    );
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });
});
