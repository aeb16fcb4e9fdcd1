import { chmodSync, lstatSync, mkdirSync, readdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where a spool keeps its segments (issue 23): a directory private to the service's user (0700),
 * one per instance, so that nobody else on the host can read the spooled usage events (tenants'
 * request metadata) or plant segments that would be replayed as billable usage, and so that a
 * process replays only its own instance's segments, never another deployment's sharing the base
 * directory.
 */

/** The instance's directory name: its name when that is a plain file name, else a readable stand-in. */
export function instanceDirName(instance: string): string {
  const name = instance.replace(/[^A-Za-z0-9._-]/g, '_');
  return name === '' || name === '.' || name === '..' ? 'default' : name;
}

/**
 * Creates `dir` (and missing parents) as 0700 when missing; an existing one must be a real directory
 * (not a symlink) owned by this process's user: then group and other permissions are taken away.
 * Throws with the reason otherwise.
 */
export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory()) throw new Error(`spool directory ${dir} is not a directory (a symlink?)`);
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) {
    throw new Error(`spool directory ${dir} belongs to uid ${st.uid}, not this process's ${uid}`);
  }
  if ((st.mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** A segment name of the layout before instance directories (`usage-<pid>-<start>-<seq>.spool`). */
const LEGACY_SEGMENT = /^usage-(\d+)-\d+-\d+\.spool$/;

/**
 * Moves segments of the old layout (written straight into the base directory by a process that has
 * stopped, and owned by this user) into `into`, named by `rename`, so an upgrade loses no spooled
 * usage. Returns the names given.
 */
export function adoptLegacySegments(
  base: string,
  into: string,
  rename: () => string,
  alive: (pid: number) => boolean,
): string[] {
  let files: string[];
  try {
    files = readdirSync(base);
  } catch {
    return [];
  }
  const uid = process.getuid?.();
  const adopted: string[] = [];
  for (const f of files) {
    const m = LEGACY_SEGMENT.exec(f);
    if (!m || alive(Number(m[1]))) continue;
    try {
      const st = lstatSync(join(base, f));
      if (!st.isFile() || (uid !== undefined && st.uid !== uid)) continue;
      const name = rename();
      renameSync(join(base, f), join(into, name));
      adopted.push(name);
    } catch {
      // another process adopted it first, or it is gone
    }
  }
  return adopted;
}
