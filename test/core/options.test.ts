import { expect } from 'chai';
import { ConfigurationError } from '../../lib/core/errors.js';
import { DEFAULTS, describeOptions, OPTIONS, resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';

const KB = 1024;
const MB = 1024 * KB;
const GB = 1024 * MB;

/** Resolves `options`, expecting a ConfigurationError, and returns it. */
function refusal(options: unknown): ConfigurationError {
  try {
    resolveOptions(options as SlotwiseOptions);
  } catch (error) {
    expect(error, String(error)).to.be.instanceOf(ConfigurationError);
    return error as ConfigurationError;
  }
  throw new Error(`expected ${JSON.stringify(options)} to be refused`);
}

describe('options', () => {
  describe('DEFAULTS', () => {
    it('holds every option of OPTIONS and nothing else', () => {
      expect(Object.keys(DEFAULTS)).to.have.members(Object.keys(OPTIONS));
      expect(Object.keys(DEFAULTS)).to.have.length(Object.keys(OPTIONS).length);
    });

    it('has the documented default of every option, durations in ms and sizes in bytes', () => {
      expect({ ...DEFAULTS }).to.deep.equal({
        'taskmanager.numberOfTaskSlots': 1,
        'taskmanager.cpu.cores': undefined,
        'taskmanager.memory.task.heap.size': 256 * MB,
        'taskmanager.memory.task.off-heap.size': 0,
        'taskmanager.memory.managed.size': 128 * MB,
        'taskmanager.memory.network.size': 64 * MB,
        'io.tmp.dirs': [],
        'taskmanager.network.spill.max-size': 16 * 1024 * MB,
        'taskmanager.extended-resources': {},
        'taskmanager.memory.segment-size': 32 * KB,
        'taskmanager.slot.timeout': 10_000,
        'task.cancellation.timeout': 180_000,
        'slot.request.timeout': 300_000,
        'slot.idle.timeout': 50_000,
        'jobmanager.scheduler.scheduling-strategy': 'region',
        'jobmanager.scheduler': 'default',
        'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': 16 * 2 ** 20,
        'execution.batch.adaptive.auto-parallelism.min-parallelism': 1,
        'execution.batch.adaptive.auto-parallelism.max-parallelism': 128,
        'execution.batch.adaptive.auto-parallelism.default-source-parallelism': 1,
        'execution.batch.speculative.enabled': false,
        'execution.batch.speculative.max-concurrent-executions': 2,
        'execution.batch.speculative.block-slow-node-duration': 60_000,
        'slow-task-detector.check-interval': 1_000,
        'slow-task-detector.execution-time.baseline-lower-bound': 60_000,
        'slow-task-detector.execution-time.baseline-ratio': 0.75,
        'slow-task-detector.execution-time.baseline-multiplier': 1.5,
        'taskmanager.task-threads.spare': undefined,
        'taskmanager.task-threads.max-jobs': 10_000,
        'taskmanager.task-threads.max-heap-after-job': 64 * 2 ** 20,
        'heartbeat.interval': 10_000,
        'heartbeat.timeout': 30_000,
        'resourcemanager.taskmanager-timeout': 30_000,
        'slotmanager.requirement-check.delay': 0,
        'slotmanager.number-of-slots.max': Infinity,
        'slotmanager.max-total-resource.cpu': Infinity,
        'slotmanager.max-total-resource.memory': Infinity,
        'slotmanager.redundant-taskmanager-num': 0,
        'taskmanager.load-balance.mode': 'none',
        'slotmanager.placement-policy': undefined,
        'cluster.registration.initial-timeout': 100,
        'cluster.registration.max-timeout': 30_000,
        'taskmanager.registration.timeout': 300_000,
        'task.cancellation.grace-period': 5_000,
        'rpc.ask.timeout': 10_000,
        'resourcemanager.start-worker.max-failure-rate': 10,
        'restart-strategy.type': 'fixed-delay',
        'restart-strategy.fixed-delay.attempts': 3,
        'restart-strategy.fixed-delay.delay': 10_000,
        'restart-strategy.exponential-delay.initial-backoff': 1_000,
        'restart-strategy.exponential-delay.max-backoff': 60_000,
        'restart-strategy.exponential-delay.backoff-multiplier': 1.5,
        'restart-strategy.exponential-delay.reset-backoff-threshold': 3_600_000,
        'restart-strategy.exponential-delay.jitter-factor': 0.1,
        'restart-strategy.exponential-delay.attempts-before-reset-backoff': Infinity,
        'restart-strategy.failure-rate.max-failures-per-interval': 1,
        'restart-strategy.failure-rate.failure-rate-interval': 60_000,
        'restart-strategy.failure-rate.delay': 1_000,
        'jobstore.expiration-time': 3_600_000,
        'jobstore.max-capacity': 1_000,
        'high-availability.type': 'nats',
        'high-availability.nats.replicas': 1,
        'high-availability.leader-election.lease-duration': 15_000,
        'high-availability.leader-election.renew-deadline': 10_000,
        'high-availability.leader-election.retry-period': 1_000,
        'web.exception-history-size': 16,
        'jobmanager.execution.attempts-history-size': 16,
        'dispatcher.task-module-check.timeout': 10_000,
      });
    });

    it('leaves taskmanager.cpu.cores undefined, meaning derived from the number of slots', () => {
      expect(DEFAULTS).to.have.property('taskmanager.cpu.cores', undefined);
      expect(resolveOptions({ 'taskmanager.numberOfTaskSlots': 4 })['taskmanager.cpu.cores']).to.equal(undefined);
    });

    it('is frozen, so no caller can change the defaults of another', () => {
      expect(Object.isFrozen(DEFAULTS)).to.equal(true);
      expect(Object.isFrozen(DEFAULTS['taskmanager.extended-resources'])).to.equal(true);
    });
  });

  describe('resolveOptions', () => {
    it('returns the defaults when given nothing', () => {
      expect(resolveOptions()).to.deep.equal(DEFAULTS);
      expect(resolveOptions({})).to.deep.equal(DEFAULTS);
    });

    it('treats an option set to undefined as not set', () => {
      expect(resolveOptions({ 'taskmanager.slot.timeout': undefined })['taskmanager.slot.timeout']).to.equal(10_000);
    });

    it('accepts durations as a number of milliseconds', () => {
      const resolved = resolveOptions({ 'taskmanager.slot.timeout': 2_500, 'slot.request.timeout': 60_000 });
      expect(resolved['taskmanager.slot.timeout']).to.equal(2_500);
      expect(resolved['slot.request.timeout']).to.equal(60_000);
    });

    it('accepts durations as strings with a unit and resolves them to milliseconds', () => {
      const resolved = resolveOptions({
        'taskmanager.slot.timeout': '10 s',
        'slot.request.timeout': '5 min',
        'slotmanager.requirement-check.delay': '500ms',
        'task.cancellation.timeout': '1.5 h',
        'restart-strategy.fixed-delay.delay': '250',
      });
      expect(resolved['taskmanager.slot.timeout']).to.equal(10_000);
      expect(resolved['slot.request.timeout']).to.equal(300_000);
      expect(resolved['slotmanager.requirement-check.delay']).to.equal(500);
      expect(resolved['task.cancellation.timeout']).to.equal(5_400_000);
      expect(resolved['restart-strategy.fixed-delay.delay']).to.equal(250);
    });

    it('accepts a zero requirement-check delay and a zero restart delay, but no zero timeout', () => {
      const resolved = resolveOptions({
        'slotmanager.requirement-check.delay': 0,
        'restart-strategy.fixed-delay.delay': '0 s',
      });
      expect(resolved['slotmanager.requirement-check.delay']).to.equal(0);
      expect(resolved['restart-strategy.fixed-delay.delay']).to.equal(0);
      expect(refusal({ 'taskmanager.slot.timeout': 0 }).message).to.equal(
        `option 'taskmanager.slot.timeout' must be at least 1 ms, got 0 ms`,
      );
    });

    it('accepts memory sizes as bytes and as strings with binary units', () => {
      const resolved = resolveOptions({
        'taskmanager.memory.task.heap.size': 512 * MB,
        'taskmanager.memory.managed.size': '1 gb',
        'taskmanager.memory.network.size': '256m',
        'taskmanager.memory.segment-size': '64 kb',
        'slotmanager.max-total-resource.memory': '8g',
      });
      expect(resolved['taskmanager.memory.task.heap.size']).to.equal(512 * MB);
      expect(resolved['taskmanager.memory.managed.size']).to.equal(GB);
      expect(resolved['taskmanager.memory.network.size']).to.equal(256 * MB);
      expect(resolved['taskmanager.memory.segment-size']).to.equal(64 * KB);
      expect(resolved['slotmanager.max-total-resource.memory']).to.equal(8 * GB);
    });

    it('accepts Infinity for the cluster-wide maxima, which are unbounded by default', () => {
      const resolved = resolveOptions({
        'slotmanager.number-of-slots.max': Infinity,
        'slotmanager.max-total-resource.cpu': Infinity,
        'slotmanager.max-total-resource.memory': Infinity,
      });
      expect(resolved['slotmanager.number-of-slots.max']).to.equal(Infinity);
      expect(resolved['slotmanager.max-total-resource.cpu']).to.equal(Infinity);
      expect(resolved['slotmanager.max-total-resource.memory']).to.equal(Infinity);
    });

    it('accepts extended resources and keeps a frozen copy of them', () => {
      const extended = { gpu: 2, fpga: 0.5 };
      const resolved = resolveOptions({ 'taskmanager.extended-resources': extended });
      extended.gpu = 99;
      expect(resolved['taskmanager.extended-resources']).to.deep.equal({ gpu: 2, fpga: 0.5 });
      expect(Object.isFrozen(resolved['taskmanager.extended-resources'])).to.equal(true);
    });

    it('returns a frozen object and does not mutate its input', () => {
      const input = { 'taskmanager.numberOfTaskSlots': 4, 'taskmanager.slot.timeout': '20 s' } as const;
      const before = structuredClone(input);
      const resolved = resolveOptions(input);
      expect(Object.isFrozen(resolved)).to.equal(true);
      expect(input).to.deep.equal(before);
      expect(resolved['taskmanager.slot.timeout']).to.equal(20_000);
      expect(() => {
        (resolved as Record<string, unknown>)['taskmanager.numberOfTaskSlots'] = 8;
      }).to.throw(TypeError);
    });

    it('accepts its own output again unchanged', () => {
      const once = resolveOptions({
        'taskmanager.numberOfTaskSlots': 4,
        'taskmanager.cpu.cores': 2,
        'heartbeat.timeout': '1 min',
      });
      expect(resolveOptions(once)).to.deep.equal(once);
      expect(resolveOptions(DEFAULTS)).to.deep.equal(DEFAULTS);
    });
  });

  describe('unknown options', () => {
    it('rejects a misspelt option with reason unknown-option and suggests the nearest name', () => {
      const error = refusal({ 'taskmanager.slot.timout': '10 s' });
      expect(error.reason).to.equal('unknown-option');
      expect(error.message).to.contain(`unknown option 'taskmanager.slot.timout'`);
      expect(error.message).to.contain(`did you mean 'taskmanager.slot.timeout'?`);
      expect(error.details).to.deep.include({
        option: 'taskmanager.slot.timout',
        suggestion: 'taskmanager.slot.timeout',
      });
    });

    it('suggests by spelling, whatever part of the name is wrong', () => {
      expect(refusal({ 'heartbeat.intervall': 1 }).details['suggestion']).to.equal('heartbeat.interval');
      expect(refusal({ 'taskmanager.numberOfTaskslots': 1 }).details['suggestion']).to.equal(
        'taskmanager.numberOfTaskSlots',
      );
    });

    it('rejects a name like nothing known without a suggestion', () => {
      const error = refusal({ 'colour.scheme': 'dark' });
      expect(error.reason).to.equal('unknown-option');
      expect(error.message).to.contain(`unknown option 'colour.scheme'`);
      expect(error.message).to.not.contain('did you mean');
      expect(error.details['suggestion']).to.equal(undefined);
    });

    it('rejects names of Object.prototype members as unknown options, also from parsed JSON', () => {
      for (const name of ['toString', 'constructor', 'hasOwnProperty']) {
        expect(refusal({ [name]: 1 }).reason, name).to.equal('unknown-option');
      }
      expect(refusal(JSON.parse('{"__proto__": 1}')).details['option']).to.equal('__proto__');
    });

    it('rejects an unknown option even when every other option is valid', () => {
      expect(
        refusal({ 'taskmanager.numberOfTaskSlots': 2, 'slot.request.timeot': '1 min' }).details['option'],
      ).to.equal('slot.request.timeot');
    });
  });

  describe('invalid values', () => {
    const cases: Array<{ what: string; options: Record<string, unknown>; rule: RegExp }> = [
      {
        what: 'a negative duration',
        options: { 'taskmanager.slot.timeout': -1 },
        rule: /must be a number of milliseconds or a duration like .*\(finite, >= 0\), got -1$/,
      },
      {
        what: 'a negative duration string',
        options: { 'heartbeat.interval': '-5 s' },
        rule: /duration like '500 ms', '10 s', '5 min', '1 h', got "-5 s"$/,
      },
      {
        what: 'a duration with an unknown unit',
        options: { 'slot.request.timeout': '5 fortnights' },
        rule: /got "5 fortnights"$/,
      },
      {
        what: 'a duration below 1 ms',
        options: { 'slot.request.timeout': 0.5 },
        rule: /must be at least 1 ms, got 0\.5 ms$/,
      },
      { what: '0 slots', options: { 'taskmanager.numberOfTaskSlots': 0 }, rule: /must be an integer >= 1, got 0$/ },
      {
        what: '1.5 slots',
        options: { 'taskmanager.numberOfTaskSlots': 1.5 },
        rule: /must be an integer >= 1, got 1\.5$/,
      },
      {
        what: 'slots as a string',
        options: { 'taskmanager.numberOfTaskSlots': '4' },
        rule: /must be an integer >= 1, got "4"$/,
      },
      {
        what: 'slots as a BigInt',
        options: { 'taskmanager.numberOfTaskSlots': 2n },
        rule: /must be an integer >= 1, got 2n$/,
      },
      {
        what: 'a negative number of redundant TaskExecutors',
        options: { 'slotmanager.redundant-taskmanager-num': -1 },
        rule: /must be an integer >= 0, got -1$/,
      },
      {
        what: 'a negative number of restart attempts',
        options: { 'restart-strategy.fixed-delay.attempts': -1 },
        rule: /must be an integer >= 0, got -1$/,
      },
      {
        what: '0 as the slot maximum',
        options: { 'slotmanager.number-of-slots.max': 0 },
        rule: /must be an integer >= 1 or Infinity, got 0$/,
      },
      {
        what: 'a relative directory for temporary files',
        options: { 'io.tmp.dirs': '/tmp,spill' },
        rule: /must name absolute paths, got "spill"$/,
      },
      {
        what: 'a number for the directories for temporary files',
        options: { 'io.tmp.dirs': 3 },
        rule: /must be a string of absolute paths, got 3$/,
      },
      {
        what: 'a non-power-of-two segment size',
        options: { 'taskmanager.memory.segment-size': 3000 },
        rule: /must be a power of two from 4 kb to 16 mb, got 2\.93 kb$/,
      },
      {
        what: 'a segment size below 4 kb',
        options: { 'taskmanager.memory.segment-size': '2 kb' },
        rule: /must be a power of two from 4 kb to 16 mb, got 2 kb$/,
      },
      {
        what: 'a segment size above 16 mb',
        options: { 'taskmanager.memory.segment-size': '32 mb' },
        rule: /must be a power of two from 4 kb to 16 mb, got 32 mb$/,
      },
      {
        what: 'a fractional byte count',
        options: { 'taskmanager.memory.managed.size': 1.5 },
        rule: /whole number of bytes .*got 1\.5$/,
      },
      {
        what: 'a memory size with an unknown unit',
        options: { 'taskmanager.memory.task.heap.size': '1 zb' },
        rule: /unknown unit "zb"/,
      },
      {
        what: 'a bad load-balance mode',
        options: { 'taskmanager.load-balance.mode': 'round-robin' },
        rule: /must be one of 'none', 'slots', got "round-robin"$/,
      },
      {
        what: 'a bad restart strategy',
        options: { 'restart-strategy.type': 'exponential' },
        rule: new RegExp(
          "must be one of 'fixed-delay' or 'fixeddelay', 'exponential-delay' or 'exponentialdelay', " +
            `'failure-rate' or 'failurerate', 'none' or 'off' or 'disable', got "exponential"$`,
        ),
      },
      {
        what: 'a backoff multiplier of 1',
        options: { 'restart-strategy.exponential-delay.backoff-multiplier': 1 },
        rule: /must be a finite number > 1, got 1$/,
      },
      {
        what: 'a jitter factor above 1',
        options: { 'restart-strategy.exponential-delay.jitter-factor': 1.5 },
        rule: /must be a finite number >= 0 and <= 1, got 1\.5$/,
      },
      {
        what: 'a negative jitter factor',
        options: { 'restart-strategy.exponential-delay.jitter-factor': -0.1 },
        rule: /must be a finite number >= 0 and <= 1, got -0\.1$/,
      },
      {
        what: 'no restart before the backoff resets',
        options: { 'restart-strategy.exponential-delay.attempts-before-reset-backoff': 0 },
        rule: /must be an integer >= 1 or Infinity, got 0$/,
      },
      {
        what: 'a zero initial backoff',
        options: { 'restart-strategy.exponential-delay.initial-backoff': 0 },
        rule: /must be at least 1 ms, got 0 ms$/,
      },
      {
        what: 'a zero reset threshold',
        options: { 'restart-strategy.exponential-delay.reset-backoff-threshold': 0 },
        rule: /must be at least 1 ms, got 0 ms$/,
      },
      {
        what: 'no failure allowed per interval',
        options: { 'restart-strategy.failure-rate.max-failures-per-interval': 0 },
        rule: /must be an integer >= 1, got 0$/,
      },
      {
        what: 'a zero failure-rate interval',
        options: { 'restart-strategy.failure-rate.failure-rate-interval': '0 s' },
        rule: /must be at least 1 ms, got 0 ms$/,
      },
      {
        what: 'a negative failure-rate delay',
        options: { 'restart-strategy.failure-rate.delay': -1 },
        rule: /got -1/,
      },
      {
        what: 'a negative extended resource',
        options: { 'taskmanager.extended-resources': { gpu: -1 } },
        rule: /amount of 'gpu' must be a finite number >= 0, got -1$/,
      },
      {
        what: 'an infinite extended resource',
        options: { 'taskmanager.extended-resources': { gpu: Infinity } },
        rule: /amount of 'gpu' must be a finite number >= 0, got Infinity$/,
      },
      {
        what: 'an extended resource with a bad name',
        options: { 'taskmanager.extended-resources': { '2gpu': 1 } },
        rule: /resource name "2gpu" must start with a letter/,
      },
      {
        what: 'extended resources as an array',
        options: { 'taskmanager.extended-resources': [1, 2] },
        rule: /must be an object of resource name -> amount, e.g. \{ gpu: 2 \}, got an array$/,
      },
      { what: 'zero CPU cores', options: { 'taskmanager.cpu.cores': 0 }, rule: /must be a finite number > 0, got 0$/ },
      {
        what: 'Infinity slots',
        options: { 'taskmanager.numberOfTaskSlots': Infinity },
        rule: /must be an integer >= 1, got Infinity$/,
      },
      {
        what: 'NaN slots',
        options: { 'taskmanager.numberOfTaskSlots': NaN },
        rule: /must be an integer >= 1, got NaN$/,
      },
      {
        what: 'an infinite timeout',
        options: { 'taskmanager.slot.timeout': Infinity },
        rule: /\(finite, >= 0\), got Infinity$/,
      },
      {
        what: 'Infinity CPU cores',
        options: { 'taskmanager.cpu.cores': Infinity },
        rule: /must be a finite number > 0, got Infinity$/,
      },
      {
        what: 'an infinite segment size',
        options: { 'taskmanager.memory.segment-size': Infinity },
        rule: /got Infinity$/,
      },
      {
        what: 'a zero task module check timeout',
        options: { 'dispatcher.task-module-check.timeout': 0 },
        rule: /must be at least 1 ms, got 0 ms$/,
      },
      {
        what: 'an unparsable task module check timeout',
        options: { 'dispatcher.task-module-check.timeout': 'soon' },
        rule: /got "soon"$/,
      },
      {
        what: 'an infinite failure rate',
        options: { 'resourcemanager.start-worker.max-failure-rate': Infinity },
        rule: /must be a finite number > 0, got Infinity$/,
      },
      {
        what: 'speculation enabled as a word other than true or false',
        options: { 'execution.batch.speculative.enabled': 'yes' },
        rule: /must be true or false, got "yes"$/,
      },
      {
        what: 'one concurrent execution (no room for a speculative attempt)',
        options: { 'execution.batch.speculative.max-concurrent-executions': 1 },
        rule: /must be an integer >= 2, got 1$/,
      },
      {
        what: 'a negative block duration',
        options: { 'execution.batch.speculative.block-slow-node-duration': '-1 s' },
        rule: /got "-1 s"$/,
      },
      {
        what: 'a zero check interval',
        options: { 'slow-task-detector.check-interval': 0 },
        rule: /must be at least 1 ms, got 0 ms$/,
      },
      {
        what: 'a baseline ratio of 1 (Flink: in [0, 1))',
        options: { 'slow-task-detector.execution-time.baseline-ratio': 1 },
        rule: /must be a finite number >= 0 and < 1, got 1$/,
      },
      {
        what: 'a zero baseline multiplier',
        options: { 'slow-task-detector.execution-time.baseline-multiplier': 0 },
        rule: /must be a finite number > 0, got 0$/,
      },
    ];

    for (const { what, options, rule } of cases) {
      const [option] = Object.keys(options);
      it(`rejects ${what} with reason invalid-value, naming '${option}' and the rule`, () => {
        const error = refusal(options);
        expect(error.reason).to.equal('invalid-value');
        expect(error.details['option']).to.equal(option);
        expect(error.message.startsWith(`option '${option}' `), error.message).to.equal(true);
        expect(error.message).to.match(rule);
      });
    }

    it("refuses speculative execution unless 'jobmanager.scheduler' is adaptive, and accepts it with it", () => {
      const error = refusal({ 'execution.batch.speculative.enabled': true });
      expect(error.reason).to.equal('invalid-value');
      expect(error.details['option']).to.equal('execution.batch.speculative.enabled');
      expect(error.message).to.contain("'jobmanager.scheduler' is 'default'");
      expect(error.message).to.contain("set 'jobmanager.scheduler' to 'adaptive'");
      const resolved = resolveOptions({
        'jobmanager.scheduler': 'AdaptiveBatch',
        'execution.batch.speculative.enabled': 'true',
      });
      expect(resolved['execution.batch.speculative.enabled']).to.equal(true);
    });

    it('rejects a bad value even when it comes after valid ones, and returns nothing half-applied', () => {
      const input = {
        'taskmanager.numberOfTaskSlots': 8,
        'taskmanager.slot.timeout': '20 s',
        'restart-strategy.type': 'sometimes',
      };
      const before = structuredClone(input);
      expect(refusal(input).details['option']).to.equal('restart-strategy.type');
      expect(input).to.deep.equal(before);
      expect(DEFAULTS['taskmanager.numberOfTaskSlots']).to.equal(1);
    });

    it('rejects options that are not an object', () => {
      for (const bad of [null, 42, 'taskmanager.numberOfTaskSlots=2']) {
        const error = refusal(bad);
        expect(error.reason).to.equal('invalid-value');
        expect(error.message).to.match(/^options must be an object of option name -> value, got /);
      }
    });
  });

  describe('heartbeat.timeout', () => {
    it('rejects a heartbeat timeout equal to the interval, naming both', () => {
      const error = refusal({ 'heartbeat.interval': '30 s', 'heartbeat.timeout': '30 s' });
      expect(error.reason).to.equal('invalid-value');
      expect(error.details['option']).to.equal('heartbeat.timeout');
      expect(error.message).to.equal(
        `option 'heartbeat.timeout' (30 s) must be longer than 'heartbeat.interval' (30 s)`,
      );
    });

    it('rejects a heartbeat timeout shorter than the interval, printing both exactly', () => {
      expect(refusal({ 'heartbeat.interval': 1001, 'heartbeat.timeout': 1000 }).message).to.equal(
        `option 'heartbeat.timeout' (1 s) must be longer than 'heartbeat.interval' (1001 ms)`,
      );
    });

    it('rejects an interval raised past the default timeout', () => {
      expect(refusal({ 'heartbeat.interval': '1 min' }).message).to.contain(`'heartbeat.interval' (1 min)`);
    });

    it('accepts a timeout just longer than the interval', () => {
      const resolved = resolveOptions({ 'heartbeat.interval': '30 s', 'heartbeat.timeout': 30_001 });
      expect([resolved['heartbeat.interval'], resolved['heartbeat.timeout']]).to.deep.equal([30_000, 30_001]);
    });
  });

  describe('high-availability.leader-election.*', () => {
    it('refuses a renew deadline not shorter than the lease, or a retry period not shorter than the deadline', () => {
      for (const bad of [
        { 'high-availability.leader-election.renew-deadline': '15 s' },
        { 'high-availability.leader-election.lease-duration': '5 s' },
        { 'high-availability.leader-election.retry-period': '10 s' },
      ]) {
        const error = refusal(bad);
        expect(error.reason).to.equal('invalid-value');
        expect(error.details['option']).to.equal('high-availability.leader-election.renew-deadline');
        expect(error.message).to.match(/must keep retry-period \(.+\) < renew-deadline \(.+\) < lease-duration/);
      }
    });

    it('takes a 2 s lease with a shorter deadline and retry period', () => {
      const resolved = resolveOptions({
        'high-availability.leader-election.lease-duration': '2 s',
        'high-availability.leader-election.renew-deadline': 1_500,
        'high-availability.leader-election.retry-period': 250,
      });
      expect(resolved['high-availability.leader-election.lease-duration']).to.equal(2_000);
    });
  });

  describe('restart-strategy.*', () => {
    it("accepts Flink's other spellings of each strategy and resolves them to its main name", () => {
      const spellings = {
        fixeddelay: 'fixed-delay',
        exponentialdelay: 'exponential-delay',
        'exponential-delay': 'exponential-delay',
        failurerate: 'failure-rate',
        off: 'none',
        disable: 'none',
      } as const;
      for (const [spelling, type] of Object.entries(spellings))
        expect(resolveOptions({ 'restart-strategy.type': spelling })['restart-strategy.type'], spelling).to.equal(type);
    });

    it('resolves the exponential-delay and failure-rate options, durations in ms', () => {
      const resolved = resolveOptions({
        'restart-strategy.exponential-delay.initial-backoff': '10 s',
        'restart-strategy.exponential-delay.max-backoff': '2 min',
        'restart-strategy.exponential-delay.backoff-multiplier': 1.4,
        'restart-strategy.exponential-delay.reset-backoff-threshold': '10 min',
        'restart-strategy.exponential-delay.jitter-factor': 0,
        'restart-strategy.exponential-delay.attempts-before-reset-backoff': 10,
        'restart-strategy.failure-rate.max-failures-per-interval': 3,
        'restart-strategy.failure-rate.failure-rate-interval': '5 min',
        'restart-strategy.failure-rate.delay': '0 s',
      });
      expect(resolved).to.deep.include({
        'restart-strategy.exponential-delay.initial-backoff': 10_000,
        'restart-strategy.exponential-delay.max-backoff': 120_000,
        'restart-strategy.exponential-delay.backoff-multiplier': 1.4,
        'restart-strategy.exponential-delay.reset-backoff-threshold': 600_000,
        'restart-strategy.exponential-delay.jitter-factor': 0,
        'restart-strategy.exponential-delay.attempts-before-reset-backoff': 10,
        'restart-strategy.failure-rate.max-failures-per-interval': 3,
        'restart-strategy.failure-rate.failure-rate-interval': 300_000,
        'restart-strategy.failure-rate.delay': 0,
      });
    });

    it('refuses an initial backoff longer than the max backoff, naming both', () => {
      const error = refusal({ 'restart-strategy.exponential-delay.max-backoff': '500 ms' });
      expect(error.reason).to.equal('invalid-value');
      expect(error.details['option']).to.equal('restart-strategy.exponential-delay.initial-backoff');
      expect(error.message).to.equal(
        "option 'restart-strategy.exponential-delay.initial-backoff' (1 s) must not be longer than " +
          "'restart-strategy.exponential-delay.max-backoff' (500 ms)",
      );
      expect(
        resolveOptions({
          'restart-strategy.exponential-delay.initial-backoff': '500 ms',
          'restart-strategy.exponential-delay.max-backoff': '500 ms',
        })['restart-strategy.exponential-delay.max-backoff'],
      ).to.equal(500);
    });
  });

  describe('describeOptions', () => {
    it('lists every option once, in the order of OPTIONS, each with what it means', () => {
      const described = describeOptions();
      expect(described.map((o) => o.name)).to.deep.equal(Object.keys(OPTIONS));
      for (const { name, doc } of described) expect(doc, name).to.be.a('string').and.not.equal('');
    });

    it('prints each default readably: durations with units, sizes in binary units, unbounded, derived', () => {
      const defaults = Object.fromEntries(describeOptions().map((o) => [o.name, o.default]));
      expect(defaults).to.deep.equal({
        'taskmanager.numberOfTaskSlots': '1',
        'taskmanager.cpu.cores': 'number of slots',
        'taskmanager.memory.task.heap.size': '256 mb',
        'taskmanager.memory.task.off-heap.size': '0 b',
        'taskmanager.memory.managed.size': '128 mb',
        'taskmanager.memory.network.size': '64 mb',
        'io.tmp.dirs': "the OS's temporary directory",
        'taskmanager.network.spill.max-size': '16 gb',
        'taskmanager.extended-resources': 'none',
        'taskmanager.memory.segment-size': '32 kb',
        'taskmanager.slot.timeout': '10 s',
        'task.cancellation.timeout': '3 min',
        'slot.request.timeout': '5 min',
        'slot.idle.timeout': '50 s',
        'jobmanager.scheduler.scheduling-strategy': 'region',
        'jobmanager.scheduler': 'default',
        'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': '16 mb',
        'execution.batch.adaptive.auto-parallelism.min-parallelism': '1',
        'execution.batch.adaptive.auto-parallelism.max-parallelism': '128',
        'execution.batch.adaptive.auto-parallelism.default-source-parallelism': '1',
        'execution.batch.speculative.enabled': 'false',
        'execution.batch.speculative.max-concurrent-executions': '2',
        'execution.batch.speculative.block-slow-node-duration': '1 min',
        'slow-task-detector.check-interval': '1 s',
        'slow-task-detector.execution-time.baseline-lower-bound': '1 min',
        'slow-task-detector.execution-time.baseline-ratio': '0.75',
        'slow-task-detector.execution-time.baseline-multiplier': '1.5',
        'taskmanager.task-threads.spare': 'number of slots',
        'taskmanager.task-threads.max-jobs': '10000',
        'taskmanager.task-threads.max-heap-after-job': '64 mb',
        'heartbeat.interval': '10 s',
        'heartbeat.timeout': '30 s',
        'resourcemanager.taskmanager-timeout': '30 s',
        'slotmanager.requirement-check.delay': '0 ms',
        'slotmanager.number-of-slots.max': 'unbounded',
        'slotmanager.max-total-resource.cpu': 'unbounded',
        'slotmanager.max-total-resource.memory': 'unbounded',
        'slotmanager.redundant-taskmanager-num': '0',
        'taskmanager.load-balance.mode': 'none',
        'slotmanager.placement-policy': 'from taskmanager.load-balance.mode',
        'cluster.registration.initial-timeout': '100 ms',
        'cluster.registration.max-timeout': '30 s',
        'taskmanager.registration.timeout': '5 min',
        'task.cancellation.grace-period': '5 s',
        'rpc.ask.timeout': '10 s',
        'resourcemanager.start-worker.max-failure-rate': '10',
        'restart-strategy.type': 'fixed-delay',
        'restart-strategy.fixed-delay.attempts': '3',
        'restart-strategy.fixed-delay.delay': '10 s',
        'restart-strategy.exponential-delay.initial-backoff': '1 s',
        'restart-strategy.exponential-delay.max-backoff': '1 min',
        'restart-strategy.exponential-delay.backoff-multiplier': '1.5',
        'restart-strategy.exponential-delay.reset-backoff-threshold': '1 h',
        'restart-strategy.exponential-delay.jitter-factor': '0.1',
        'restart-strategy.exponential-delay.attempts-before-reset-backoff': 'unbounded',
        'restart-strategy.failure-rate.max-failures-per-interval': '1',
        'restart-strategy.failure-rate.failure-rate-interval': '1 min',
        'restart-strategy.failure-rate.delay': '1 s',
        'jobstore.expiration-time': '1 h',
        'jobstore.max-capacity': '1000',
        'high-availability.type': 'nats',
        'high-availability.nats.replicas': '1',
        'high-availability.leader-election.lease-duration': '15 s',
        'high-availability.leader-election.renew-deadline': '10 s',
        'high-availability.leader-election.retry-period': '1 s',
        'web.exception-history-size': '16',
        'jobmanager.execution.attempts-history-size': '16',
        'dispatcher.task-module-check.timeout': '10 s',
      });
    });

    it('prints defaults that resolveOptions reads back as the defaults', () => {
      const readable = [
        'taskmanager.slot.timeout',
        'slot.request.timeout',
        'slotmanager.requirement-check.delay',
        'taskmanager.memory.segment-size',
        'taskmanager.memory.managed.size',
      ] as const;
      const printed = Object.fromEntries(
        describeOptions()
          .filter((o) => (readable as readonly string[]).includes(o.name))
          .map((o) => [o.name, o.default]),
      );
      const resolved = resolveOptions(printed as SlotwiseOptions);
      for (const name of readable) expect(resolved[name], name).to.equal(DEFAULTS[name]);
    });
  });
});
