/**
 * The Stately relay on its own: what a page that connects late receives first.
 */
import { expect } from 'chai';
import { WebSocket } from 'ws';
import { StatelyRelay } from '../lib/inspectRelay.js';
import { eventually } from './support/eventually.js';

describe('StatelyRelay', function () {
  this.timeout(20_000);

  it("gives a late page the announcements of live actors that left its 10,000-event history, not those of ended ones, then the history", async () => {
    const port = 20_000 + Math.floor(Math.random() * 20_000);
    const relay = await StatelyRelay.start({ port });
    let client: WebSocket | null = null;
    try {
      relay.publish({ type: '@xstate.actor', sessionId: 'x:long', name: 'slotManager' });
      relay.publish({ type: '@xstate.actor', sessionId: 'x:short', name: 'jobStatus' });
      relay.publish({ type: '@xstate.snapshot', sessionId: 'x:short', snapshot: { status: 'done' } });
      for (let i = 0; i < 10_000; i++) relay.publish({ type: '@xstate.event', sessionId: 'x:long', n: i });
      const received: Array<{ type: string; sessionId: string; n?: number }> = [];
      client = new WebSocket(`ws://localhost:${port}`);
      client.on('message', (data) => received.push(JSON.parse(data.toString())));
      await new Promise((resolve, reject) => client!.once('open', resolve).once('error', reject));
      await eventually(() => received.length === 10_001, 'the late page to receive what the relay kept');
      expect(received[0]).to.deep.include({ type: '@xstate.actor', sessionId: 'x:long' });
      expect(received.filter((e) => e.type === '@xstate.actor')).to.have.length(1);
      expect(received[1]).to.deep.include({ n: 0 });
      expect(received.at(-1)).to.deep.include({ n: 9_999 });
    } finally {
      const closed = client && new Promise((resolve) => client!.once('close', resolve));
      await relay.close();
      await closed;
    }
  });
});
