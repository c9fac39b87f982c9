/**
 * State that must live on one instance (the proxy tools' scopes of a principal: their events, logs,
 * workspaces, pending client actions) has a home: the instance that holds it, claimed by the first
 * instance that needs it and kept while that instance lives and takes work. Requests that use the
 * state are forwarded to its home. A home that died or drains is replaced by the next claimer (what it
 * held is lost with it; tasks outlive it in the task store).
 */
export interface Homes {
  /**
   * The live, not draining instance that is `key`'s home; when there is none, `claimant` becomes it
   * (this instance, or one that takes new work when this one drains). Undefined without a claimant.
   */
  homeOf(key: string, claimant: string | undefined): Promise<string | undefined>;
}
