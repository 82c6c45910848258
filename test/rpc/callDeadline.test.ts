import { expect } from 'chai';
import { judgeCallDeadline } from '../../lib/rpc/callDeadline.js';

/** A call sent at 1 s, a 5 s silence limit, a 15 s bound. */
const judge = (now: number, lastHeardAt = -Infinity) =>
  judgeCallDeadline({ sentAt: 1_000, lastHeardAt, now, timeoutMs: 5_000, maxWaitMs: 15_000 });

describe('judgeCallDeadline', () => {
  it('waits timeoutMs from when the frame left while the peer sends nothing, then calls it silent', () => {
    expect(judge(5_999)).to.deep.equal({ kind: 'wait', until: 6_000 });
    expect(judge(6_000)).to.deep.equal({ kind: 'silent', heardSinceSent: false });
  });

  it('counts only frames heard after the call left', () => {
    expect(judge(6_000, 1_000)).to.deep.equal({ kind: 'silent', heardSinceSent: false });
    expect(judge(6_000, 500)).to.deep.equal({ kind: 'silent', heardSinceSent: false });
  });

  it('restarts the silence from the last frame heard since', () => {
    expect(judge(6_000, 4_000)).to.deep.equal({ kind: 'wait', until: 9_000 });
    expect(judge(9_000, 4_000)).to.deep.equal({ kind: 'silent', heardSinceSent: true });
  });

  it('gives up at maxWaitMs after the frame left however recently the peer spoke', () => {
    expect(judge(15_000, 14_900)).to.deep.equal({ kind: 'wait', until: 16_000 });
    expect(judge(16_000, 15_999)).to.deep.equal({ kind: 'max-wait' });
  });
});
