/**
 * Named entries kept cluster-wide, the same for every instance (the servers `add_server` added): a
 * name is taken once, within a bound on how many there are; an instance that joins later reads what is
 * there. Each entry carries the id of its addition, so a name removed and added again is told apart
 * from the one before.
 */
export interface NamedEntry {
  readonly id: string;
  readonly value: string;
}

export interface NamedEntries {
  /** Adds `name` unless the name is taken (on any instance) or `max` entries are there. */
  add(name: string, entry: NamedEntry, max: number): Promise<'added' | 'taken' | 'full'>;
  /** Removes `name` when it is still the addition `id`; true when removed. */
  remove(name: string, id: string): Promise<boolean>;
  all(): Promise<Map<string, NamedEntry>>;
}
