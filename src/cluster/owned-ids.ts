/**
 * Ids that name the instance owning them (task and legacy session ids): `<instanceId>~<rest>`, so a
 * balancer or another instance routes them by the id alone. Nothing here needs Node.
 */

/** Between the instance id and the rest of an id that names the instance owning it. */
const OWNED_BY = '~';

/** An id naming `instanceId` as its owner: `<instanceId>~<rest>`. */
export function ownedId(instanceId: string, rest: string): string {
  return `${instanceId}${OWNED_BY}${rest}`;
}

/** The instance an id made by `ownedId` names, or undefined for an id that names none. */
export function ownerOfId(id: string): string | undefined {
  const i = id.lastIndexOf(OWNED_BY);
  return i > 0 ? id.slice(0, i) : undefined;
}
