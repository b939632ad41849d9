/**
 * Index templates and mappings. Every mapping is `dynamic: false`: label names become keys of a
 * `flattened` field instead of mapped fields, so no tenant can cause a mapping explosion, and
 * payloads live in `_source` only (`enabled: false`), never indexed.
 */
import type { estypes } from '@elastic/elasticsearch';
import type { DailyKind, Es } from './es.js';

type Mapping = estypes.MappingTypeMapping;

const keyword = { type: 'keyword' } as const;
const long = { type: 'long' } as const;
const opaque = { type: 'object', enabled: false } as const;
/** Label values longer than this are kept in _source but not indexed (Lucene's term limit is 32 KiB). */
const labels = { type: 'flattened', ignore_above: 8191 } as const;

export const MAPPINGS: Record<DailyKind, Mapping> = {
  // One document per (series, appended batch, day): the samples as raw float64 bytes.
  samples: {
    dynamic: false,
    properties: { sid: keyword, mint: long, maxt: long, wo: long, p: opaque },
  },
  // One document per (series, hour): the series index. `lk` is the canonical label set.
  series: {
    dynamic: false,
    properties: { sid: keyword, lk: keyword, labels: { type: 'flattened' }, names: keyword, hour: long },
  },
  logs: {
    dynamic: false,
    properties: {
      ts: long,
      seq: long,
      labels,
      // Tokens only (no frequencies/positions): used as a substring prefilter.
      message: { type: 'text', analyzer: 'lookout_message', index_options: 'docs', norms: false },
      facets: opaque,
    },
  },
  events: {
    dynamic: false,
    properties: { ts: long, seq: long, id: keyword, labels, p: opaque },
  },
  spans: {
    dynamic: false,
    properties: { tid: keyword, sid: keyword, start: long, end: long, labels, kv: { type: 'keyword', ignore_above: 8191 }, status: keyword, dur: long, span: opaque },
  },
};

/**
 * The standard tokenizer (lowercased) with long tokens: the substring prefilter relies on a run
 * of letters/digits never being split, which holds for words up to this length.
 */
const MESSAGE_ANALYSIS: estypes.IndicesIndexSettingsAnalysis = {
  analyzer: { lookout_message: { type: 'standard', max_token_length: 4096 } },
};

const STATE_MAPPING: Mapping = {
  dynamic: false,
  properties: { value: long, collections: opaque },
};

const METADATA_MAPPING: Mapping = {
  dynamic: false,
  properties: { metric: keyword, key: keyword, type: keyword, wo: long },
};

function indexSettings(es: Es, shards: number): estypes.IndicesIndexSettings {
  const s: estypes.IndicesIndexSettings = {
    number_of_shards: shards,
    refresh_interval: es.settings.refreshInterval,
    // Acknowledged means fsynced: the translog is synced before every write request returns.
    'translog.durability': 'request',
  };
  if (es.settings.replicas !== undefined) s.number_of_replicas = es.settings.replicas;
  return s;
}

/** Installs (or updates) the templates and creates the non-daily indices; idempotent. */
export async function installTemplates(es: Es): Promise<void> {
  await Promise.all(
    (Object.keys(MAPPINGS) as DailyKind[]).map((kind) =>
      es.call(() =>
        es.client.indices.putIndexTemplate({
          name: `${es.prefix}-${kind}`,
          index_patterns: [es.pattern(kind)],
          // Above the built-in stack templates (priority 100) so ours always applies.
          priority: 500,
          template: {
            settings: { ...indexSettings(es, es.settings.shards), ...(kind === 'logs' ? { analysis: MESSAGE_ANALYSIS } : {}) },
            mappings: MAPPINGS[kind],
          },
          _meta: { managed_by: 'lookout' },
        }),
      ),
    ),
  );
  for (const [index, mappings] of [
    [es.stateIndex, STATE_MAPPING],
    [es.metadataIndex, METADATA_MAPPING],
  ] as const) {
    const res = (await es.call(() =>
      es.client.indices.create(
        { index, settings: indexSettings(es, 1), mappings, wait_for_active_shards: es.settings.waitForActiveShards as estypes.WaitForActiveShards },
        { ignore: [400] },
      ),
    )) as { error?: { type?: string; reason?: string } };
    // Another process (or an earlier start) created it: fine. Anything else is a real error.
    if (res.error && res.error.type !== 'resource_already_exists_exception') {
      throw new Error(`creating index ${index} failed: ${res.error.type}: ${res.error.reason ?? ''}`);
    }
  }
}

/** Deletes every index and template under the prefix (tests and `lookout` maintenance only). */
export async function deleteAll(es: Es): Promise<void> {
  // Wildcard deletes are refused by default (action.destructive_requires_name): resolve names first.
  const res = await es.call(() => es.client.indices.get({ index: `${es.prefix}-*`, expand_wildcards: 'all' }, { ignore: [404] }));
  const names = Object.keys(res ?? {}).filter((n) => n.startsWith(`${es.prefix}-`));
  for (let i = 0; i < names.length; i += 50) {
    const batch = names.slice(i, i + 50).join(',');
    await es.call(() => es.client.indices.delete({ index: batch }, { ignore: [404] }));
  }
  for (const kind of Object.keys(MAPPINGS)) {
    await es.call(() => es.client.indices.deleteIndexTemplate({ name: `${es.prefix}-${kind}` }, { ignore: [404] }));
  }
}
