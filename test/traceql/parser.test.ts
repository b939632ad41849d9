/** TraceQL lexer/parser/planner: precedence, literals, positions of errors and the pushdown plan. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { TraceQLParseError, compileTraceQL, parseTraceQL } from '../../plugins/query-traceql/index.js';
import type { FieldExpr, SpansetExpr } from '../../plugins/query-traceql/index.js';
import type { Span } from '../../kernel/models.js';

const first = (q: string) => parseTraceQL(q).pipeline.stages[0] as SpansetExpr;
const fieldOf = (q: string) => {
  const f = first(q);
  if (f.kind !== 'filter' || !f.expr) throw new Error('not a filter');
  return f.expr;
};
const shape = (e: FieldExpr | SpansetExpr): unknown => {
  switch (e.kind) {
    case 'binary':
      return [e.op, shape(e.lhs), shape(e.rhs)];
    case 'spansetOp':
      return [e.op, shape(e.lhs), shape(e.rhs)];
    case 'unary':
      return [e.op, shape(e.expr)];
    case 'attribute':
      return `${e.scope}:${e.name}`;
    case 'intrinsic':
      return e.name;
    case 'static':
      return e.type === 'nil' ? 'nil' : e.value;
    case 'filter':
      return e.expr ? shape(e.expr) : '{}';
    default:
      return e.kind;
  }
};

test('field precedence: || < && < comparison < + < * < ^', () => {
  assert.equal(shape(fieldOf('{ .a = 1 || .b = 2 && .c = 3 }')), ['||', ['=', 'unscoped:a', 1], ['&&', ['=', 'unscoped:b', 2], ['=', 'unscoped:c', 3]]]);
  assert.equal(shape(fieldOf('{ span.x + 2 * 3 ^ 2 > 10 }')), ['>', ['+', 'span:x', ['*', 2, ['^', 3, 2]]], 10]);
  assert.equal(shape(fieldOf('{ !(status = error) }')), ['!', ['=', 'status', 'error']]);
  assert.equal(shape(fieldOf('{ span.x > -3 }')), ['>', 'span:x', -3]);
});

test('spanset precedence: || < && < structural, left associative', () => {
  assert.equal(shape(first('{ .a } > { .b } && { .c } || { .d }')), ['||', ['&&', ['>', 'unscoped:a', 'unscoped:b'], 'unscoped:c'], 'unscoped:d']);
  assert.equal(shape(first('{ } >> { } !~ { }')), ['!~', ['>>', '{}', '{}'], '{}']);
  assert.equal(shape(first('({ .a } | count() > 1) && { .b }')), ['&&', 'pipeline', 'unscoped:b']);
});

test('literals and names: durations, quoted attributes, intrinsics with scopes, enums', () => {
  assert.equal(shape(fieldOf('{ duration > 1h30m }')), ['>', 'duration', 5400e9]);
  assert.equal(shape(fieldOf('{ duration >= 1.5ms }')), ['>=', 'duration', 1.5e6]);
  assert.equal(shape(fieldOf('{ span."with space" = `raw\\n` }')), ['=', 'span:with space', 'raw\\n']);
  assert.equal(shape(fieldOf('{ resource.k8s.pod-name = "a\\"b" }')), ['=', 'resource:k8s.pod-name', 'a"b']);
  assert.equal(shape(fieldOf('{ span:kind = server && trace:rootService = "x" }')), ['&&', ['=', 'kind', 'server'], ['=', 'rootServiceName', 'x']]);
  assert.equal(shape(fieldOf('{ .x = nil || .y = 1.5e3 || .z = true }')), ['||', ['||', ['=', 'unscoped:x', 'nil'], ['=', 'unscoped:y', 1500]], ['=', 'unscoped:z', true]]);
});

test('pipelines: aggregates, select, by, coalesce', () => {
  const p = parseTraceQL('{ } | avg(duration) > 1s | select(span.a, resource.b) | by(resource.service.name) | coalesce() | count() + 1 >= 2').pipeline;
  assert.equal(p.stages.map((s) => s.kind), ['filter', 'scalarFilter', 'select', 'by', 'coalesce', 'scalarFilter']);
});

test('errors carry line and column', () => {
  const cases: [string, number, number, RegExp][] = [
    ['{ .a = }', 1, 8, /unexpected "}"/],
    ['{ .a = 1 }\n  && { .b = }', 2, 13, /unexpected "}"/],
    ['{ .a = 1 } | count()', 1, 21, /unexpected end of query/],
    ['{ .a =~ 5 }', 1, 6, /must be a string/],
    ['{ .a = 1 = 2 }', 1, 10, /cannot be chained/],
    ['{ .a } | foo()', 1, 10, /unexpected identifier "foo"/],
    ['{ span:bogus = 1 }', 1, 3, /unknown intrinsic/],
    ['{ .a = 1 } &> { }', 1, 12, /unexpected character "&"/],
    ['{ .a = "x }', 1, 8, /unterminated string/],
    ['', 1, 1, /unexpected end of query/],
  ];
  for (const [q, line, col, re] of cases) {
    try {
      parseTraceQL(q);
      assert.unreachable(q);
    } catch (e) {
      assert.instance(e, TraceQLParseError, q);
      const err = e as TraceQLParseError;
      assert.equal([err.pos.line, err.pos.col], [line, col], `${q}: ${err.message}`);
      assert.match(err.reason, re, q);
    }
  }
  assert.throws(() => compileTraceQL('{ name =~ "a(" }'), (e: unknown) => e instanceof TraceQLParseError && /invalid regex/.test(e.message));
});

test('planner: prefilters only what every match needs on one span', () => {
  const pf = (q: string) => {
    const { spanFilter, ...rest } = compileTraceQL(q).prefilter;
    return { ...rest, filter: spanFilter !== undefined };
  };
  assert.equal(pf('{ resource.service.name = "a" && span.x = 1 }'), { attributes: { 'service.name': 'a', x: '1' }, filter: true });
  assert.equal(pf('{ name = "GET" } > { resource.service.name = "b" && name = "c" }'), { attributes: { 'service.name': 'b', name: 'c' }, filter: true });
  // `||` pushes no store-level field, only the (exact) disjunction as a span filter.
  assert.equal(pf('{ resource.service.name = "a" } || { name = "x" }'), { filter: true });
  assert.equal(pf('{ resource.service.name = "a" || name = "x" }'), { filter: true });
  assert.equal(pf('{ resource.service.name = "a" } !> { name = "x" }'), { attributes: { name: 'x' }, filter: true });
  assert.equal(pf('{ name = "x" } | count() > 2'), { attributes: { name: 'x' }, filter: true });
  assert.equal(pf('{ status = error && duration > 1.5ms && duration <= 2s }'), { statuses: ['error'], minDurationNs: 1_500_001n, maxDurationNs: 2_000_000_000n, filter: true });
  assert.equal(pf('{ 100ms < duration }'), { minDurationNs: 100_000_001n, filter: true });
  assert.equal(pf('{ span.retry = true && span.ratio = 0.5 }'), { attributes: { retry: 'true', ratio: '0.5' }, filter: true });
  // Negations, comparisons other than `=` and event attributes: exact span filter only.
  assert.equal(pf('{ !(status = error) && span.code != 200 && event.x = "y" }'), { filter: true });
  // Trace-level intrinsics are not per-span: only the rest of the conjunction is pushed.
  assert.equal(pf('{ rootServiceName = "a" && status = ok }'), { statuses: ['ok'], filter: true });
  assert.equal(pf('{ traceDuration > 1s || status = ok }'), { filter: false });
  assert.equal(pf('{ }'), { filter: false });
  const f = compileTraceQL('{ rootServiceName = "a" && span.code >= 500 }').prefilter.spanFilter!;
  const s = (code: number) => ({ ...baseSpan, attributes: { code } });
  assert.ok(f(s(503)) && !f(s(200)));
});

const baseSpan: Span = {
  traceId: 'ab',
  spanId: 'cd',
  parentSpanId: '',
  name: 'n',
  kind: 'server',
  startTimeUnixNano: 0n,
  endTimeUnixNano: 1n,
  status: { code: 'unset' },
  attributes: {},
  resource: {},
  scope: { name: 'x' },
  events: [],
  links: [],
};

test.run();
