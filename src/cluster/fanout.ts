/**
 * Messages every instance of a cluster hears: the events that fan out (a backend's list changed, a
 * resource was updated, a backend connection came or went, a server was added). Each instance delivers
 * what it hears to its own listeners, so a listener hears each event once, whichever instance it is
 * connected to and whichever instance saw the event.
 */
export type FanoutMessage = Readonly<Record<string, unknown>>;

/**
 * Observations of one thing by several instances are one event: the first instance to publish under
 * `key` owns it for `windowMs`; the same key published by another instance meanwhile is dropped, while
 * the owner's own next publication (a second change it saw) goes out and renews the window.
 */
export interface Once {
  readonly key: string;
  readonly windowMs: number;
}

export interface Fanout {
  /** Sends `message` to every instance, this one included; true when it went out, false when `once` dropped it. */
  publish(message: FanoutMessage, once?: Once): Promise<boolean>;
  /** Hears every instance's messages from now on; resolves once listening, to the function that stops it. */
  listen(listener: (message: FanoutMessage) => void): Promise<() => Promise<void>>;
}
