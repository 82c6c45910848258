/**
 * The calling side of a gateway's control methods (registration, heartbeats, slot requests and
 * offers — docs/runtime.md, Gateways): comlink's `wrap` over a Link channel, with what comlink
 * leaves out taken from the CallTable (CallTable.ts) — a deadline per call (RpcTimeoutError naming
 * gateway, method and timeout), EndpointClosedError at once when the link closes, IllegalArgumentError
 * for arguments that cannot be sent. Errors keep their class through errorTransfer.ts, which
 * replaces comlink's 'throw' handler.
 *
 * comlink keeps a call's resolver in a map of its own until an answer with the call's id comes, and
 * its promises never reject. A call given up (deadline, unsendable arguments) would leave its
 * resolver there for good, so calls go through a *generation*: one `wrap` over an Endpoint of ours
 * that forwards to the channel. A generation with a call given up takes no new call (the next one
 * opens a fresh generation); once none of its calls still waits, it is retired — its endpoint goes
 * deaf and mute, and `releaseProxy` empties comlink's map. So a given-up resolver lives at most as
 * long as the calls made beside it, `maxWaitMs` at the very most, and every one goes at close.
 *
 * A proxy comlink finds collected sends RELEASE, which makes comlink's `expose` stop listening for
 * every caller of the channel. Here each generation holds its root proxy (and its method proxies)
 * for as long as it serves; a retired one posts nothing; and the serving side does not let a RELEASE
 * stop it anyway (serveControl.ts).
 */
import { releaseProxy, wrap, type Endpoint, type Remote } from 'comlink';
import { CallTable, type CallTableOptions, type PendingCall } from './CallTable.js';
import './errorTransfer.js';
import type { Channel, ChannelListener, ChannelMessageEvent, Link } from './Link.js';

type RemoteMethod = (...args: unknown[]) => Promise<unknown>;
type ComlinkListener = Parameters<Endpoint['addEventListener']>[1];

/** One `wrap` over the channel: comlink's resolvers of the calls made through it. */
class Generation {
  readonly remote: Remote<Record<string, RemoteMethod>>;
  /** comlink's proxy per method, made once (each property read makes one, each registered for finalization). */
  readonly methods = new Map<string, RemoteMethod>();
  /** Calls of this generation that still wait in the CallTable. */
  live = 0;
  /** A call of it was given up while comlink still held its resolver: it takes no new calls. */
  stale = false;
  retired = false;
  #listener: ComlinkListener | undefined;

  constructor(channel: Channel, onPost: (message: unknown) => void) {
    const endpoint: Endpoint = {
      postMessage: (message: unknown) => {
        if (this.retired) return;
        onPost(message);
        channel.postMessage(message);
      },
      addEventListener: (type, listener) => {
        if (type === 'message') this.#listener = listener;
      },
      removeEventListener: (type, listener) => {
        if (type === 'message' && this.#listener === listener) this.#listener = undefined;
      },
    };
    this.remote = wrap<Record<string, RemoteMethod>>(endpoint);
  }

  method(name: string): RemoteMethod {
    let method = this.methods.get(name);
    if (method === undefined) this.methods.set(name, (method = this.remote[name] as RemoteMethod));
    return method;
  }

  deliver(event: ChannelMessageEvent): void {
    const listener = this.#listener;
    if (listener === undefined) return;
    if (typeof listener === 'function') listener(event as MessageEvent);
    else listener.handleEvent(event as MessageEvent);
  }

  /** Deaf and mute, and comlink's map emptied: the resolvers of calls given up are gone. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.#listener = undefined;
    this.methods.clear();
    this.remote[releaseProxy]();
  }
}

export class ControlCaller {
  readonly channel: Channel;
  readonly #calls: CallTable;
  readonly #generations = new Set<Generation>();
  #current: Generation | undefined;
  #nextKey = 1;
  /** The call whose message comlink is posting right now (it posts inside the proxy call). */
  #posting: PendingCall | undefined;
  readonly #onPost = (message: unknown): void => {
    if (this.#posting !== undefined) this.#posting.message = message;
  };

  constructor(link: Link, channel: Channel, options: CallTableOptions) {
    this.channel = channel;
    this.#calls = new CallTable(link, channel, options);
    this.#calls.onClosed = () => {
      for (const generation of this.#generations) generation.retire();
      this.#generations.clear();
      this.#current = undefined;
    };
    const listener: ChannelListener = (event) => {
      for (const generation of this.#generations) generation.deliver(event);
    };
    channel.addEventListener('message', listener);
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.#calls.pendingCalls;
  }

  /** `wrap`s in use: 1 when calls flow, 2 for a while after a call was given up, 0 once closed. */
  get generations(): number {
    return this.#generations.size;
  }

  call(method: string, args: unknown[]): Promise<unknown> {
    if (this.channel.closed) return Promise.reject(this.#calls.closedError(method));
    let generation = this.#current;
    if (generation === undefined || generation.stale) {
      generation = new Generation(this.channel, this.#onPost);
      this.#generations.add(generation);
      this.#current = generation;
    }
    const remote = generation.method(method);
    return new Promise<unknown>((resolve, reject) => {
      const g = generation;
      // The CallTable rejects through here only when it gives the call up; comlink may still hold its resolver.
      const call = this.#calls.add(this.#nextKey++, method, resolve, (error: unknown) => {
        g.live--;
        g.stale = true;
        reject(error);
        this.#retireIfDone(g);
      });
      g.live++;
      this.#posting = call;
      let answer: Promise<unknown>;
      try {
        answer = remote(...args);
      } catch (error) {
        // comlink may have entered the resolver before its post threw: treat it as given up.
        if (this.#calls.take(call.key) !== undefined) g.live--;
        g.stale = true;
        reject(error);
        this.#retireIfDone(g);
        return;
      } finally {
        this.#posting = undefined;
      }
      answer.then(
        (value) => {
          if (this.#calls.take(call.key) === undefined) return;
          g.live--;
          resolve(value);
          this.#retireIfDone(g);
        },
        (error: unknown) => {
          if (this.#calls.take(call.key) === undefined) return;
          g.live--;
          reject(error);
          this.#retireIfDone(g);
        },
      );
    });
  }

  #retireIfDone(generation: Generation): void {
    if (!generation.stale || generation.live > 0) return;
    generation.retire();
    this.#generations.delete(generation);
    if (this.#current === generation) this.#current = undefined;
  }
}
