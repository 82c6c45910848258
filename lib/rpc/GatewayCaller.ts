/**
 * The calling side of one gateway on one Link channel, in our own frames (protocol.ts: a CallFrame
 * answered by a ResultFrame or an ErrorFrame): what the hot path takes. connectGateway puts a typed
 * proxy in front of it. One listener for every answer of this gateway, a numeric id per call; the
 * deadlines, the close and the failed sends are the CallTable's (CallTable.ts).
 */
import { CallTable, type CallTableOptions } from './CallTable.js';
import { deserializeThrown } from './errorTransfer.js';
import type { Channel, ChannelMessageEvent, Link } from './Link.js';
import type { CallFrame, GatewayFrame } from './protocol.js';

export type GatewayCallerOptions = CallTableOptions;

/** Call ids per channel: two gateways on one channel never take each other's answers. */
const channelIds = new WeakMap<Channel, { next: number }>();

export class GatewayCaller {
  readonly channel: Channel;
  readonly #calls: CallTable;
  readonly #ids: { next: number };

  constructor(link: Link, channel: Channel, options: GatewayCallerOptions) {
    this.channel = channel;
    this.#calls = new CallTable(link, channel, options);
    let ids = channelIds.get(channel);
    if (ids === undefined) channelIds.set(channel, (ids = { next: 1 }));
    this.#ids = ids;
    channel.addEventListener('message', this.#onMessage);
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.#calls.pendingCalls;
  }

  call(method: string, args: unknown[]): Promise<unknown> {
    if (this.channel.closed) return Promise.reject(this.#calls.closedError(method));
    return new Promise<unknown>((resolve, reject) => {
      const frame: CallFrame = { kind: 'call', id: this.#ids.next++, method, args };
      this.#calls.add(frame.id, method, resolve, reject).message = frame;
      this.channel.postMessage(frame);
    });
  }

  readonly #onMessage = (event: ChannelMessageEvent): void => {
    const frame = event.data as GatewayFrame | null;
    const kind = frame?.kind;
    if (kind !== 'result' && kind !== 'error') return;
    // Answers to other gateways of this channel, and late ones to calls given up, find no entry.
    const call = this.#calls.take(frame!.id);
    if (call === undefined) return;
    if (frame!.kind === 'result') call.resolve(frame!.value);
    else call.reject(deserializeThrown(frame!.thrown));
  };
}
