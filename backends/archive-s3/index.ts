/**
 * The `s3` archive source: an archive is an S3 (or MinIO, or any S3-speaking server) bucket and
 * key prefix laid out as OPERATIONS.md "Archive layout", reached with the `minio` client.
 * Config: endpoint (URL; default https://s3.amazonaws.com), bucket (required), prefix ("" = keys
 * start at `YYYY/`), accessKey, secretKey, region (default us-east-1). Path-style addressing is
 * used so that any endpoint works without wildcard DNS.
 */
import { Client } from 'minio';
import type { Readable } from 'node:stream';
import type { ArchiveConfig } from '../../kernel/config.js';
import type { Archive, ArchiveObject } from '../../kernel/extension-points.js';
import { definePlugin } from '../../kernel/plugin.js';
import { OBJECT_SUFFIX, hourPartition, normalizePrefix } from '../archive-fs/layout.js';

export class S3Archive implements Archive {
  private readonly prefix: string;
  constructor(
    readonly name: string,
    private readonly client: Client,
    private readonly bucket: string,
    prefix: string | undefined,
  ) {
    const p = normalizePrefix(prefix);
    this.prefix = p === '' ? '' : p + '/';
  }

  async *listHour(hourStartMs: number): AsyncIterable<ArchiveObject> {
    const part = hourPartition(hourStartMs);
    const found: ArchiveObject[] = [];
    const stream = this.client.listObjectsV2(this.bucket, this.prefix + part, true);
    for await (const o of stream as AsyncIterable<{ name?: string; size?: number }>) {
      if (!o.name || !o.name.endsWith(OBJECT_SUFFIX)) continue;
      // Only objects directly in the hour partition belong to it.
      const rel = o.name.slice(this.prefix.length);
      if (rel.slice(part.length).includes('/')) continue;
      found.push({ key: rel, size: o.size ?? 0 });
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    yield* found;
  }

  read(key: string): Promise<Readable> {
    return this.client.getObject(this.bucket, this.prefix + key);
  }

  async write(key: string, body: Buffer): Promise<void> {
    await this.client.putObject(this.bucket, this.prefix + key, body, body.length, {
      'Content-Type': 'application/x-ndjson',
    });
  }
}

export function openS3Archive(cfg: ArchiveConfig): S3Archive {
  if (!cfg.bucket) throw new Error(`archives: "${cfg.name}" (type s3) needs a bucket`);
  const url = new URL(cfg.endpoint ?? 'https://s3.amazonaws.com');
  const useSSL = url.protocol === 'https:';
  const client = new Client({
    endPoint: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : useSSL ? 443 : 80,
    useSSL,
    accessKey: cfg.accessKey ?? '',
    secretKey: cfg.secretKey ?? '',
    region: cfg.region ?? 'us-east-1',
    pathStyle: true,
  });
  return new S3Archive(cfg.name, client, cfg.bucket, cfg.prefix);
}

export default definePlugin({
  name: 'archive-s3',
  description: 'S3 / MinIO archive source (bucket + prefix in the archive layout).',
  register(ctx) {
    ctx.extensions.archiveSource({ type: 's3', open: (cfg) => openS3Archive(cfg) });
  },
});
