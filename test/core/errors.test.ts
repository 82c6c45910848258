import { expect } from 'chai';
import {
  ConfigurationError,
  DuplicateTaskError,
  ClusterError,
  PartitionError,
  ERROR_CLASSES,
  IllegalArgumentError,
  IllegalStateError,
  isSlotwiseError,
  MemoryAllocationError,
  ResourceBudgetError,
  ResourceProfileError,
  reviveError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  SlotwiseError,
  TaskNotFoundError,
  TimeoutError,
  UnknownTaskExecutorError,
  SlotRequestError,
  RpcTimeoutError,
  EndpointClosedError,
  TaskExecutionError,
  JobGraphError,
  RestError,
  type AnySlotwiseError,
  type SlotwiseErrorTag,
} from '../../lib/core/errors.js';

/** One realistic instance of every class in the family; a Record, so a new class without a sample does not compile. */
const SAMPLES: Record<SlotwiseErrorTag, () => AnySlotwiseError> = {
  IllegalArgumentError: () =>
    new IllegalArgumentError('out-of-range', 'numberSlots must be an integer >= 1, got 0', {
      argument: 'numberSlots',
      value: 0,
    }),
  IllegalStateError: () =>
    new IllegalStateError('TaskSlotTable.allocateSlot is not allowed while the table is closed (allowed: running)', {
      component: 'TaskSlotTable',
      operation: 'allocateSlot',
      state: 'closed',
      allowed: ['running'],
    }),
  ConfigurationError: () =>
    new ConfigurationError('unknown-option', `unknown option 'heartbeat.intervall'`, {
      option: 'heartbeat.intervall',
      suggestion: 'heartbeat.interval',
    }),
  ResourceProfileError: () =>
    new ResourceProfileError('negative-amount', 'cpuCores must be >= 0, got -1', { field: 'cpuCores', value: -1 }),
  ResourceBudgetError: () =>
    new ResourceBudgetError('insufficient-budget', 'cannot reserve 2 cores: 1 left', {
      requested: { cpuCores: 2 },
      available: { cpuCores: 1 },
    }),
  SlotAllocationError: () =>
    new SlotAllocationError('index-taken', 'slot index 0 is already held', { index: 0, holder: 'a'.repeat(32) }),
  SlotNotFoundError: () =>
    new SlotNotFoundError('no slot with allocation abcd1234', { allocationId: 'abcd1234'.repeat(4) }),
  SlotNotActiveError: () =>
    new SlotNotActiveError('slot-allocated', 'slot is allocated but not active; mark it active first', {
      allocationId: 'b'.repeat(32),
    }),
  SlotOwnerMismatchError: () =>
    new SlotOwnerMismatchError('job-mismatch', 'slot belongs to another job', {
      expected: 'c'.repeat(32),
      actual: 'd'.repeat(32),
    }),
  DuplicateTaskError: () =>
    new DuplicateTaskError('task is already in this table', { executionAttemptId: `${'e'.repeat(32)}_map_0_0` }),
  TaskNotFoundError: () =>
    new TaskNotFoundError('no task in this table', { executionAttemptId: `${'f'.repeat(32)}_map_1_0` }),
  MemoryAllocationError: () =>
    new MemoryAllocationError('insufficient-memory', 'cannot allocate 4 pages: 2 free', {
      requested: 4,
      free: 2,
      owners: [['op-1', 2]],
    }),
  TimeoutError: () =>
    new TimeoutError('TaskExecutorGateway.requestSlot timed out after 10 s', {
      operation: 'requestSlot',
      timeoutMs: 10_000,
    }),
  UnknownTaskExecutorError: () =>
    new UnknownTaskExecutorError('slot report from taskexecutor-1, which is not registered', {
      resourceId: 'taskexecutor-1',
    }),
  SlotRequestError: () =>
    new SlotRequestError('timed-out', 'slot request waited 5 min: no TaskExecutor has room', {
      jobId: 'a'.repeat(32),
      why: 'no TaskExecutor has room',
    }),
  TaskExecutionError: () =>
    new TaskExecutionError('out-of-memory', 'task tokenize#3 ran out of its 64 mb heap', {
      executionAttemptId: `${'a'.repeat(32)}_tokenize_3_0`,
      vertexName: 'tokenize',
      cause: 'Worker terminated due to reaching memory limit',
      code: 'ERR_WORKER_OUT_OF_MEMORY',
    }),
  EndpointClosedError: () =>
    new EndpointClosedError('TaskExecutor taskexecutor-1 is closed: the call was not run', {
      endpoint: 'TaskExecutor taskexecutor-1',
    }),
  RpcTimeoutError: () =>
    new RpcTimeoutError('TaskExecutorGateway.requestSlot got no answer within 10 s', {
      gateway: 'TaskExecutorGateway',
      method: 'requestSlot',
      timeoutMs: 10_000,
    }),
  JobGraphError: () =>
    new JobGraphError('cycle', 'the edges form a cycle: map -> reduce -> map; a job graph must be acyclic', {
      vertices: ['map', 'reduce', 'map'],
    }),
  PartitionError: () =>
    new PartitionError('not-found', 'TaskExecutor te-1 holds no partition attempt-1 (subpartition 0)', {
      partitionId: 'attempt-1',
      subpartition: 0,
      resourceId: 'te-1',
    }),
  ClusterError: () =>
    new ClusterError('not-leader', "this JobManager stands by: cluster 'default' is led by the JobManager on jm-1", {
      clusterId: 'default',
      leader: { host: 'jm-1', pid: 4242, startedAt: '2025-01-01T00:00:00.000Z', restUrl: 'http://jm-1:8081' },
    }),
  RestError: () =>
    new RestError('unknown-job', 'no job 0123456789abcdef0123456789abcdef in this cluster', {
      status: 404,
      jobId: '0123456789abcdef0123456789abcdef',
    }),
};

const TAGS = Object.keys(ERROR_CLASSES) as SlotwiseErrorTag[];

describe('errors', () => {
  describe('the family', () => {
    it('has a sample for every class in ERROR_CLASSES, each keyed by its class name', () => {
      expect(Object.keys(SAMPLES)).to.have.members(TAGS);
      for (const tag of TAGS) expect(ERROR_CLASSES[tag].name, tag).to.equal(tag);
    });

    for (const tag of Object.keys(SAMPLES) as SlotwiseErrorTag[]) {
      it(`gives ${tag} a _tag and a name equal to its class name`, () => {
        const error = SAMPLES[tag]();
        expect(error).to.be.instanceOf(ERROR_CLASSES[tag]);
        expect(error).to.be.instanceOf(SlotwiseError);
        expect(error).to.be.instanceOf(Error);
        expect(error._tag).to.equal(tag);
        expect(error.name).to.equal(tag);
        expect(String(error)).to.equal(`${tag}: ${error.message}`);
        expect(error.stack?.split('\n')[0]).to.equal(`${tag}: ${error.message}`);
      });
    }

    it('keeps details frozen, so a caught error cannot be rewritten by whoever catches it', () => {
      const details = { option: 'heartbeat.timeout', value: '1 s' };
      const error = new ConfigurationError('invalid-value', 'too short', details);
      details.value = '1 h';
      expect(error.details).to.deep.equal({ option: 'heartbeat.timeout', value: '1 s' });
      expect(Object.isFrozen(error.details)).to.equal(true);
    });

    it('fixes the reason of classes that break only one rule', () => {
      expect(SAMPLES.IllegalStateError().reason).to.equal('wrong-state');
      expect(SAMPLES.SlotNotFoundError().reason).to.equal('unknown-allocation');
      expect(SAMPLES.DuplicateTaskError().reason).to.equal('duplicate-execution-attempt');
      expect(SAMPLES.TaskNotFoundError().reason).to.equal('unknown-execution-attempt');
      expect(SAMPLES.TimeoutError().reason).to.equal('deadline-exceeded');
    });
  });

  describe('toJSON and reviveError', () => {
    for (const tag of Object.keys(SAMPLES) as SlotwiseErrorTag[]) {
      it(
        `carries ${tag} across a structured clone of toJSON() and ` +
          `revives it with the same class, reason, details and message`,
        () => {
          const error = SAMPLES[tag]();
          const wire = structuredClone(error.toJSON());
          expect(wire).to.deep.equal({
            _tag: tag,
            reason: error.reason,
            message: error.message,
            details: { ...error.details },
          });

          const revived = reviveError(wire);
          expect(revived).to.be.instanceOf(ERROR_CLASSES[tag]);
          expect(revived).to.be.instanceOf(Error);
          expect(isSlotwiseError(revived)).to.equal(true);
          const typed = revived as AnySlotwiseError;
          expect(typed._tag).to.equal(tag);
          expect(typed.name).to.equal(tag);
          expect(typed.reason).to.equal(error.reason);
          expect(typed.details).to.deep.equal(error.details);
          expect(typed.message).to.equal(error.message);
          expect(Object.isFrozen(typed.details)).to.equal(true);
          expect(typed.stack).to.match(new RegExp(`^${tag}: `));
        },
      );
    }

    it('produces JSON-safe wire forms that revive the same way', () => {
      for (const tag of TAGS) {
        const error = SAMPLES[tag]();
        const revived = reviveError(JSON.parse(JSON.stringify(error)));
        expect(revived, tag).to.be.instanceOf(ERROR_CLASSES[tag]);
        expect((revived as AnySlotwiseError).details, tag).to.deep.equal(error.details);
      }
    });

    it('revives the wire form, not the error: a structured clone of the error itself loses its class', () => {
      const error = SAMPLES.SlotAllocationError();
      expect(isSlotwiseError(structuredClone(error))).to.equal(false);
      expect(reviveError(structuredClone(error.toJSON()))).to.be.instanceOf(SlotAllocationError);
    });

    it('revives an unknown tag (a newer peer) as a plain Error named by the tag', () => {
      const revived = reviveError({
        _tag: 'QuotaExceededError',
        reason: 'quota',
        message: 'over quota',
        details: { used: 3 },
      });
      expect(revived).to.be.instanceOf(Error);
      expect(revived).to.not.be.instanceOf(SlotwiseError);
      expect(isSlotwiseError(revived)).to.equal(false);
      expect(revived.name).to.equal('QuotaExceededError');
      expect(revived.message).to.equal('over quota');
      expect(String(revived)).to.equal('QuotaExceededError: over quota');
    });
  });

  describe('isSlotwiseError', () => {
    it('recognises every member of the family', () => {
      for (const tag of TAGS) expect(isSlotwiseError(SAMPLES[tag]()), tag).to.equal(true);
    });

    it('rejects other errors, look-alike objects and non-errors', () => {
      const lookAlike = { _tag: 'ConfigurationError', reason: 'invalid-value', message: 'x', details: { option: 'x' } };
      for (const value of [
        new Error('x'),
        new TypeError('x'),
        new RangeError('x'),
        lookAlike,
        SAMPLES.TimeoutError().toJSON(),
        null,
        undefined,
        'ConfigurationError',
        42,
      ]) {
        expect(isSlotwiseError(value), String(value)).to.equal(false);
      }
    });
  });
});
