import { expect } from 'chai';
import { expose, wrap, type Endpoint } from 'comlink';
import { SlotAllocationError } from '../../lib/core/errors.js';
import '../../lib/rpc/errorTransfer.js';
import { Link } from '../../lib/rpc/Link.js';
import { memoryTransportPair } from '../../lib/rpc/memoryTransport.js';

interface Counter {
  add(n: number): Promise<number>;
  refuse(): Promise<void>;
}

describe('comlink over a Link channel (for an object that is not a gateway)', () => {
  let links: Link[] = [];
  afterEach(() => {
    for (const link of links) link.close('test over');
    links = [];
  });

  it(
    "exposes an object with comlink's own expose and wrap; " + 'a thrown SlotwiseError keeps its class (errorTransfer)',
    async () => {
      const [a, b] = memoryTransportPair();
      const caller = new Link('caller', a);
      const server = new Link('server', b);
      links.push(caller, server);
      let total = 0;
      expose(
        {
          add: (n: number) => (total += n),
          refuse: () => {
            throw new SlotAllocationError('index-taken', 'slot 1 is taken', { index: 1 });
          },
        },
        server.channel('counter') as unknown as Endpoint,
      );
      const counter = wrap<Counter>(caller.channel('counter') as unknown as Endpoint);
      expect(await counter.add(2)).to.equal(2);
      expect(await counter.add(3)).to.equal(5);
      const error = await counter.refuse().catch((e: unknown) => e);
      expect(error).to.be.instanceOf(SlotAllocationError);
      expect((error as SlotAllocationError).details).to.deep.equal({ index: 1 });
    },
  );
});
