import { expect } from 'chai';
import { memoryTransportPair } from '../../lib/rpc/memoryTransport.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe('memoryTransportPair', () => {
  it('delivers a clone of what the other end sent, in order, on a later turn', async () => {
    const [a, b] = memoryTransportPair();
    const received: unknown[] = [];
    b.onMessage((message) => received.push(message));
    const sent = { n: 1, at: new Date(0), tags: new Set(['x']) };
    a.send(sent);
    a.send('second');
    expect(received, 'nothing before a turn').to.deep.equal([]);
    expect(b.waiting).to.equal(2);
    await turn();
    expect(received).to.deep.equal([sent, 'second']);
    expect(received[0]).to.not.equal(sent);
    expect(b.waiting).to.equal(0);
  });

  it('throws in send for a message that cannot be cloned, and sends nothing', async () => {
    const [a, b] = memoryTransportPair();
    expect(() => a.send({ callback: () => 1 })).to.throw(/could not be cloned/);
    expect(b.waiting).to.equal(0);
  });

  it('afterIncoming delivers what has arrived before calling back', () => {
    const [a, b] = memoryTransportPair();
    const received: unknown[] = [];
    b.onMessage((message) => received.push(message));
    a.send('waiting');
    let seen: unknown[] = [];
    b.afterIncoming(() => (seen = [...received]));
    expect(seen).to.deep.equal(['waiting']);
  });

  it('afterIncoming asked during a delivery waits until that delivery is over', async () => {
    const [a, b] = memoryTransportPair();
    const order: string[] = [];
    b.onMessage((message) => {
      order.push(`start ${String(message)}`);
      if (message === 'first') b.afterIncoming(() => order.push('callback'));
      order.push(`end ${String(message)}`);
    });
    a.send('first');
    a.send('second');
    await turn();
    expect(order).to.deep.equal(['start first', 'end first', 'start second', 'end second', 'callback']);
  });

  it('tells the other end once it has received what was sent before the close, never the closing end', async () => {
    const [a, b] = memoryTransportPair();
    const events: string[] = [];
    b.onMessage((message) => events.push(`message ${String(message)}`));
    b.onClose((reason) => events.push(`closed: ${reason}`));
    a.onClose(() => events.push('a told'));
    a.send('last words');
    a.close();
    a.send('after close');
    await turn();
    expect(events).to.deep.equal(['message last words', 'closed: the peer closed the memory transport']);
    expect(a.closed).to.equal(true);
    expect(b.closed).to.equal(true);
  });
});
