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
