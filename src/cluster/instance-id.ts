/**
 * The gateway instance's id, sealed into every requestState. It must survive a restart, so that a
 * retry for a call lost in the restart is told `request_state_gone` (the call is gone) rather than
 * `request_state_instance` (another instance holds it). In order: the configured id; else an id
 * generated once and kept in `<stateDir>/instance-id`; else, in a cluster, a new id for this process
 * (the old one's heartbeat lapses, so its calls are known gone everywhere); else the fixed id of a lone
 * instance.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ulid } from 'ulid';

/** Between the instance id and the rest of an id that names the instance owning it (task and legacy session ids). */
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

/** The id of an instance that is configured with neither `instanceId` nor `stateDir`. */
export const SINGLE_INSTANCE_ID = 'single';

const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

export async function resolveInstanceId(options: { configured?: string | undefined; stateDir?: string | undefined; cluster?: boolean }): Promise<string> {
  if (options.configured !== undefined) return options.configured;
  if (options.stateDir === undefined) return options.cluster ? ulid() : SINGLE_INSTANCE_ID;
  const file = join(options.stateDir, 'instance-id');
  try {
    const kept = (await readFile(file, 'utf8')).trim();
    if (ID_PATTERN.test(kept)) return kept;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const id = ulid();
  await mkdir(options.stateDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${id}\n`, { mode: 0o600 });
  await rename(tmp, file);
  return id;
}
