import { expect } from 'chai';
import { MessageChannel } from 'node:worker_threads';
import { ExecutionAttemptID, JobID, ResourceID } from '../../lib/core/ids.js';
import { connectGateway, serveGateway } from '../../lib/rpc/connect.js';
import type { JobMasterGateway } from '../../lib/rpc/gateways.js';
import { Link } from '../../lib/rpc/Link.js';
import { MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';
import type { TaskExecutionStateWire } from '../../lib/rpc/protocol.js';
import { portTransport } from '../../lib/rpc/Transport.js';
import { JobTable } from '../../lib/taskexecutor/JobTable.js';
import { watched } from '../rpc/support/transports.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));
const RESOURCE = ResourceID.generate('te');

describe('JobTable', () => {
  let links: Link[] = [];
  afterEach(() => {
    for (const link of links) link.close('test over');
    links = [];
  });

  /**
   * A TaskExecutor's end (`te`, recording what its transport sends) serving `submit` on channel
   * 'te', and calling a JobMaster served on the other end (`jm:x`) through a JobTable.
   */
  function setup() {
    const { port1, port2 } = new MessageChannel();
    const sent: unknown[] = [];
    const te = new Link('te', watched(portTransport(port1), (message) => sent.push(message)));
    const jm = new Link('jm', portTransport(port2));
    links.push(te, jm);
    const heard: TaskExecutionStateWire[][] = [];
    const jobMaster: Pick<JobMasterGateway, 'updateTaskExecutionStates'> = {
      updateTaskExecutionStates: async (states) => void heard.push([...states]),
    };
    serveGateway(jm, 'jm:x', jobMaster, { methods: ['updateTaskExecutionStates'] });
    const mailbox = new MainThreadExecutor('TaskExecutor te-1');
    const jobs = new JobTable({ mailbox, connect: () => connectGateway<JobMasterGateway>(te, 'jm:x', { gateway: 'JobMasterGateway', timeoutMs: 10_000 }) as unknown as JobMasterGateway, log: () => {} });
    const jobId = JobID.generate();
    mailbox.execute(() => jobs.connect(jobId, 'x'));
    const state = (s: TaskExecutionStateWire['state']): TaskExecutionStateWire => ({ jobId, executionAttemptId: ExecutionAttemptID.generate(), state: s, resourceId: RESOURCE });
    /** Serves `submit` (running `body` in the mailbox) on 'te', calls it from the JobMaster's end, and lets what it sent arrive; `sent` then holds only what the call made the TaskExecutor send. */
    const callSubmit = async (body: () => Promise<void>): Promise<void> => {
      serveGateway(te, 'te', { submit: async () => { await body(); return 'accepted'; } }, { mailbox, methods: ['submit'] });
      const caller = connectGateway<{ submit(): Promise<string> }>(jm, 'te', { gateway: 'TestGateway', timeoutMs: 10_000 });
      await settle();
      sent.length = 0;
      expect(await caller.submit()).to.equal('accepted');
      await settle();
    };
    return { sent, heard, mailbox, jobs, state, callSubmit };
  }

  it("flushWithAnswers: a turn's states cross in the same transport message as the answer of the call that made them", async () => {
    const { sent, heard, mailbox, jobs, state, callSubmit } = setup();
    await callSubmit(async () => {
      jobs.report(state('initializing'));
      jobs.flushWithAnswers();
      // Told a microtask later (a slot's idle thread took it): still in the same message.
      await Promise.resolve();
      mailbox.runNow(() => jobs.report(state('running')));
    });
    expect(heard.map((states) => states.map((s) => s.state))).to.deep.equal([['initializing', 'running']]);
    expect(sent, 'the answer and the states as one message').to.have.length(1);
  });

  it('without it, the states of a turn go out on their own after the poll phase (setImmediate), still as one call', async () => {
    const { sent, heard, jobs, state, callSubmit } = setup();
    await callSubmit(async () => {
      jobs.report(state('initializing'));
      jobs.report(state('running'));
    });
    await settle();
    expect(heard.map((states) => states.map((s) => s.state))).to.deep.equal([['initializing', 'running']]);
    expect(sent, 'the answer, then the states').to.have.length(2);
  });
});
