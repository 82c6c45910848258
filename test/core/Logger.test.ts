/**
 * The logger contract: a record reaches a pino-shaped logger as `logger[level](fields, message)`,
 * reads as one line of text for the plain `log` option, and the default logger of a cluster writes
 * each distinct warning once and nothing else.
 */
import { expect } from 'chai';
import {
  createDefaultLogSink,
  formatLogRecord,
  toLogger,
  type Logger,
  type LoggerFields,
  type LogRecord,
} from '../../lib/core/Logger.js';

const TASK_LINE: LogRecord = {
  level: 'info',
  source: 'task',
  message: 'summing 3 inputs',
  resourceId: 'taskexecutor-3f9a1c2b4d5e',
  slotId: 'taskexecutor-3f9a1c2b4d5e/0',
  jobId: 'job-1',
  vertexId: 'sum',
  vertexName: 'sum',
  subtaskIndex: 2,
  executionAttemptId: 'attempt-1',
};

describe('Logger', () => {
  it('hands a record to the method of its level, fields first and message second (as pino takes them)', () => {
    const calls: Array<[string, LoggerFields, string]> = [];
    const logger: Logger = {
      debug: (fields, message) => calls.push(['debug', fields, message]),
      info: (fields, message) => calls.push(['info', fields, message]),
      warn: (fields, message) => calls.push(['warn', fields, message]),
      error: (fields, message) => calls.push(['error', fields, message]),
    };
    const sink = toLogger(logger);
    sink(TASK_LINE);
    sink({ level: 'warn', source: 'pool', message: 'terminating its thread', resourceId: 'taskexecutor-1' });
    const { message, level: _level, ...fields } = TASK_LINE;
    expect(calls).to.deep.equal([
      ['info', fields, message],
      ['warn', { source: 'pool', resourceId: 'taskexecutor-1' }, 'terminating its thread'],
    ]);
  });

  it('calls the logger as a method, so a logger that reads `this` (pino) works', () => {
    const seen: string[] = [];
    class ThisLogger implements Logger {
      readonly name = 'app';
      debug() {}
      info(_fields: LoggerFields, message: string) {
        seen.push(`${this.name}: ${message}`);
      }
      warn() {}
      error() {}
    }
    toLogger(new ThisLogger())(TASK_LINE);
    expect(seen).to.deep.equal(['app: summing 3 inputs']);
  });

  it('writes a record as one line: where it comes from, the level of a warning, the message', () => {
    expect(formatLogRecord(TASK_LINE)).to.equal('[taskexecutor-3f9a1c2b4d5e] sum#2 summing 3 inputs');
    expect(
      formatLogRecord({ level: 'info', source: 'runtime', message: 'shutting down', resourceId: 'taskexecutor-1' }),
    ).to.equal('[taskexecutor-1] shutting down');
    expect(
      formatLogRecord({
        level: 'warn',
        source: 'runtime',
        message: 'a job event listener threw: boom',
        jobId: 'j',
        jobName: 'word count',
      }),
    ).to.equal('[word count] warn: a job event listener threw: boom');
    expect(formatLogRecord({ level: 'error', source: 'runtime', message: 'uncaught' })).to.equal('error: uncaught');
  });

  it('by default writes each distinct warning and error once, with a hint the first time, and no info or debug', () => {
    const lines: string[] = [];
    const sink = createDefaultLogSink((line) => lines.push(line));
    sink(TASK_LINE);
    sink({ level: 'debug', source: 'runtime', message: 'heartbeat' });
    sink({ level: 'warn', source: 'pool', message: 'terminating its thread', resourceId: 'taskexecutor-1' });
    sink({ level: 'warn', source: 'pool', message: 'terminating its thread', resourceId: 'taskexecutor-1' });
    sink({ level: 'error', source: 'pool', message: 'pool error', resourceId: 'taskexecutor-1' });
    expect(lines).to.have.length(2);
    expect(lines[0]).to.equal(
      'slotwise [taskexecutor-1] warn: terminating its thread ' +
        '(slotwise writes each warning once; pass `logger` to MiniCluster.start to receive every message)\n',
    );
    expect(lines[1]).to.equal('slotwise [taskexecutor-1] error: pool error\n');
  });
});
