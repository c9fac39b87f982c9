/**
 * Named entries every instance of a cluster shares (the servers `add_server` added): a name is taken
 * once cluster-wide, and an instance that joins later reads what is there.
 */
export interface SharedEntries {
  /** Adds `name` → `value` unless the name is taken (on any instance); true when added. */
  add(name: string, value: string): Promise<boolean>;
  /** Removes `name`; true when it was there. */
  remove(name: string): Promise<boolean>;
  all(): Promise<Map<string, string>>;
}
